/**
 * The messages between the host and one sandbox process (newline-delimited JSON-RPC 2.0).
 *
 *   host -> sandbox  notification "boot"        BootParams, first (launch parameters)
 *   sandbox -> host  notification "ready"       once Pyodide has booted
 *   host -> sandbox  request      "prepare"     PrepareParams -> {} (while idle in the pool)
 *   host -> sandbox  request      "execute"     ExecuteParams -> ExecuteReply (exactly once)
 *   sandbox -> host  notification "output"      OutputParams, while a script runs
 *   sandbox -> host  notification "progress"    ProgressParams, while a script runs
 *   sandbox -> host  request      "call_tool"   CallToolParams -> ToolReply, while a script runs
 *
 * The host checks every field of everything it receives: the sandbox runs untrusted code.
 */

export const METHOD_BOOT = "boot";
export const METHOD_READY = "ready";
export const METHOD_PREPARE = "prepare";
export const METHOD_EXECUTE = "execute";
export const METHOD_OUTPUT = "output";
export const METHOD_PROGRESS = "progress";
export const METHOD_CALL_TOOL = "call_tool";

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
  /** Wheels to install into site-packages before the run. */
  wheels?: { name: string; file: string; data: string }[];
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
}

export interface ScriptError {
  error_type: string;
  message: string;
  traceback: string;
  lineno: number | null;
}

export type ExecuteReply =
  | { ok: true; result: unknown; outputs?: OutputFile[] }
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

export type ToolErrorKind = "tool_error" | "denied" | "timeout" | "unavailable" | "invalid";

/** How a sandbox boots: sent by the host as the first message, so no host path is in argv. */
export interface BootParams {
  /** `pyodide.mjs` as a file URL. */
  pyodide_module_url: string;
  /** The verified memory snapshot. */
  snapshot_path: string;
  /** Host folders to mount: real host path -> absolute path inside Python. */
  mounts: { host: string; mount: string }[];
  /** Take SIGUSR1 as "interrupt the running script" (sessions). */
  interruptible: boolean;
  /** Revoke every permission after boot (the single binary; see sandbox_command.ts). */
  drop_permissions: boolean;
}

/** The boot message as the worker trusts it, or null when it is malformed. */
export function parseBootParams(value: unknown): BootParams | null {
  if (typeof value !== "object" || value === null) return null;
  const v = value as Record<string, unknown>;
  if (typeof v.pyodide_module_url !== "string" || typeof v.snapshot_path !== "string") return null;
  if (typeof v.interruptible !== "boolean" || typeof v.drop_permissions !== "boolean") return null;
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
  };
}
