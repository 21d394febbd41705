/**
 * What a wheel needs: the `Requires-Dist` lines of its `*.dist-info/METADATA`, with their
 * environment markers evaluated for Pyodide (so `colorama; sys_platform == "win32"` and extras
 * are left out). Reading the zip is the only I/O-shaped part; it works on bytes in memory.
 */
import { readAtMost } from "../_util/bytes.ts";
import { compareVersions, normalizeName, type PyodidePlatform } from "./wheels.ts";

/** The largest METADATA read (real ones are a few KiB; more is refused, not inflated). */
export const MAX_METADATA_BYTES = 1024 * 1024;

/** An entry of a zip's central directory. */
interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  localHeader: number;
}

/** The entries of a zip's central directory, or null when it has none that reads as one. */
function zipEntries(zip: Uint8Array): ZipEntry[] | null {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  // The end-of-central-directory record: signature 0x06054b50, within the last 64 KiB + 22.
  let end = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 65_557); i--) {
    if (view.getUint32(i, true) === 0x06054b50) {
      end = i;
      break;
    }
  }
  if (end < 0) return null;
  const count = view.getUint16(end + 10, true);
  let at = view.getUint32(end + 16, true);
  const decoder = new TextDecoder();
  const entries: ZipEntry[] = [];
  for (let n = 0; n < count && at + 46 <= zip.length; n++) {
    if (view.getUint32(at, true) !== 0x02014b50) return null;
    const nameLength = view.getUint16(at + 28, true);
    entries.push({
      name: decoder.decode(zip.subarray(at + 46, at + 46 + nameLength)),
      method: view.getUint16(at + 10, true),
      compressedSize: view.getUint32(at + 20, true),
      localHeader: view.getUint32(at + 42, true),
    });
    at += 46 + nameLength + view.getUint16(at + 30, true) + view.getUint16(at + 32, true);
  }
  return entries;
}

/**
 * The text of the wheel's `*.dist-info/METADATA`, or null when it has none. Throws when it is
 * larger than `MAX_METADATA_BYTES`, whatever its header claims, and when the wheel's dist-info
 * folders are not one, named for `distribution` (normalized) when that is given: Pyodide's
 * installer refuses such a wheel inside the sandbox, which read as the sandbox crashing.
 */
