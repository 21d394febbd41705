/**
 * Python packages from a local wheel folder: finds the wheel for a requested name, and reads the
 * names a script declares in a PEP 723 `# /// script` block. No network is involved.
 */
import { join } from "node:path";
import { encodeBase64 } from "../policy/input_files.ts";

/** PEP 503 normalized name: lowercase, runs of -_. become one -. */
/**
 * Whether `name` is a valid Python package name (PEP 508): letters and digits, with `.`, `_` or
 * `-` inside. Checked before any I/O, since a name becomes part of a file name and a URL.
 */
export function isPackageName(name: string): boolean {
  return name.length <= 100 && /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/.test(name);
}

export function normalizeName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, "-");
}

export interface WheelFile {
  distribution: string;
  version: string;
  file: string;
}

/** Parses `{dist}-{version}(-{build})?-{python}-{abi}-{platform}.whl`; null for other names. */
export function parseWheelName(file: string): WheelFile | null {
  const match = /^([^-]+)-([^-]+)(?:-\d[^-]*)?-([^-]+)-([^-]+)-([^-]+)\.whl$/.exec(file);
  if (!match) return null;
  const [, dist, version, , abi, platform] = match;
  const runsHere = platform === "any" || /emscripten|pyodide/.test(platform!);
  if (!runsHere || (platform === "any" && abi !== "none")) return null;
  return { distribution: normalizeName(dist!), version: version!, file };
}

/** The package names (no versions or extras) in a script's PEP 723 block. */
export function scriptDependencies(code: string): string[] {
  const block = /^# \/\/\/ script\s*$([\s\S]*?)^# \/\/\/\s*$/m.exec(code);
  if (!block) return [];
  const toml = block[1]!.split("\n").map((l) => l.replace(/^#\s?/, "")).join("\n");
  const start = /dependencies\s*=\s*\[/.exec(toml);
  if (!start) return [];
  // The list ends at the first ] outside a string ("pkg[extra]" holds brackets).
  let end = start.index + start[0].length;
  for (let quote = ""; end < toml.length; end++) {
    const c = toml[end]!;
    if (quote) quote = c === quote ? "" : quote;
    else if (c === '"' || c === "'") quote = c;
    else if (c === "]") break;
  }
  const list = toml.slice(start.index + start[0].length, end);
  return [...list.matchAll(/["']([^"']+)["']/g)].map((m) => requirementName(m[1]!.trim()))
    .filter(Boolean);
}

/**
 * The package a PEP 508 requirement names ("pandas>=2", "httpx[http2]; python_version>'3'"),
 * or the whole text when it is not a requirement, so that the name check refuses it.
 */
function requirementName(requirement: string): string {
  const m = /^([^\s<>=!~;\[(@]+)\s*(.*)$/.exec(requirement);
  if (!m) return requirement;
  return m[2] === "" || /^[<>=!~;\[(@]/.test(m[2]!) ? m[1]! : requirement;
}

export interface ResolvedWheel {
  name: string;
  file: string;
  /** Base64. */
  data: string;
}

/** Finds and reads wheels from one folder, keeping what it read (the host-side cache). */
export class WheelFolder {
  readonly dir: string;
  readonly #cache = new Map<string, { mtime: number; data: string }>();

  constructor(dir: string) {
    this.dir = dir;
  }

  /** The newest wheel per requested name, or the names that have none. */
  async resolve(names: string[]): Promise<{ wheels: ResolvedWheel[]; missing: string[] }> {
    const available = new Map<string, WheelFile>();
    if (this.dir) {
      try {
        for await (const entry of Deno.readDir(this.dir)) {
          const wheel = entry.isFile ? parseWheelName(entry.name) : null;
          const known = wheel && available.get(wheel.distribution);
          if (wheel && (!known || compareVersions(wheel.version, known.version) > 0)) {
            available.set(wheel.distribution, wheel);
          }
        }
      } catch {
        // a missing folder has no wheels
      }
    }
    const wheels: ResolvedWheel[] = [];
    const missing: string[] = [];
    for (const name of [...new Set(names.map(normalizeName))]) {
      const wheel = available.get(name);
      if (!wheel) {
        missing.push(name);
        continue;
      }
      wheels.push({ name, file: wheel.file, data: await this.#read(join(this.dir, wheel.file)) });
    }
    return { wheels, missing };
  }

  async #read(path: string): Promise<string> {
    const { mtime } = await Deno.stat(path);
    const stamp = mtime?.getTime() ?? 0;
    const cached = this.#cache.get(path);
    if (cached && cached.mtime === stamp) return cached.data;
    const data = encodeBase64(await Deno.readFile(path));
    this.#cache.set(path, { mtime: stamp, data });
    return data;
  }
}

export function compareVersions(a: string, b: string): number {
  const pa = a.split(/[.+-]/).map((p) => Number.parseInt(p, 10) || 0);
  const pb = b.split(/[.+-]/).map((p) => Number.parseInt(p, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}
