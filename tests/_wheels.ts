/**
 * Wheels and Pyodide distributions made by the tests themselves: real zip files (METADATA
 * deflated, as pip's wheels are) and a `pyodide-lock.json` in Pyodide's format. Nothing comes
 * from the network.
 */
import { join } from "node:path";
import { sha256Hex } from "../src/_util/digest.ts";
import { locateRuntime } from "../src/sandbox/runtime.ts";

export interface TestWheel {
  name: string;
  version: string;
  file: string;
  bytes: Uint8Array<ArrayBuffer>;
  requires: string[];
}

/**
 * A wheel of package `name` whose module `name` (underscored) defines `value()`, returning
 * `value` plus the values of the modules it `imports`.
 */
export async function buildWheel(options: {
  name: string;
  value: number;
  imports?: string[];
  /** Requires-Dist lines (with markers, if any). */
  requires?: string[];
  tag?: string;
  version?: string;
  /** More files of the package, by path inside it ("sub.py"). */
  extraFiles?: Record<string, string>;
  /** Python appended to the package's `__init__.py`. */
  initSuffix?: string;
  /** More entries of the archive, by their path in it ("x-1.0.0.data/data/f.txt"). */
  archiveFiles?: Record<string, string>;
}): Promise<TestWheel> {
  const version = options.version ?? "1.0.0";
  const module = options.name.replaceAll("-", "_");
  const imports = options.imports ?? [];
  const source = imports.map((m) => `import ${m}\n`).join("") +
    `def value():\n    return ${options.value}${imports.map((m) => ` + ${m}.value()`).join("")}\n` +
    (options.initSuffix ?? "");
  const info = `${module}-${version}.dist-info`;
  const metadata = [
    "Metadata-Version: 2.1",
    `Name: ${options.name}`,
    `Version: ${version}`,
    ...(options.requires ?? []).map((r) => `Requires-Dist: ${r}`),
    "",
    "A test package. Requires-Dist: not-a-header-in-the-description",
  ].join("\n");
  const tag = options.tag ?? "py3-none-any";
  const bytes = await zip([
    [`${module}/__init__.py`, source],
    ...Object.entries(options.extraFiles ?? {}).map(([path, text]): [string, string] => [
      `${module}/${path}`,
      text,
    ]),
    ...Object.entries(options.archiveFiles ?? {}),
    [`${info}/METADATA`, metadata],
    [`${info}/WHEEL`, `Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: ${tag}\n`],
    [`${info}/RECORD`, ""],
  ]);
  return {
    name: options.name,
    version,
    file: `${module}-${version}-${tag}.whl`,
    bytes,
    requires: options.requires ?? [],
  };
}

/** The platform of the pinned Pyodide, as its shipped lock says. */
export function pinnedLockInfo(): Record<string, string> {
  const lock = join(locateRuntime().pyodideDir, "pyodide-lock.json");
  return JSON.parse(Deno.readTextFileSync(lock)).info;
}

export interface LockEntry {
  wheel: TestWheel;
  depends?: string[];
  /** A sha256 other than the file's (to test the check). */
  sha256?: string;
}

/** `pyodide-lock.json` text for these wheels, for the pinned Pyodide's platform (or `info`). */
export async function lockText(
  entries: LockEntry[],
  info: Record<string, string> = pinnedLockInfo(),
): Promise<string> {
  const packages: Record<string, unknown> = {};
  for (const { wheel, depends, sha256 } of entries) {
    packages[wheel.name] = {
      name: wheel.name,
      version: wheel.version,
      file_name: wheel.file,
      install_dir: "site",
      sha256: sha256 ?? await sha256Hex(wheel.bytes),
      package_type: "package",
      imports: [wheel.name.replaceAll("-", "_")],
      depends: depends ?? [],
      unvendored_tests: false,
    };
  }
  return JSON.stringify({ info, packages });
}

/** Writes an unpacked distribution (lock and files) into `dir`. */
export async function writeDistribution(dir: string, lock: string, wheels: TestWheel[]) {
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(join(dir, "pyodide-lock.json"), lock);
  for (const wheel of wheels) await Deno.writeFile(join(dir, wheel.file), wheel.bytes);
}

/** A zip archive; text files named METADATA are deflated, the others stored. */
async function zip(files: [string, string][]): Promise<Uint8Array<ArrayBuffer>> {
  const encoder = new TextEncoder();
  const locals: Uint8Array[] = [];
  const centrals: Uint8Array[] = [];
  let offset = 0;
  for (const [name, text] of files) {
    const raw = encoder.encode(text);
    const deflate = name.endsWith("METADATA");
    const data = deflate
      ? new Uint8Array(
        await new Response(
          new Blob([raw]).stream().pipeThrough(new CompressionStream("deflate-raw")),
        )
          .arrayBuffer(),
      )
      : raw;
    const nameBytes = encoder.encode(name);
    const crc = crc32(raw);
    const local = new Uint8Array(30 + nameBytes.length);
    const lv = new DataView(local.buffer);
    lv.setUint32(0, 0x04034b50, true);
    lv.setUint16(4, 20, true);
    lv.setUint16(8, deflate ? 8 : 0, true);
    lv.setUint32(14, crc, true);
    lv.setUint32(18, data.length, true);
    lv.setUint32(22, raw.length, true);
    lv.setUint16(26, nameBytes.length, true);
    local.set(nameBytes, 30);
    const central = new Uint8Array(46 + nameBytes.length);
    const cv = new DataView(central.buffer);
    cv.setUint32(0, 0x02014b50, true);
    cv.setUint16(4, 20, true);
    cv.setUint16(6, 20, true);
    cv.setUint16(10, deflate ? 8 : 0, true);
    cv.setUint32(16, crc, true);
    cv.setUint32(20, data.length, true);
    cv.setUint32(24, raw.length, true);
    cv.setUint16(28, nameBytes.length, true);
    cv.setUint32(42, offset, true);
    central.set(nameBytes, 46);
    locals.push(local, data);
    centrals.push(central);
    offset += local.length + data.length;
  }
  const centralSize = centrals.reduce((n, c) => n + c.length, 0);
  const end = new Uint8Array(22);
  const ev = new DataView(end.buffer);
  ev.setUint32(0, 0x06054b50, true);
  ev.setUint16(8, files.length, true);
  ev.setUint16(10, files.length, true);
  ev.setUint32(12, centralSize, true);
  ev.setUint32(16, offset, true);
  const parts = [...locals, ...centrals, end];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = CRC_TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
