/**
 * The messages between the host and one sandbox process (newline-delimited JSON-RPC 2.0).
 *
 *   host -> sandbox  notification "boot"        BootParams, first (launch parameters)
 *   sandbox -> host  notification "ready"       once Pyodide has booted
 *   host -> sandbox  request      "prepare"     PrepareParams -> {} (while idle in the pool)
 *   host -> sandbox  request      "execute"     ExecuteParams -> ExecuteReply (once; a session's, once per script)
 *   sandbox -> host  notification "started"     a session's script is about to run (see below)
 *   sandbox -> host  notification "output"      OutputParams, while a script runs
 *   sandbox -> host  notification "progress"    ProgressParams, while a script runs
 *   sandbox -> host  request      "call_tool"   CallToolParams -> ToolReply, while a script runs
 *
 * The host checks every field of everything it receives: the sandbox runs untrusted code. The
 * validators below are the only way the host reads a sandbox's message. Each side's channel is
 * typed by what it sends (`HostMessages`, `SandboxMessages`), so a change to a message's params
 * breaks the type check where it is sent; replies travel as `unknown` and are read through the
 * validators (the worker's replies are built in Python, prelude.py). Besides these messages the
 * host signals a process: SIGUSR2 interrupts a session's script, SIGSTOP/SIGCONT pause a session
 * between scripts (sandbox_command.ts, launcher.ts). A session's sandbox clears its interrupt
 * flag as a script starts, then says "started": the host sends SIGUSR2 only after that, or a
 * signal sent while the request was still on its way would be cleared and lost.
 * The worker's command line (`workerArgs`, `parseWorkerArgs`) is defined here too.
 */
import type { ToolErrorKind } from "../execution/outcomes.ts";
import { JSON_COST_LIMITS, jsonCostProblem } from "./json_cost.ts";

export const METHOD_BOOT = "boot" satisfies keyof HostMessages["notifications"];
export const METHOD_READY = "ready" satisfies keyof SandboxMessages["notifications"];
export const METHOD_PREPARE = "prepare" satisfies keyof HostMessages["requests"];
export const METHOD_EXECUTE = "execute" satisfies keyof HostMessages["requests"];
export const METHOD_STARTED = "started" satisfies keyof SandboxMessages["notifications"];
export const METHOD_OUTPUT = "output" satisfies keyof SandboxMessages["notifications"];
export const METHOD_PROGRESS = "progress" satisfies keyof SandboxMessages["notifications"];
export const METHOD_CALL_TOOL = "call_tool" satisfies keyof SandboxMessages["requests"];

/** Python packages: package name -> { module name -> source }. */
export type Packages = Record<string, Record<string, string>>;

export interface PrepareParams {
  /** Installed ahead of the script, while the sandbox waits in the pool. */
  packages: Packages;
}

export interface ExecuteParams {
  code: string;
  /** Packages to (re)install before the run, when they changed since "prepare". */
  packages?: Packages;
  /** Cap on the JSON size of `result`. */
  result_bytes: number;
  /** Input files, placed under the script's working folder before it runs. */
  files?: InputFile[];
  /** Cap on the total size of the files returned from outputs/. */
  output_files_bytes?: number;
  /** Where outputs over the cap are copied (a writable mounted folder), if anywhere. */
  large_outputs_dir?: string;
  /** Run in the process's persistent scope (a session), not a fresh one. */
  persistent?: boolean;
  /** Python packages to install before the run, each after the packages it depends on. */
  python_packages?: PackageFile[];
}

/** A wheel, or a package file of Pyodide's distribution (a wheel or a shared-library zip). */
export interface PackageFile {
  name: string;
  file: string;
  /** Base64. */
  data: string;
  /** Where Pyodide installs it: site-packages, or the shared-library folder. */
  install_dir: "site" | "dynlib";
}

export interface InputFile {
  /** Relative path (checked by the host). */
  name: string;
  /** Base64. */
  data: string;
}

/** A file the script wrote to outputs/: its data, or only its name and size when omitted. */
export interface OutputFile {
  name: string;
  size: number;
  data?: string;
  omitted?: boolean;
  /**
   * Where an omitted file was saved inside the sandbox (under a writable host folder). The host
   * takes it only as "saved" and states the path itself.
   */
  saved_to?: string;
  /** The same file's path on the host (set by the host once it has seen the file there). */
  saved_on_host?: string;
}

export interface ScriptError {
  error_type: string;
  message: string;
  traceback: string;
  lineno: number | null;
}

