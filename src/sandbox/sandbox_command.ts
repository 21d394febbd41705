/**
 * How a sandbox process is started, in the runtime's two modes:
 *
 * - "flags" (running from source): `deno run` with exactly the permissions the profile grants,
 *   computed by `toDenoFlags`. Nothing to revoke: the process never had more.
 * - "drop" (the single binary, where permissions are fixed at compile time): the binary re-enters
 *   itself in sandbox mode and the worker revokes every permission after Pyodide has booted,
 *   before it reports ready, so no user code ever runs with more than nothing. Deno cannot
 *   narrow a broad grant to some paths, so profiles that grant folders or hosts are refused.
 *   The same mode runs under plain `deno run -A` for tests.
 */
import { type BootParams, PRELOAD_MOUNT, workerArgs } from "../rpc/sandbox_protocol.ts";
import { type Profile, sandboxV8Flags, toDenoFlags } from "./profile.ts";
import type { SandboxRuntime } from "./runtime.ts";
import { MEMORY_WATCHER_ENTRY } from "./memory_watcher.ts";

export interface ProcessCommand {
  command: string;
  args: string[];
  /** The child's whole environment (the script cannot read it: no env permission). */
  env: Record<string, string>;
}

export interface SandboxCommand extends ProcessCommand {
  /** The child's working folder: "/", so `Deno.cwd()` tells the script nothing. */
  cwd: string;
  /** The first message the host sends (launch parameters stay off the command line). */
  boot: BootParams;
}

/**
 * The sandbox's `DENO_DIR`: a path that cannot exist (its parent is a device), so the process
 * can store nothing on the host's disk, even as root. Deno keeps `localStorage`, the Cache API
 * and V8's code cache under DENO_DIR, keyed by the main module: with the host's own DENO_DIR, one
 * execution could leave data for the next, or fill the disk, with no write permission at all.
 * The worker is plain JavaScript (worker_bundle.js), so Deno has nothing to transpile and cache.
 */
export const SANDBOX_DENO_DIR = "/dev/null/mcp-code-mode-sandbox";

/** The environment of a sandbox process: nothing from the host's. */
export const SANDBOX_ENV: Readonly<Record<string, string>> = Object.freeze({
  DENO_DIR: SANDBOX_DENO_DIR,
  DENO_NO_UPDATE_CHECK: "1",
  NO_COLOR: "1",
});

/** First argument that makes the compiled binary act as a sandbox worker. */
export const SANDBOX_ENTRY = "__sandbox";

/** The command of a sandbox process serving one execution under `profile`. */
export function sandboxCommand(
  runtime: SandboxRuntime,
  snapshotPath: string,
  profile: Profile,
  options: {
    interruptible?: boolean;
    /** The host folder of the profile's preloaded packages (its snapshot imported them). */
    preloadDir?: string;
  } = {},
): SandboxCommand {
  const preload = options.preloadDir ? [{ host: options.preloadDir, mount: PRELOAD_MOUNT }] : [];
  // Only a sandbox that may reach hosts makes TLS connections.
  const trust = profile.net.length > 0 ? runtime.tlsTrust : {};
  const boot: BootParams = {
    pyodide_module_url: runtime.pyodideModuleUrl,
    snapshot_path: snapshotPath,
    mounts: [...preload, ...profile.folders.map(({ host, mount }) => ({ host, mount }))],
    interruptible: options.interruptible ?? false,
    drop_permissions: runtime.mode === "drop",
    compilation_hints: profile.optimize_compute === true,
  };
  if (runtime.mode === "flags") {
    // The preloaded packages' folder is read-only: no write flag names it.
    const readPaths = [...runtime.pyodideAssets, snapshotPath, ...preload.map((p) => p.host)];
    return {
      command: runtime.denoPath,
      args: [
        "run",
        "--no-config",
        "--cached-only",
        "--no-remote",
        "--no-npm",
        "--no-code-cache",
        ...toDenoFlags(profile, { readPaths }),
        runtime.workerPath,
        ...workerArgs({ mode: "serve" }),
      ],
      env: { ...SANDBOX_ENV, ...trust },
      cwd: "/",
      boot,
    };
  }
  if (profile.folders.length > 0 || profile.net.length > 0 || preload.length > 0) {
    throw new TypeError(
      `Cannot start a sandbox for profile "${profile.name}" in the single binary: it grants folders or hosts or preloads packages, ` +
        "and the binary can only drop all permissions; run from source (deno task serve) for such profiles",
    );
  }
  return {
    ...entry(runtime, workerArgs({ mode: "serve" })),
    env: {
      ...SANDBOX_ENV,
      DENO_V8_FLAGS: sandboxV8Flags(profile),
    },
    cwd: "/",
    boot,
  };
}

/**
 * The command that builds the snapshot. A profile's preloaded packages are imported in it, their
 * code run: like a sandbox, it gets no environment and a DENO_DIR that cannot exist, so that
 * code stores nothing on the host's disk (`localStorage`, the Cache API, V8's code cache), and
 * it may import no remote or npm module.
 */
export function snapshotBuildCommand(
  runtime: SandboxRuntime,
  outPath: string,
  /** Preloaded packages: the spec file, and the new folder they are installed into. */
  preload?: { specPath: string; siteDir: string },
): ProcessCommand {
  const args = workerArgs({
    mode: "build-snapshot",
    pyodideModuleUrl: runtime.pyodideModuleUrl,
    outputPath: outPath,
    preloadSpecPath: preload?.specPath,
  });
  if (runtime.mode === "flags") {
    return {
      command: runtime.denoPath,
      args: [
        "run",
        "--no-prompt",
        "--no-config",
        "--cached-only",
        "--no-remote",
        "--no-npm",
        "--no-code-cache",
        `--allow-read=${[
          runtime.pyodideDir,
          ...(preload ? [preload.specPath, preload.siteDir] : []),
        ]}`,
        `--allow-write=${[outPath, ...(preload ? [preload.siteDir] : [])]}`,
        runtime.workerPath,
        ...args,
      ],
      env: { ...SANDBOX_ENV },
    };
  }
  // In "drop" mode the builder keeps every permission (only a serving sandbox drops them), and
  // preloaded packages' code runs while it builds: never with them.
  if (preload) {
    throw new TypeError(
      "Cannot build a snapshot with preloaded packages in the single binary: their code would " +
        "run with every permission; run from source (deno task serve) for such profiles",
    );
  }
  return { ...entry(runtime, args), env: { ...SANDBOX_ENV } };
}

/**
 * The command of the memory watcher. It needs `--allow-all`: Deno grants `/proc` to nothing less.
 * It runs only our own helper, which reads process ids and answers with their memory.
 */
export function memoryWatcherCommand(runtime: SandboxRuntime): ProcessCommand {
  if (runtime.standalone) {
    return { command: runtime.denoPath, args: [MEMORY_WATCHER_ENTRY], env: { ...SANDBOX_ENV } };
  }
  return {
    command: runtime.denoPath,
    args: [
      "run",
      "--no-prompt",
      "--allow-all",
      "--no-config",
      "--cached-only",
      "--no-remote",
      "--no-npm",
      runtime.memoryWatcherPath,
    ],
    env: { ...SANDBOX_ENV },
  };
}

function entry(runtime: SandboxRuntime, args: string[]): { command: string; args: string[] } {
  return runtime.standalone ? { command: runtime.denoPath, args: [SANDBOX_ENTRY, ...args] } : {
    command: runtime.denoPath,
    args: [
      "run",
      "--no-prompt",
      "--allow-all",
      "--no-config",
      "--no-code-cache",
      runtime.workerPath,
      ...args,
    ],
  };
}
