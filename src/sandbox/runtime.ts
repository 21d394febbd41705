/**
 * Where the sandbox runtime's files are: the worker program, Pyodide's package folder, and the
 * cache folder that holds the memory snapshot.
 */
import { readEnv } from "../config/environment.ts";
import { fileURLToPath as fromFileUrl } from "node:url";
import { dirname, isAbsolute, join } from "node:path";
import { version as pyodideVersion } from "pyodide";
import { PYODIDE_VERSION } from "../_util/version.ts";
import { denoCacheDir, type TrustedPath } from "../policy/trusted_paths.ts";

export interface SandboxRuntime {
  /**
   * "flags": sandboxes start with exactly their profile's permissions (running from source);
   * "drop": they start with everything and revoke it all after boot (the single binary).
   */
  mode: "flags" | "drop";
  /** Whether this process is a compiled binary (`deno compile`). */
  standalone: boolean;
  /** The Deno executable (or the compiled binary) that runs sandboxes. */
  denoPath: string;
  /** The worker program the sandbox process runs: worker.ts bundled into plain JavaScript. */
  workerPath: string;
  /** The memory watcher program (see memory_watcher.ts). */
  memoryWatcherPath: string;
  /** `pyodide.mjs` as a file URL, imported by the worker. */
  pyodideModuleUrl: string;
  /** Pyodide's package folder (real path). */
  pyodideDir: string;
  /** The files of that folder a booting sandbox must read. */
  pyodideAssets: string[];
  /** Folder for the snapshot (created on demand). */
  cacheDir: string;
  /**
   * The host's settings of which TLS certificates Deno trusts (`TLS_TRUST_VARIABLES`), given to
   * sandboxes that may reach hosts: behind a TLS-inspecting gateway, its CA. Deno's runtime reads
   * them and the file they name itself; a script can read neither (no env or read permission).
   */
  tlsTrust: Record<string, string>;
}

/** The variables Deno reads for the certificates it trusts: a CA file, or the system's store. */
export const TLS_TRUST_VARIABLES = [
  "DENO_CERT",
  "DENO_TLS_CA_STORE",
  "NODE_EXTRA_CA_CERTS",
] as const;

/** The host's TLS trust settings that are set (pure: `read` is the environment). */
export function tlsTrust(read: (name: (typeof TLS_TRUST_VARIABLES)[number]) => string | undefined) {
  const trust: Record<string, string> = {};
  for (const name of TLS_TRUST_VARIABLES) {
    const value = read(name);
    if (value) trust[name] = value;
  }
  return trust;
}

/**
 * Files of Pyodide's folder a sandbox reads at boot (besides the snapshot): its two JavaScript
 * modules (a sandbox's Deno has no npm cache of its own, so importing them needs read access),
 * the WebAssembly binary, the standard library and the lock file.
 */
const PYODIDE_ASSETS = [
  "pyodide.mjs",
  "pyodide.asm.mjs",
  "pyodide.asm.wasm",
  "python_stdlib.zip",
  "pyodide-lock.json",
];

/**
 * Finds the runtime's files. `cacheDir` defaults to `$CODEMODE_CACHE_DIR`, then
 * `$XDG_CACHE_HOME/mcp-code-mode`, then `~/.cache/mcp-code-mode`.
 */
export function locateRuntime(
  cacheDir?: string,
  mode: SandboxRuntime["mode"] = Deno.build.standalone ? "drop" : "flags",
): SandboxRuntime {
  if (pyodideVersion !== PYODIDE_VERSION) {
    throw new Error(
      `Cannot use Pyodide ${pyodideVersion}: the sandbox is built for ${PYODIDE_VERSION}`,
    );
  }
  const pyodideModuleUrl = import.meta.resolve("pyodide");
  if (!pyodideModuleUrl.startsWith("file:")) {
    throw new Error(`Cannot locate Pyodide ${PYODIDE_VERSION}: resolved to ${pyodideModuleUrl}`);
  }
  const pyodideDir = Deno.realPathSync(dirname(fromFileUrl(pyodideModuleUrl)));
  return {
    mode,
    standalone: Deno.build.standalone,
    denoPath: Deno.execPath(),
    workerPath: fromFileUrl(new URL("./worker_bundle.js", import.meta.url)),
    memoryWatcherPath: fromFileUrl(new URL("./memory_watcher.ts", import.meta.url)),
    pyodideModuleUrl,
    pyodideDir,
    pyodideAssets: PYODIDE_ASSETS.map((name) => join(pyodideDir, name)),
    cacheDir: cacheDir ?? defaultCacheDir(),
    tlsTrust: tlsTrust(readEnv),
  };
}

/**
 * The cache folder, always an absolute path: sandboxes run in `/`, so a relative one would name
 * another folder for them than the one the host checked and built (a relative
 * `CODEMODE_CACHE_DIR` or `HOME` is refused; a relative `XDG_CACHE_HOME` is ignored, as the XDG
 * specification says).
 */
export function defaultCacheDir(): string {
  const explicit = readEnv("CODEMODE_CACHE_DIR");
  if (explicit) return absolute(explicit, "CODEMODE_CACHE_DIR");
  const xdg = readEnv("XDG_CACHE_HOME");
  if (xdg && isAbsolute(xdg)) return join(xdg, "mcp-code-mode");
  const home = readEnv("HOME") ?? Deno.cwd();
  return join(absolute(home, "HOME"), ".cache", "mcp-code-mode");
}

function absolute(path: string, variable: string): string {
  if (isAbsolute(path)) return path;
  throw new Error(
    `Cannot use the cache folder: ${variable} is ${JSON.stringify(path)}, not an absolute path`,
  );
}

/** The runtime's own files, which no profile may grant write access to. */
export function runtimeTrustedPaths(runtime: SandboxRuntime): TrustedPath[] {
  return [
    { path: runtime.pyodideDir, what: "Pyodide's files" },
    { path: runtime.cacheDir, what: "the snapshot cache" },
    { path: runtime.denoPath, what: "the Deno binary" },
    {
      path: denoCacheDir(readEnv, Deno.build.os),
      what: "Deno's cache",
    },
  ];
}