export type ExecuteReply =
  | {
    ok: true;
    result: unknown;
    outputs?: OutputFile[];
    /** The result was cut to the size limit (its repr, cut, is what `result` holds). */
    result_cut?: boolean;
  }
  | {
    ok: false;
    error: ScriptError;
    outputs?: OutputFile[];
    /** The interpreter cannot run more code (a session must end). */
    fatal?: boolean;
  };

export type OutputStream = "stdout" | "stderr";

export interface OutputParams {
  stream: OutputStream;
  text: string;
}

/** What a script reports with mcp_tools.report_progress. */
export interface ProgressParams {
  progress: number;
  total?: number;
  message?: string;
}

export interface CallToolParams {
  server: string;
  tool: string;
  arguments: Record<string, unknown>;
}

/** What Python receives for a tool call: the MCP result, or an error with its cause. */
export type ToolReply =
  | { result: Record<string, unknown> }
  | { error: { kind: ToolErrorKind; message: string } };

export type { ToolErrorKind };

/** How a sandbox boots: sent by the host as the first message, so no host path is in argv. */
export interface BootParams {
  /** `pyodide.mjs` as a file URL. */
  pyodide_module_url: string;
  /** The verified memory snapshot. */
  snapshot_path: string;
  /** Host folders to mount: real host path -> absolute path inside Python. */
  mounts: { host: string; mount: string }[];
  /** Take SIGUSR2 as "interrupt the running script" (sessions). */
  interruptible: boolean;
  /** Revoke every permission after boot (the single binary; see sandbox_command.ts). */
  drop_permissions: boolean;
  /** Give Pyodide's module its compilation hints (a profile's `optimize_compute`). */
  compilation_hints: boolean;
}

/** The boot message as the worker trusts it, or null when it is malformed. */
export function parseBootParams(value: unknown): BootParams | null {
  if (typeof value !== "object" || value === null) return null;
  const v = value as Record<string, unknown>;
  if (typeof v.pyodide_module_url !== "string" || typeof v.snapshot_path !== "string") return null;
  if (typeof v.interruptible !== "boolean" || typeof v.drop_permissions !== "boolean") return null;
  if (typeof v.compilation_hints !== "boolean") return null;
  if (!Array.isArray(v.mounts)) return null;
  const mounts: BootParams["mounts"] = [];
  for (const m of v.mounts) {
    if (typeof m?.host !== "string" || typeof m?.mount !== "string") return null;
    mounts.push({ host: m.host, mount: m.mount });
  }
  return {
    pyodide_module_url: v.pyodide_module_url,
    snapshot_path: v.snapshot_path,
    mounts,
    interruptible: v.interruptible,
    drop_permissions: v.drop_permissions,
    compilation_hints: v.compilation_hints,
  };
}

/** The messages each side sends: method -> params (and, for requests, the reply). */
export interface HostMessages {
  notifications: { boot: BootParams };
  requests: {
    prepare: { params: PrepareParams; reply: Record<string, never> };
    execute: { params: ExecuteParams; reply: ExecuteReply };
  };
}

export interface SandboxMessages {
  notifications: {
    ready: Record<string, never>;
    started: Record<string, never>;
    output: OutputParams;
    progress: ProgressParams;
  };
  requests: { call_tool: { params: CallToolParams; reply: ToolReply } };
}

/** How the worker is started: boot a sandbox, or build the memory snapshot. */
export type WorkerLaunch =
  | { mode: "serve" }
  | {
    mode: "build-snapshot";
    pyodideModuleUrl: string;
    outputPath: string;
    /** A `PreloadSpec` file: packages to install into a host folder and import first. */
    preloadSpecPath?: string;
  };

/** What a snapshot with preloaded packages holds (written by the host, read by the builder). */
export interface PreloadSpec {
  /** The host folder the packages are installed into (mounted at `PRELOAD_MOUNT`). */
  site_dir: string;
  packages: PackageFile[];
}

/** Where a sandbox sees the folder of its profile's preloaded packages (read-only). */
export const PRELOAD_MOUNT = "/lib/codemode-preload";

/**
 * Mode bits a file in a host folder never keeps: setuid, setgid, sticky, group write, world
 * write. The worker masks them out of Python's file calls; the host clears them after a run.
 */
export const SHARED_MODE_BITS = 0o7022;

/** The worker's command-line arguments for a launch. */
export function workerArgs(launch: WorkerLaunch): string[] {
  return launch.mode === "serve" ? ["serve"] : [
    "build-snapshot",
    launch.pyodideModuleUrl,
    launch.outputPath,
    ...(launch.preloadSpecPath ? [launch.preloadSpecPath] : []),
  ];
}

