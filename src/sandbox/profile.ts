/**
 * Permission profiles: what one sandbox may touch, and the limits it runs under.
 *
 * A profile file (`permissions/<name>.json`) is loose input. `resolveProfile` turns it, once,
 * into a `Profile` whose paths are real paths and whose limits are all set. `toDenoFlags` turns
 * a `Profile` into the Deno permission flags of the sandbox process: a pure function, so the
 * whole security boundary can be read and table-tested in one place.
 */
import { overlaps, type TrustedPath } from "../policy/trusted_paths.ts";
import { isPackageName } from "../packages/wheels.ts";

export interface Limits {
  /** Default wall-clock limit of one execution, in seconds. */
  timeout_s: number;
  /** The largest `timeout_s` a caller may ask for. */
  max_timeout_s: number;
  /** Ceiling on the resident memory of the whole sandbox process, in MiB. */
  memory_mb: number;
  /** Cap per output stream (stdout, stderr) and on the size of `result`, in bytes. */
  output_bytes: number;
  /** Upstream tool calls allowed in one execution. */
  tool_calls: number;
  /** Largest accepted `code`, in characters and in lines. */
  code_chars: number;
  code_lines: number;
  /** Cap on the files a script returns from outputs/, in bytes. */
  output_files_bytes: number;
}

export const DEFAULT_LIMITS: Readonly<Limits> = Object.freeze({
  timeout_s: 30,
  max_timeout_s: 300,
  memory_mb: 512,
  output_bytes: 64 * 1024,
  tool_calls: 200,
  code_chars: 8_000,
  code_lines: 400,
  output_files_bytes: 2 * 1024 * 1024,
});

/** A host folder the sandbox may use. */
export interface Folder {
  /** Real path on the host. */
  host: string;
  /** Where Python sees it (an absolute path inside the sandbox's filesystem). */
  mount: string;
  mode: "ro" | "rw";
}

export interface Profile {
  name: string;
  description: string;
  folders: Folder[];
  /** Hosts (`name` or `name:port`) the sandbox may connect to. */
  net: string[];
  /** Upstream tools the sandbox may call, as `server.tool` globs. */
  allowed_tools: string[];
  /** Allowed tools whose every call waits for a person's approval, as `server.tool` globs. */
  approve: string[];
  /**
   * Pure-Python packages (with their dependencies) installed and imported in this profile's own
   * memory snapshot, so a fresh sandbox has them at no install cost. Absent or empty: the shared
   * snapshot.
   */
  preload?: string[];
  /**
   * Optimize the functions compute-bound Python leans on while each sandbox boots (compilation
   * hints, see `COMPILATION_HINTS_FLAG`): scripts' loops and JSON run 20-40 % faster, for about
   * 0.17 CPU-s more per sandbox. Absent: false.
   */
  optimize_compute?: boolean;
  limits: Limits;
}

/** The files the runtime itself must read to boot: Pyodide's assets and the snapshot. */
export interface RuntimeFiles {
  readPaths: string[];
}