export async function readWheelMetadata(
  zip: Uint8Array,
  distribution?: string,
): Promise<string | null> {
  const entries = zipEntries(zip);
  if (entries === null) return null;
  if (distribution !== undefined) {
    const folders = new Set(
      entries.flatMap((e) => /^([^/]+)\.dist-info\//.exec(e.name)?.[1] ?? []),
    );
    const named = [...folders].map((folder) => normalizeName(folder.replace(/-[^-]*$/, "")));
    if (named.length !== 1 || named[0] !== distribution) {
      throw new Error(
        named.length === 0
          ? "it has no .dist-info folder"
          : `its .dist-info folders name ${named.join(", ")}, not ${distribution}`,
      );
    }
  }
  const entry = entries.find((e) => /^[^/]+\.dist-info\/METADATA$/.test(e.name));
  if (!entry) return null;
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const dataStart = entry.localHeader + 30 + view.getUint16(entry.localHeader + 26, true) +
    view.getUint16(entry.localHeader + 28, true);
  const data = zip.slice(dataStart, dataStart + entry.compressedSize);
  const tooLarge = () => new Error(`its METADATA is larger than ${MAX_METADATA_BYTES} bytes`);
  const decoder = new TextDecoder();
  if (entry.method === 0) {
    if (data.length > MAX_METADATA_BYTES) throw tooLarge();
    return decoder.decode(data);
  }
  if (entry.method !== 8) return null;
  const inflated = new Blob([data]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
  const text = await readAtMost(inflated, MAX_METADATA_BYTES);
  if (text === null) throw tooLarge();
  return decoder.decode(text);
}

/** The names of the distributions a METADATA text requires in this Pyodide. */
export function requiredNames(metadata: string, runtime: PyodidePlatform): string[] {
  const names: string[] = [];
  // Headers end at the first blank line (the description follows).
  for (const line of metadata.split(/\r?\n\r?\n/)[0]!.split(/\r?\n/)) {
    const requirement = requiresDist(line);
    if (!requirement) continue;
    const { name, marker } = requirement;
    if (marker !== undefined && !markerHolds(marker, markerEnvironment(runtime))) continue;
    if (!names.includes(name)) names.push(name);
  }
  return names;
}

const REQUIRES_DIST = "requires-dist:";

/**
 * The distribution a `Requires-Dist:` header line names, and its marker (after the first `;`),
 * read in one pass (pure). A wheel's METADATA may hold 1 MiB of anything: a regular expression
 * whose parts overlapped backtracked quadratically over a long line that did not match (150,000
 * characters ending in `;\r` held the host's thread 44 s).
 */
export function requiresDist(line: string): { name: string; marker?: string } | null {
  if (line.slice(0, REQUIRES_DIST.length).toLowerCase() !== REQUIRES_DIST) return null;
  const value = line.slice(REQUIRES_DIST.length);
  const semicolon = value.indexOf(";");
  const name = /^\s*([A-Za-z0-9][A-Za-z0-9._-]*)/.exec(value)?.[1];
  if (name === undefined) return null;
  return {
    name: normalizeName(name),
    ...(semicolon === -1 ? {} : { marker: value.slice(semicolon + 1) }),
  };
}

/** PEP 508 marker variables, as they are inside this Pyodide. */
export function markerEnvironment(runtime: PyodidePlatform): Record<string, string> {
  const [major, minor] = runtime.python.split(".");
  return {
    python_version: `${major}.${minor}`,
    python_full_version: runtime.python,
    implementation_version: runtime.python,
    sys_platform: "emscripten",
    platform_system: "Emscripten",
    os_name: "posix",
    platform_machine: runtime.arch,
    platform_release: "",
    platform_version: "",
    implementation_name: "cpython",
    platform_python_implementation: "CPython",
    extra: "",
  };
}

const VERSION_VARIABLES = new Set([
  "python_version",
  "python_full_version",
  "implementation_version",
]);

/**
 * Whether a PEP 508 marker holds in `env`. A marker this reader cannot parse holds, so the
 * dependency is looked for (and reported if missing) rather than silently dropped.
 */
export function markerHolds(marker: string, env: Record<string, string>): boolean {
  const tokens = [
    ...marker.matchAll(
      /\s*(\(|\)|===|==|!=|<=|>=|~=|<|>|not\s+in\b|in\b|and\b|or\b|"[^"]*"|'[^']*'|[A-Za-z_][A-Za-z0-9_.]*)/gy,
    ),
  ].map((m) => m[1]!.replace(/\s+/g, " "));
  if (tokens.join("").replace(/\s/g, "") !== marker.replace(/\s/g, "")) return true;
  let at = 0;
  const peek = () => tokens[at];
  const value = (): { text: string; variable: string | null } => {
    const token = tokens[at++];
    if (token === undefined) throw new SyntaxError("marker ends early");
    if (/^["']/.test(token)) return { text: token.slice(1, -1), variable: null };
    if (!(token in env)) throw new SyntaxError(`unknown marker variable ${token}`);
    return { text: env[token]!, variable: token };
  };
  const comparison = (): boolean => {
    if (peek() === "(") {
      at++;
      const inner = either();
      if (tokens[at++] !== ")") throw new SyntaxError("unbalanced parenthesis");
      return inner;
    }
    const left = value();
    const op = tokens[at++];
    const right = value();
    const versions = VERSION_VARIABLES.has(left.variable ?? right.variable ?? "");
    const order = versions
      ? compareVersions(left.text, right.text)
      : left.text < right.text
      ? -1
      : left.text > right.text
      ? 1
      : 0;
    switch (op) {
      case "==":
      case "===":
        return versions ? order === 0 : left.text === right.text;
      case "!=":
        return versions ? order !== 0 : left.text !== right.text;
      case "<":
        return order < 0;
      case "<=":
        return order <= 0;
      case ">":
        return order > 0;
      case ">=":
      case "~=":
        return order >= 0;
      case "in":
        return right.text.includes(left.text);
      case "not in":
        return !right.text.includes(left.text);
      default:
        throw new SyntaxError(`unknown operator ${op}`);
    }
  };
  const both = (): boolean => {
    let result = comparison();
    while (peek() === "and") {
      at++;
      result = comparison() && result;
    }
    return result;
  };
  const either = (): boolean => {
    let result = both();
    while (peek() === "or") {
      at++;
      result = both() || result;
    }
    return result;
  };
  try {
    const result = either();
    return at === tokens.length ? result : true;
  } catch {
    return true;
  }
}