/** The launch the worker's arguments ask for, or null when they are not one `workerArgs` makes. */
export function parseWorkerArgs(args: readonly string[]): WorkerLaunch | null {
  const [mode, moduleUrl, path, preloadSpecPath, ...extra] = args;
  if (extra.length > 0) return null;
  if (mode === "serve" && moduleUrl === undefined) return { mode };
  if (mode === "build-snapshot" && moduleUrl && path) {
    return preloadSpecPath
      ? { mode, pyodideModuleUrl: moduleUrl, outputPath: path, preloadSpecPath }
      : { mode, pyodideModuleUrl: moduleUrl, outputPath: path };
  }
  return null;
}

/** How a sandbox broke the protocol, beyond JSON-RPC itself (see `ViolationKind`). */
export interface ProtocolViolation {
  kind:
    | "unknown_notification"
    | "unexpected_started"
    | "bad_output"
    | "bad_progress"
    | "too_many_progress_reports"
    | "unexpected_request"
    | "bad_call_tool"
    | "tool_call_over_limit";
  /** A readable description, for logs. */
  detail: string;
}

// --- What the host accepts from a sandbox -------------------------------------------------------

const MAX_PROGRESS_MESSAGE = 500;
const MAX_OUTPUT_FILES = 50;

/**
 * Well-formed standard base64 (a client rejects a whole result holding anything else). Not one
 * regular expression of groups of four: V8 ran out of stack on one of 5 million characters.
 */
function isBase64(text: string): boolean {
  return text.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(text);
}

/** A Python exception's (qualified) class name, as the script may raise it. */
const PYTHON_NAME = /^(?=.{1,200}$)[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,9}$/;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const OUTPUT_FIELDS = ["stream", "text"];

/**
 * Whether `value` is an object of `fields` alone: a field the sandbox's runtime never writes is
 * the script's padding (a valid one-byte output with 7 MiB of junk beside it was parsed and let
 * go, 1.6 GB in 8 s, counted against nothing).
 */
function hasOnly(value: unknown, fields: readonly string[]): value is Record<string, unknown> {
  return isRecord(value) && Object.keys(value).every((key) => fields.includes(key));
}

/**
 * An output notification, or null when its shape is wrong. Empty text is wrong too: the worker
 * never sends it, and it would cost the host without counting against the output limit.
 */
export function parseOutput(params: unknown): OutputParams | null {
  if (!hasOnly(params, OUTPUT_FIELDS)) return null;
  if (typeof params.text !== "string" || params.text === "") return null;
  if (params.stream !== "stdout" && params.stream !== "stderr") return null;
  return { stream: params.stream, text: params.text };
}

/** A progress report (its message cut to length), or null when its shape is wrong. */
const PROGRESS_FIELDS = ["progress", "total", "message"];
export function parseProgress(params: unknown): ProgressParams | null {
  if (!hasOnly(params, PROGRESS_FIELDS)) return null;
  if (typeof params.progress !== "number" || !Number.isFinite(params.progress)) return null;
  const report: ProgressParams = { progress: params.progress };
  if (typeof params.total === "number" && Number.isFinite(params.total)) {
    report.total = params.total;
  }
  if (typeof params.message === "string") {
    report.message = params.message.slice(0, MAX_PROGRESS_MESSAGE);
  }
  return report;
}

/** A call_tool request, or null when its shape is wrong. */
const CALL_FIELDS = ["server", "tool", "arguments"];
export function parseCallToolParams(params: unknown): CallToolParams | null {
  if (!hasOnly(params, CALL_FIELDS) || !isCallName(params.server) || !isCallName(params.tool)) {
    return null;
  }
  if (!isRecord(params.arguments)) return null;
  return { server: params.server, tool: params.tool, arguments: params.arguments };
}

/** The longest line the host reads from a sandbox: a longer one ends the run as a violation. */
export const MAX_SANDBOX_LINE_BYTES = 8 * 1024 * 1024;

/** Room on a call's line for what `JSON.stringify(params)` leaves out: the envelope and id. */
const CALL_ENVELOPE_BYTES = 256;

/**
 * The reply a call gets without being sent when its line would pass MAX_SANDBOX_LINE_BYTES (the
 * host would end the run for it), or null to send it. The worker asks before sending, so an
 * honest script's oversized call raises `ToolDenied` where it was made; the host still ends a
 * run that sends such a line anyway. Pure.
 */
export function oversizedCallReply(params: CallToolParams): ToolReply | null {
  const bytes = new TextEncoder().encode(JSON.stringify(params)).length + CALL_ENVELOPE_BYTES;
  if (bytes <= MAX_SANDBOX_LINE_BYTES) return null;
  const mib = (n: number) => (n / 2 ** 20).toFixed(1);
  return {
    error: {
      kind: "denied",
      message: `denied: the call's arguments are ${mib(bytes)} MiB as JSON, and one call may ` +
        `carry at most ${mib(MAX_SANDBOX_LINE_BYTES)} MiB; pass the data in smaller calls, or ` +
        "in a file the tool can read",
    },
  };
}