/**
 * V8 tuning of sandbox processes (not a permission). A very high tiering budget keeps Pyodide's
 * WebAssembly on V8's baseline code (Liftoff), except CPython's eval loop, which boot and warm-up
 * run enough to be optimized anyway. The worker waits that out before it says ready (see
 * `compilationSettled` in worker.ts), so a pooled sandbox is idle at zero CPU and every script
 * runs on the optimized eval loop. A profile with `optimize_compute` adds `COMPILATION_HINTS_FLAG`
 * (below): the functions compute-bound Python leans on are optimized during boot as well.
 *
 * The trade-off of the hints (`optimize_compute`), measured in fresh sandboxes as the pool starts
 * them, 8 interleaved rounds (2026-11-25, 2 cores): a 2e6-iteration loop took 310 ms against 397 without them, a 1 MB
 * JSON round trip 97 ms against 166, and a sandbox's boot cost 0.83 CPU-s against 0.66 (the
 * optimizing compiler's work for about 135 functions, on V8's background threads, before the
 * sandbox is ready). The workload that chose them (src/_build/hot_functions.ts) is kept to what
 * agents' scripts do most, since every function named costs every sandbox its compile time;
 * naming everything a broader workload made hot (about 200 functions: regex, sorting, classes,
 * float loops) cost 0.25 CPU-s per boot for no more speed on these two scripts. Measured the
 * same way and not used: the hints V8 writes itself after the training workload
 * (`%GenerateWasmCompilationHints`: 1255 functions, with call targets) and `--wasm-inlining`
 * took the loop to 217 ms and JSON to 60 ms against 249 and 70 with ours, for 0.94 CPU-s per
 * boot against 0.64; besides the cost, inlining steered by call-target hints would be steered by
 * a script's own modules too.
 *
 * What the hints let in: with the flag, V8 reads the hints sections of every module compiled in
 * the process, a script's own too. A script can do no more with them than ask V8 to compile its
 * own functions early, with the optimizing compiler at once; V8 decodes them with a decoder of their own whose errors are ignored (the
 * module still compiles), and prints nothing unless a trace flag is set. Call-target hints only
 * steer inlining, which `--no-wasm-inlining` turns off. A corpus of malformed sections is run in
 * tests/compilation_hints_test.ts.
 *
 * Without the hints, measured side by side with a shared interpreter that has had everything
 * optimized for long (BENCHMARKS.md, "Side by side"): compute-bound scripts run 1.4 to 2x
 * slower than there (loops and JSON), because the C functions they call (integer and string
 * operations, the JSON codec) stay on baseline code (the pool keeps the replacement's boot off
 * the cores while a script runs: REFILL_DELAY_MS in pool.ts). Measured alternatives, each in
 * fresh sandboxes: V8's default budget optimizes those during the script, on a background
 * thread: a 2e6-iteration loop ran about 15 % faster, for 0.12 CPU-s more per boot and 0.15
 * CPU-s more per compute-bound script; a 1 MB JSON round trip was no faster (it ends before
 * optimized code pays off) and spent 0.2 to 0.3 CPU-s more. Optimizing everything hot before the
 * first script (V8's synchronous tier-up) took the boot from about 0.6 to 2.2 CPU-s. Deno keeps no
 * compiled WebAssembly between processes, so a fresh process per execution pays for whatever it
 * optimizes; this budget and the hints keep that to the eval loop and the functions named.
 *
 * `--no-wasm-inlining`: V8 otherwise inlines small callees into the optimized eval loop, chosen
 * by call counts from boot and warm-up. Without it, measured in fresh sandboxes, 8-10
 * interleaved rounds, twice: a 2e6-iteration loop ran 7-9 % faster and a 1 MB JSON round trip
 * 16-17 % faster, and boot CPU was no higher (0.71 against 0.79, then 0.76 against 0.75 CPU-s).
 * Switching off loop unrolling and peeling as well changed nothing measurable.
 *
 * Measured and not used (2026-11, Deno 2.9.6 / V8 15.0): V8's experimental WebAssembly PGO.
 * With `--experimental-wasm-pgo-from-file` and a profile naming the ~200 functions a compute
 * workload tiers up (loops, JSON, regex, sorting), those are compiled with TurboFan in the
 * background at boot: a 2e6-iteration loop ran 1.6-1.7x and a 1 MB JSON round trip 1.8-1.9x
 * faster, which is about the shared-interpreter peer's speed, for 0.3-0.6 CPU-s more per boot
 * (a profile of the loop's 28 functions alone: +0.3 CPU-s, loop 1.4x). Not used because V8
 * prints the profile's loading to stdout, our protocol channel (lines arrived prefixed with it);
 * with the flag, V8 looks for a profile for every module compiled in the process, a script's own
 * too: it opens `profile-wasm-<32-bit hash of the bytes>` in the working folder, outside Deno's
 * permissions, and prints a line to stdout when there is none (so a script could aim a module
 * whose hash it chose at the profile, and V8's testing-only parser); Deno never tears the module
 * down, so V8 cannot write the profile itself (it has to be made
 * from `--trace-wasm-compilation-times` output, a developer flag); and a profile that does not
 * match the module aborts the process. The compilation hints above get such compiling done from
 * the module's own bytes, with none of these.
 */
