/**
 * The messages between the host and one sandbox process (newline-delimited JSON-RPC 2.0).
 *
 *   sandbox -> host  notification "ready"       once Pyodide has booted
 *   host -> sandbox  request      "prepare"     PrepareParams -> {} (while idle in the pool)
 *   host -> sandbox  request      "execute"     ExecuteParams -> ExecuteReply (exactly once)
 *   sandbox -> host  notification "output"      OutputParams, while a script runs
 *   sandbox -> host  notification "progress"    ProgressParams, while a script runs
 *   sandbox -> host  request      "call_tool"   CallToolParams -> ToolReply, while a script runs
 *
 * The host checks every field of everything it receives: the sandbox runs untrusted code.
 */

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
  /** Where an omitted file was saved inside the sandbox (under a writable host folder). */
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
  | { ok: false; error: ScriptError; outputs?: OutputFile[] };

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