/**
 * The reply a call gets without being sent when the host would not read its line (its
 * arguments are too costly to parse: json_cost.ts), or null to send it: a `ToolDenied` where
 * the call was made, as for an oversized call. Checked with room for the envelope's keys and
 * levels, so that what passes here passes on the host. Pure.
 */
export function costlyCallReply(argumentsJson: string): ToolReply | null {
  const problem = jsonCostProblem(argumentsJson, {
    maxDepth: JSON_COST_LIMITS.maxDepth - CALL_ENVELOPE_LEVELS,
    maxCostlyKeys: JSON_COST_LIMITS.maxCostlyKeys - CALL_ENVELOPE_KEYS,
    maxContainers: JSON_COST_LIMITS.maxContainers - CALL_ENVELOPE_LEVELS,
    maxValues: JSON_COST_LIMITS.maxValues - CALL_ENVELOPE_KEYS,
  }, 0);
  if (problem === null) return null;
  return {
    error: {
      kind: "denied",
      message: `denied: the host does not read arguments like these: ${problem}; pass the ` +
        "data as a list of rows, or in a file the tool can read",
    },
  };
}

/** Levels (objects) and keys a call's line has around its arguments (message, params). */
const CALL_ENVELOPE_LEVELS = 2;
const CALL_ENVELOPE_KEYS = 8;

/**
 * The longest server or tool name a call may give (MCP's tool names are at most 128
 * characters). A name travels into denials, records, the result and the audit log: a sandbox
 * that sent megabytes of name made the host's reply as large, and several ran it out of memory.
 */
export const MAX_CALL_NAME_LENGTH = 200;

function isCallName(name: unknown): name is string {
  return typeof name === "string" && name.length <= MAX_CALL_NAME_LENGTH;
}

/** A relative path below outputs/: plain segments, none empty, "." or "..". */
export function isOutputName(name: string): boolean {
  return /^[\w.\- ]{1,100}(\/[\w.\- ]{1,100}){0,9}$/.test(name) &&
    name.split("/").every((part) => part !== "." && part !== "..");
}

/**
 * The files a sandbox says it wrote, checked and capped again on the host. `savedIn` is where
 * files over the cap are saved (inside the sandbox), when the profile has such a place.
 */
export function parseOutputs(value: unknown, capBytes: number, savedIn?: string): OutputFile[] {
  if (!Array.isArray(value)) return [];
  const files: OutputFile[] = [];
  let budget = Math.ceil(capBytes / 3) * 4; // base64 characters
  for (const f of value.slice(0, MAX_OUTPUT_FILES)) {
    if (!isRecord(f) || typeof f.name !== "string" || !isOutputName(f.name)) continue;
    const size = typeof f.size === "number" && f.size >= 0 ? f.size : 0;
    const data = typeof f.data === "string" && f.data.length <= budget && isBase64(f.data)
      ? f.data
      : undefined;
    if (data !== undefined) {
      budget -= data.length;
      files.push({ name: f.name, size, data });
    } else if (typeof f.saved_to === "string" && savedIn !== undefined) {
      // The sandbox only says it saved the file; where is the host's to state.
      files.push({ name: f.name, size, omitted: true, saved_to: `${savedIn}/${f.name}` });
    } else {
      files.push({ name: f.name, size, omitted: true });
    }
  }
  return files;
}

/** The reply to "execute", or null when its shape is wrong. */
export function parseExecuteReply(
  value: unknown,
  outputCap: number,
  savedIn: string | undefined,
): ExecuteReply | null {
  if (!isRecord(value)) return null;
  const outputs = parseOutputs(value.outputs, outputCap, savedIn);
  if (value.ok === true) {
    const result = value.result ?? null;
    return value.result_cut === true
      ? { ok: true, result, outputs, result_cut: true }
      : { ok: true, result, outputs };
  }
  if (value.ok !== false || !isRecord(value.error)) return null;
  const e = value.error;
  const error: ScriptError = {
    error_type: typeof e.error_type === "string" && PYTHON_NAME.test(e.error_type)
      ? e.error_type
      : "Error",
    message: typeof e.message === "string" ? e.message : "",
    traceback: typeof e.traceback === "string" ? e.traceback : "",
    lineno: typeof e.lineno === "number" ? e.lineno : null,
  };
  return value.fatal === true
    ? { ok: false, error, outputs, fatal: true }
    : { ok: false, error, outputs };
}