export const SANDBOX_V8_TUNING = "--wasm-tiering-budget=2000000000,--no-wasm-inlining";

/**
 * The flag a profile with `optimize_compute` adds: V8 reads the compilation hints the worker puts
 * in Pyodide's module (compilation_hints.ts). Not the default: through the server, the extra
 * boot CPU took sustained fresh-sandbox executions at concurrency 4 from 3.23 to 2.56 per second
 * and the first result after a start from 1216 to 1425 ms (BENCHMARKS.md, 2026-11-25), where
 * the default profile's targets are 3 per second and 1000 ms.
 */
export const COMPILATION_HINTS_FLAG = "--experimental-wasm-compilation-hints";

/** The `--v8-flags` value of a sandbox process under `profile` (pure). */
export function sandboxV8Flags(profile: Profile): string {
  const flags = [`--max-old-space-size=${profile.limits.memory_mb}`, SANDBOX_V8_TUNING];
  if (profile.optimize_compute === true) flags.push(COMPILATION_HINTS_FLAG);
  return flags.join(",");
}

/**
 * What a sandbox process is booted with under `profile`: its folders, hosts and memory flag.
 * Warm sandboxes are kept apart by this, not by the profile's name, so a profile changed in
 * place (or an internal override that keeps the name) never gets a sandbox booted for another.
 * Tool rules and time limits are enforced per execution, so they do not split the pool.
 */
export function sandboxKey(profile: Profile): string {
  return JSON.stringify([
    profile.name,
    profile.folders,
    profile.net,
    profile.limits.memory_mb,
    profile.preload ?? [],
    profile.optimize_compute === true,
  ]);
}

/**
 * The Deno permission flags of a sandbox process. Grants reading the runtime's own files, the
 * profile's folders (writing only the `rw` ones) and the profile's hosts; never environment,
 * subprocesses, FFI or system information.
 */
export function toDenoFlags(profile: Profile, runtime: RuntimeFiles): string[] {
  const read = unique([...runtime.readPaths, ...profile.folders.map((f) => f.host)]);
  const write = unique(profile.folders.filter((f) => f.mode === "rw").map((f) => f.host));
  const flags = ["--no-prompt", `--allow-read=${read.join(",")}`];
  if (write.length > 0) flags.push(`--allow-write=${write.join(",")}`);
  if (profile.net.length > 0) flags.push(`--allow-net=${unique(profile.net).join(",")}`);
  flags.push(`--v8-flags=${sandboxV8Flags(profile)}`);
  return flags;
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}

export interface ResolveContext {
  /** Folder that relative host paths in the profile are resolved against. */
  baseDir: string;
  /** Resolves a path to its real path (follows symlinks); throws when it does not exist. */
  realPath: (path: string) => string;
  /** Real paths the sandbox must never be able to write: what the host runs or trusts. */
  protectedPaths: TrustedPath[];
  /**
   * A link inside `folder` that may lead outside it, if any: a symlink whose target lies outside
   * (Deno follows symlinks inside a granted folder) or a file with several hard links.
   */
  findEscapingLink?: (folder: string) => string | null;
}

/**
 * A folder refused for what it holds now (a link that may lead out, too many entries to check)
 * or for being gone, not for what the profile says: a script with write access there (or above
 * it) can cause it.
 */
export class FolderCheckError extends TypeError {}

