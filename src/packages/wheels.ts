/**
 * Python wheels by name: their versions and compatibility tags, and the names a script declares
 * in a PEP 723 `# /// script` block. No network is involved.
 */

/**
 * Whether `name` is a valid Python package name (PEP 508): letters and digits, with `.`, `_` or
 * `-` inside. Checked before any I/O, since a name becomes part of a file name and a URL.
 */
export function isPackageName(name: string): boolean {
  return name.length <= 100 && /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/.test(name);
}

/** PEP 503 normalized name: lowercase, runs of -_. become one -. */
export function normalizeName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, "-");
}

export interface WheelFile {
  distribution: string;
  version: string;
  file: string;
  /** The wheel's compatibility tags (each may be a compressed set such as "py2.py3"). */
  python: string;
  abi: string;
  platform: string;
}

/** Parses `{dist}-{version}(-{build})?-{python}-{abi}-{platform}.whl`; null for other names. */
export function parseWheelName(file: string): WheelFile | null {
  // A name becomes part of a cache path: a plain file name, never a path.
  if (!/^[A-Za-z0-9][A-Za-z0-9._+!-]*\.whl$/.test(file) || file.length > 255) return null;
  const match = /^([^-]+)-([^-]+)(?:-\d[^-]*)?-([^-]+)-([^-]+)-([^-]+)\.whl$/.exec(file);
  if (!match) return null;
  const [, dist, version, python, abi, platform] = match;
  return {
    distribution: normalizeName(dist!),
    version: version!,
    file,
    python: python!,
    abi: abi!,
    platform: platform!,
  };
}

/** The platform a Pyodide runs on, as its lock's `info` says. */
export interface PyodidePlatform {
  /** "3.14.2" */
  python: string;
  /** "2026_0" */
  abi_version: string;
  /** "emscripten_5_0_3" */
  platform: string;
  /** "wasm32" */
  arch: string;
}

/**
 * Why a wheel's tags cannot run in this Pyodide (naming the tag), or null when they can: pure
 * Python (`py3-none-any`) or built for this Pyodide's ABI (`cp314-cp314-pyemscripten_2026_0_wasm32`).
 */
export function wheelIncompatibility(wheel: WheelFile, runtime: PyodidePlatform): string | null {
  const [major, minor] = runtime.python.split(".").map((n) => Number.parseInt(n, 10));
  const cp = `cp${major}${minor}`;
  const platforms = [
    "any",
    `pyemscripten_${runtime.abi_version}_${runtime.arch}`,
    `pyodide_${runtime.abi_version}_${runtime.arch}`,
    `${runtime.platform}_${runtime.arch}`,
  ];
  if (!wheel.platform.split(".").some((tag) => platforms.includes(tag))) {
    return `${wheel.file} is built for the platform ${wheel.platform}, which this Pyodide cannot ` +
      `run (it runs "any" or ${platforms[1]})`;
  }
  const abi3 = wheel.abi.split(".").includes("abi3");
  const pythonRuns = wheel.python.split(".").some((tag) => {
    const m = /^(py|cp)(\d)(\d*)$/.exec(tag);
    if (!m || Number(m[2]) !== major) return false;
    if (m[3] === "") return m[1] === "py";
    const taggedMinor = Number(m[3]);
    return tag === cp || (taggedMinor <= minor! && (m[1] === "py" || abi3));
  });
  if (!pythonRuns) {
    return `${wheel.file} is built for the Python tag ${wheel.python}, and this Pyodide runs ` +
      `Python ${major}.${minor} (${cp})`;
  }
  if (!wheel.abi.split(".").some((tag) => tag === "none" || tag === "abi3" || tag === cp)) {
    return `${wheel.file} is built for the ABI ${wheel.abi}, which this Pyodide (${cp}) cannot load`;
  }
  return null;
}

/** The package names (no versions or extras) in a script's PEP 723 block. */
export function scriptDependencies(code: string): string[] {
  // Lines as Python reads them: a regular expression's multiline mode would also start a line
  // after U+2028 or U+2029, which Python takes as ordinary characters (of a string, say).
  const lines = code.split(/\r\n|\r|\n/);
  const open = lines.findIndex((l) => /^# \/\/\/ script[ \t]*$/.test(l));
  if (open === -1) return [];
  const close = lines.findIndex((l, i) => i > open && /^# \/\/\/[ \t]*$/.test(l));
  if (close === -1) return [];
  const toml = lines.slice(open + 1, close).map((l) => l.replace(/^#[ \t]?/, "")).join("\n");
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
export function requirementName(requirement: string): string {
  // Read in one pass: `^([^\s<>=!~;\[(@]+)\s*(.*)$` backtracked when a line break followed.
  const end = requirement.search(/[\s<>=!~;\[(@]/);
  const name = end === -1 ? requirement : requirement.slice(0, end);
  if (name === "") return requirement;
  const rest = requirement.slice(name.length).replace(/^\s+/, "");
  if (/[\n\r\u2028\u2029]/.test(rest)) return requirement; // one line only
  return rest === "" || /^[<>=!~;\[(@]/.test(rest) ? name : requirement;
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