/**
 * A profile file that `extends` another, merged with it: fields the child gives replace the
 * base's, except `limits`, which merge key by key. Pure; `extends` chains are followed by the
 * caller (see `loadProfiles` in config.ts).
 */
export function mergeProfileFiles(
  base: unknown,
  child: Record<string, unknown>,
): Record<string, unknown> {
  const { extends: _, ...own } = child;
  const parent = isRecord(base) ? base : {};
  const merged: Record<string, unknown> = { ...parent, ...own };
  if (isRecord(parent.limits) || isRecord(own.limits)) {
    merged.limits = {
      ...(isRecord(parent.limits) ? parent.limits : {}),
      ...(isRecord(own.limits) ? own.limits : {}),
    };
  }
  delete merged.extends;
  return merged;
}

/**
 * Validates a parsed profile file and resolves it into a `Profile`.
 * Throws `TypeError` naming the profile and the field at the first problem.
 */
export function resolveProfile(name: string, raw: unknown, ctx: ResolveContext): Profile {
  const where = (field: string) => `profile "${name}", field "${field}"`;
  if (!isRecord(raw)) throw new TypeError(`Cannot load profile "${name}": not a JSON object`);
  const known = new Set([
    "description",
    "folders",
    "net",
    "allowed_tools",
    "approve",
    "preload",
    "optimize_compute",
    "limits",
    "$comment",
  ]);
  for (const key of Object.keys(raw)) {
    if (!known.has(key)) throw new TypeError(`Cannot load ${where(key)}: unknown field`);
  }
  const description = optionalString(raw.description, where("description")) ?? "";
  const folders = arrayOf(
    raw.folders,
    where("folders"),
    (item, i) => resolveFolder(item, `${where("folders")}[${i}]`, ctx),
  );
  const net = arrayOf(raw.net, where("net"), (item, i) => {
    const host = requireString(item, `${where("net")}[${i}]`);
    if (!/^[A-Za-z0-9.\-\[\]:]+$/.test(host)) {
      throw new TypeError(`Cannot load ${where("net")}[${i}]: "${host}" is not a host[:port]`);
    }
    return host;
  });
  const allowed_tools = raw.allowed_tools === undefined
    ? ["*"]
    : arrayOf(raw.allowed_tools, where("allowed_tools"), (item, i) =>
      requireString(item, `${where("allowed_tools")}[${i}]`));
  const approve = arrayOf(
    raw.approve,
    where("approve"),
    (item, i) => requireString(item, `${where("approve")}[${i}]`),
  );
  const preload = arrayOf(raw.preload, where("preload"), (item, i) => {
    const package_ = requireString(item, `${where("preload")}[${i}]`);
    if (!isPackageName(package_)) {
      throw new TypeError(
        `Cannot load ${where("preload")}[${i}]: "${package_}" is not a package name`,
      );
    }
    return package_;
  });
  if (raw.optimize_compute !== undefined && typeof raw.optimize_compute !== "boolean") {
    throw new TypeError(`Cannot load ${where("optimize_compute")}: must be true or false`);
  }
  const limits = resolveLimits(raw.limits, where("limits"));
  return {
    name,
    description,
    folders,
    net,
    allowed_tools,
    approve,
    ...(preload.length > 0 ? { preload } : {}),
    ...(raw.optimize_compute === true ? { optimize_compute: true } : {}),
    limits,
  };
}

function resolveFolder(item: unknown, where: string, ctx: ResolveContext): Folder {
  if (!isRecord(item)) throw new TypeError(`Cannot load ${where}: not an object`);
  const hostRaw = requireString(item.host, `${where}.host`);
  const mount = requireString(item.mount, `${where}.mount`);
  const mode = item.mode ?? "ro";
  if (mode !== "ro" && mode !== "rw") {
    throw new TypeError(`Cannot load ${where}.mode: must be "ro" or "rw"`);
  }
  if (!mount.startsWith("/") || mount.split("/").includes("..")) {
    throw new TypeError(`Cannot load ${where}.mount: "${mount}" must be absolute without ".."`);
  }
  const joined = hostRaw.startsWith("/") ? hostRaw : `${ctx.baseDir}/${hostRaw}`;
  let host: string;
  try {
    host = ctx.realPath(joined);
  } catch (cause) {
    const resolved = hostRaw === joined ? "" : ` (${joined}: a relative path starts from the ` +
      "profile's folder)";
    // A FolderCheckError: a script with write access above the folder could have removed it.
    throw new FolderCheckError(
      `Cannot load ${where}.host: "${hostRaw}" does not exist${resolved}`,
      { cause },
    );
  }
  if (host.includes(",")) {
    throw new TypeError(`Cannot load ${where}.host: "${host}" contains a comma`);
  }
  if (host === "/") throw new TypeError(`Cannot load ${where}.host: the root folder is refused`);
  for (const guarded of ctx.protectedPaths) {
    if (mode === "rw" && overlaps(host, guarded)) {
      // An upstream's working folder is the config's folder unless its entry says otherwise.
      const hint = guarded.what === "an upstream server's working folder"
        ? ': give that server a "cwd" of its own, or grant a folder elsewhere'
        : "";
      throw new TypeError(
        `Cannot load ${where}.host: write access to "${host}" overlaps ${guarded.what} ` +
          `(${guarded.path})${hint}`,
      );
    }
  }
  const escaping = ctx.findEscapingLink?.(host);
  if (escaping) throw new FolderCheckError(`Cannot load ${where}.host: it contains ${escaping}`);
  return { host, mount, mode };
}

function resolveLimits(raw: unknown, where: string): Limits {
  if (raw === undefined) return { ...DEFAULT_LIMITS };
  if (!isRecord(raw)) throw new TypeError(`Cannot load ${where}: not an object`);
  const limits: Limits = { ...DEFAULT_LIMITS };
  for (const [key, value] of Object.entries(raw)) {
    if (!(key in DEFAULT_LIMITS)) throw new TypeError(`Cannot load ${where}.${key}: unknown limit`);
    if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
      throw new TypeError(`Cannot load ${where}.${key}: must be a positive number`);
    }
    limits[key as keyof Limits] = value;
  }
  if (limits.timeout_s > limits.max_timeout_s) {
    throw new TypeError(`Cannot load ${where}.timeout_s: larger than max_timeout_s`);
  }
  return limits;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function requireString(value: unknown, where: string): string {
  if (typeof value !== "string" || value === "") {
    throw new TypeError(`Cannot load ${where}: must be a non-empty string`);
  }
  return value;
}

function optionalString(value: unknown, where: string): string | undefined {
  return value === undefined ? undefined : requireString(value, where);
}

function arrayOf<T>(value: unknown, where: string, each: (item: unknown, i: number) => T): T[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new TypeError(`Cannot load ${where}: must be an array`);
  return value.map(each);
}

/**
 * One line per profile for an agent choosing one: its description, the folders it mounts (and
 * how) and the hosts it reaches; the agent otherwise learns them only by trying. Pure.
 */
export function profileSummary(profiles: readonly Profile[]): string {
  return profiles.map((p) => {
    const folders = p.folders.map((f) =>
      `${f.mount} (${f.mode === "rw" ? "read-write" : "read-only"})`
    );
    const parts = [
      p.description.trim().replace(/\s+/g, " ").slice(0, 200),
      folders.length > 0 ? `folders ${folders.join(", ")}` : "no host folders",
      p.net.length > 0
        ? `network ${p.net.slice(0, 5).join(", ")}${p.net.length > 5 ? ", ..." : ""}`
        : "",
      p.optimize_compute ? "compute-bound Python optimized (loops, JSON: 20-40 % faster)" : "",
    ].filter(Boolean);
    return `${p.name}: ${parts.join("; ")}`;
  }).join("\n");
}
