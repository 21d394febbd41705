/**
 * Runs one script: checks the request against the profile, takes a fresh sandbox from the pool,
 * answers the sandbox's tool calls under host-side policy, and turns what happened into an
 * `ExecutionResult`. Every decision about a sandbox's requests is made here, never inside it.
 */
import { type Logger, withFields } from "../_util/log.ts";
import { checkCodeSize } from "../policy/code_size.ts";
import { decideToolCall } from "../policy/tool_policy.ts";
import type {
  CallToolParams,
  OutputFile,
  Packages,
  ProgressParams,
  ToolReply,
} from "../rpc/sandbox_protocol.ts";
import { largeOutputsFolder, type RawOutcome } from "../sandbox/launcher.ts";
import { PoolBusyError, type SandboxPool } from "../sandbox/pool.ts";
import type { Profile } from "../sandbox/profile.ts";
import type { ExecutionResult, ResultFile, ToolCallRecord } from "./execution_result.ts";
import { mimeType } from "./mime_types.ts";
import { type HostOutcome, scriptErrorType } from "./outcomes.ts";
import type { Redactor } from "../policy/redaction.ts";
import { type AuditRecord, auditRecord } from "./audit_log.ts";
import { checkInputFiles, type FileContent } from "../policy/input_files.ts";
import { SessionBusyError, SessionError, type SessionManager } from "../sandbox/sessions.ts";
import { type ResolvedWheel, scriptDependencies } from "../packages/wheels.ts";
import type { PackageSources } from "../packages/package_sources.ts";

/** The upstream tools as scripts see them. */
export interface ToolBridge {
  /** Python packages installed in every sandbox before the script runs (`mcp_tools`). */
  packages(): Packages;
  /** Changes whenever `packages()` does. */
  readonly version: number;
  /** Performs an allowed call. Never throws: failures come back as `{ error }`. */
  call(server: string, tool: string, args: Record<string, unknown>): Promise<ToolReply>;
}

export interface ExecuteRequest {
  code: string;
  timeout_s?: number;
  profile?: string;
  /** Run in this persistent session (opened on first use) instead of a fresh sandbox. */
  session_id?: string;
  /** Input files placed in the script's working folder: text, or {base64}. */
  files?: Record<string, FileContent>;
  /** Python packages to install first (besides those in a PEP 723 block of the code). */
  packages?: string[];
}

export interface ExecuteOptions {
  signal?: AbortSignal;
  /** Runs under this profile instead of a named one (internal callers only, never clients). */
  profileOverride?: Profile;
  onOutput?: (stream: "stdout" | "stderr", text: string) => void;
  onProgress?: (report: ProgressParams) => void;
  /** Who is asking (one MCP connection); sessions belong to their owner. */
  owner?: string;
}

export interface ExecutorDeps {
  pool: SandboxPool;
  /** Looks up a profile a caller may use; undefined when unknown or not allowed. */
  profile: (name: string) => Profile | undefined;
  defaultProfile: string;
  tools: ToolBridge;
  log: Logger;
  /** Removes secrets from everything a result carries. */
  redact: Redactor;
  /** Receives one record per execution (the audit log). */
  audit?: (record: AuditRecord) => void;
  /** Persistent sessions (absent: session_id is refused). */
  sessions?: SessionManager;
  /** Where requested Python packages come from. */
  packages?: PackageSources;
}

export type Executor = (
  request: ExecuteRequest,
  options?: ExecuteOptions,
) => Promise<ExecutionResult>;

export function createExecutor(deps: ExecutorDeps): Executor {
  return async (request, options = {}) => {
    const id = crypto.randomUUID();
    const log = withFields(deps.log, { execution: id });
    const result = deps.redact.json(await runOnce(deps, log)(request, options));
    if (deps.audit) deps.audit(await auditRecord(id, request.code, result));
    log.debug("execution finished", {
      profile: result.profile,
      success: result.success,
      error_type: result.diagnostics?.error_type,
      ms: result.duration_ms,
    });
    return result;
  };
}

function runOnce(deps: ExecutorDeps, log: Logger): Executor {
  return async (request, options = {}) => {
    const started = performance.now();
    const profileName = request.profile ?? deps.defaultProfile;
    const profile = options.profileOverride ?? deps.profile(profileName);
    const fail = (refusal: { error_type: HostOutcome; message: string }) =>
      failedBeforeRun(profileName, refusal, performance.now() - started);
    if (profile === undefined) {
      return fail({
        error_type: "POLICY_VIOLATION",
        message: `Profile "${profileName}" does not exist or may not be used by callers`,
      });
    }
    const tooBig = checkCodeSize(request.code, profile.limits);
    if (tooBig) return fail({ error_type: "POLICY_VIOLATION", message: tooBig });
    const timeoutS = request.timeout_s ?? profile.limits.timeout_s;
    if (!(timeoutS > 0) || timeoutS > profile.limits.max_timeout_s) {
      return fail({
        error_type: "POLICY_VIOLATION",
        message: `timeout_s must be above 0 and at most ${profile.limits.max_timeout_s}`,
      });
    }

    const files = checkInputFiles(request.files ?? {});
    if (typeof files === "string") return fail({ error_type: "POLICY_VIOLATION", message: files });
    const wanted = [...(request.packages ?? []), ...scriptDependencies(request.code)];
    let wheels: ResolvedWheel[] = [];
    if (wanted.length > 0) {
      const found = deps.packages
        ? await deps.packages.resolve(wanted, profile.net)
        : { wheels: [], problems: wanted.map((n) => `${n}: no package sources`) };
      if (found.problems.length > 0) {
        return fail({
          error_type: "PACKAGE_UNAVAILABLE",
          message: `Cannot install packages: ${found.problems.join("; ")}`,
        });
      }
      wheels = found.wheels;
    }

    const owner = options.owner ?? "local";
    const sessionId = request.session_id;
    let sandbox;
    try {
      if (sessionId !== undefined) {
        if (!deps.sessions) throw new SessionError("Sessions are not available here");
        sandbox = await deps.sessions.open(owner, sessionId, profile);
      } else {
        sandbox = await deps.pool.acquire(profile, options.signal);
      }
    } catch (error) {
      const busy = error instanceof PoolBusyError || error instanceof SessionBusyError;
      const type = busy
        ? "BUSY"
        : error instanceof SessionError
        ? "POLICY_VIOLATION"
        : "SANDBOX_CRASHED";
      return fail({ error_type: type, message: (error as Error).message });
    }

    const calls: ToolCallRecord[] = [];
    /** Allowed calls still waiting for their upstream answer. */
    const inFlight = new Set<Promise<unknown>>();
    let scriptEnded = false;
    const callTool = async (params: CallToolParams): Promise<ToolReply> => {
      const record: ToolCallRecord = {
        server: params.server.slice(0, 200),
        tool: params.tool.slice(0, 200),
        outcome: "denied",
        duration_ms: 0,
      };
      const decision = scriptEnded
        ? { allowed: false as const, reason: "the script has already ended" }
        : decideToolCall(params.server, params.tool, {
          allowed_tools: profile.allowed_tools,
          tool_calls: profile.limits.tool_calls,
        }, calls.length);
      calls.push(record);
      if (!decision.allowed) {
        record.error = decision.reason;
        return { error: { kind: "denied", message: `denied: ${decision.reason}` } };
      }
      record.outcome = "unfinished"; // until the upstream answers
      const t0 = performance.now();
      const call = deps.tools.call(params.server, params.tool, params.arguments);
      inFlight.add(call);
      const reply = await call.finally(() => inFlight.delete(call));
      record.duration_ms = round(performance.now() - t0);
      record.outcome = "error" in reply ? "error" : "ok";
      if ("error" in reply) record.error = reply.error.message.slice(0, 500);
      return reply;
    };

    let outcome: RawOutcome | undefined;
    const version = deps.tools.version;
    // Live output reaches the client as it comes, scrubbed like the result (line by line).
    const live = options.onOutput ? scrubbedLines(deps.redact, options.onOutput) : undefined;
    try {
      outcome = await sandbox.execute({
        code: request.code,
        packages: sandbox.preparedVersion === version ? undefined : deps.tools.packages(),
        files,
        wheels,
        timeoutMs: timeoutS * 1000,
        memoryBytes: profile.limits.memory_mb * 1024 * 1024,
        outputBytes: profile.limits.output_bytes,
        outputFilesBytes: profile.limits.output_files_bytes,
        toolCalls: profile.limits.tool_calls,
      }, {
        callTool,
        signal: options.signal,
        onOutput: live?.write,
        onProgress: options.onProgress &&
          ((report) =>
            options.onProgress!(
              report.message === undefined
                ? report
                : { ...report, message: deps.redact.text(report.message) },
            )),
        log,
      });
      sandbox.preparedVersion = version;
    } finally {
      // Calls a script started but did not wait for (asyncio.ensure_future) may still be
      // running upstream: wait a little, so the result and the audit log say what happened;
      // any still running are recorded "unfinished". No new call starts from here on.
      scriptEnded = true;
      live?.flush();
      await settleWithin([...inFlight], PENDING_CALLS_GRACE_MS);
      if (sessionId !== undefined) {
        deps.sessions!.release(owner, sessionId, outcome === undefined || endsSession(outcome));
      } else {
        // Killed at once; reaping the process need not delay the answer (the pool tracks it).
        void sandbox[Symbol.asyncDispose]();
      }
    }
    if (outcome.reply?.outputs) {
      outcome.reply.outputs = await verifyOutputs(outcome.reply.outputs, profile);
    }
    const result = toResult(outcome, profile, calls, performance.now() - started);
    if (sessionId !== undefined && endsSession(outcome) && result.diagnostics) {
      result.diagnostics.message += `; session "${sessionId}" was closed and its state is lost`;
    }
    return result;
  };
}

/** Whether a session's process cannot go on: stopped by the host, or its interpreter lost. */
function endsSession(outcome: RawOutcome): boolean {
  return outcome.stop !== null || (outcome.reply?.ok === false && outcome.reply.fatal === true);
}

function toResult(
  outcome: RawOutcome,
  profile: Profile,
  calls: ToolCallRecord[],
  elapsedMs: number,
): ExecutionResult {
  const limit = profile.limits.output_bytes;
  const base = {
    outputs: (outcome.reply?.outputs ?? []).map(describeOutput),
    stdout: outcome.stdout,
    stderr: outcome.stderr,
    duration_ms: round(elapsedMs),
    profile: profile.name,
    tool_calls: { count: calls.length, calls },
    protocol_violations: outcome.violations.length,
  };
  if (outcome.stop) {
    return {
      ...base,
      success: false,
      result: null,
      diagnostics: {
        error_type: outcome.stop.reason,
        reported_by: "host",
        message: outcome.stop.message,
      },
    };
  }
  const reply = outcome.reply!;
  if (outcome.interrupted) {
    return {
      ...base,
      success: false,
      result: null,
      diagnostics: {
        error_type: "TIMEOUT",
        reported_by: "host",
        message:
          `${outcome.interrupted}; the script was interrupted (KeyboardInterrupt) and the session's state is kept`,
        traceback: reply.ok ? undefined : reply.error.traceback.slice(0, limit),
      },
    };
  }
  if (reply.ok) {
    return { ...base, success: true, result: capResult(reply.result, limit), diagnostics: null };
  }
  // An uncaught ToolDenied is TOOL_DENIED only when the host did deny a call of this run, and
  // the message says which call, from the host's own record.
  const denied = calls.find((c) => c.outcome === "denied");
  if (reply.error.error_type === "ToolDenied" && denied) {
    return {
      ...base,
      success: false,
      result: null,
      diagnostics: {
        error_type: "TOOL_DENIED",
        reported_by: "host",
        message: `${denied.server}.${denied.tool} was denied: ${denied.error}`.slice(0, limit),
        traceback: reply.error.traceback.slice(0, limit),
        lineno: reply.error.lineno,
      },
    };
  }
  const errorType = scriptErrorType(reply.error.error_type);
  const claimed = errorType === reply.error.error_type ? "" : `${reply.error.error_type}: `;
  return {
    ...base,
    success: false,
    result: null,
    diagnostics: {
      error_type: errorType,
      reported_by: "script",
      message: (claimed + reply.error.message).slice(0, limit),
      traceback: reply.error.traceback.slice(0, limit),
      lineno: reply.error.lineno,
    },
  };
}

/**
 * The outputs as the host can state them: a returned file's size is its data's; a file the
 * sandbox says it saved must be there, in the profile's large-outputs folder on the host, and
 * its size is the file's. Sizes of files neither returned nor saved remain the script's word.
 */
async function verifyOutputs(files: OutputFile[], profile: Profile): Promise<OutputFile[]> {
  const folder = largeOutputsFolder(profile);
  return await Promise.all(files.map(async (file) => {
    if (file.data !== undefined) return { ...file, size: base64Bytes(file.data) };
    if (file.saved_to === undefined) return file;
    const { saved_to: savedTo, ...rest } = file;
    if (!folder) return rest;
    try {
      const stat = await Deno.lstat(`${folder.onHost}/${file.name}`);
      return stat.isFile ? { ...rest, size: stat.size, saved_to: savedTo } : rest;
    } catch {
      return rest; // not there: listed as omitted, not as saved
    }
  }));
}

function base64Bytes(data: string): number {
  return Math.floor(data.length * 3 / 4) - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0);
}

function describeOutput(file: OutputFile): ResultFile {
  return { ...file, mime_type: mimeType(file.name) };
}

/** The sandbox promises a capped result; the host does not take its word for it. */
function capResult(value: unknown, limit: number): unknown {
  const text = JSON.stringify(value) ?? "null";
  if (text.length <= limit) return value;
  return `${text.slice(0, limit)}... [result truncated: ${text.length} chars, limit ${limit}]`;
}

/**
 * Live output, scrubbed of secrets a whole line at a time (a chunk may end inside a secret),
 * as the result's stdout and stderr are scrubbed whole. A partial line is held until its end or
 * the end of the run, however long: the sandbox's output cap bounds it.
 */
function scrubbedLines(
  redact: Redactor,
  emit: (stream: "stdout" | "stderr", text: string) => void,
) {
  const held = { stdout: "", stderr: "" };
  const send = (stream: "stdout" | "stderr", text: string) => {
    if (text !== "") emit(stream, redact.text(text));
  };
  return {
    write(stream: "stdout" | "stderr", text: string): void {
      const joined = held[stream] + text;
      const end = joined.lastIndexOf("\n") + 1;
      send(stream, joined.slice(0, end));
      held[stream] = joined.slice(end);
    },
    flush(): void {
      for (const stream of ["stdout", "stderr"] as const) {
        send(stream, held[stream]);
        held[stream] = "";
      }
    },
  };
}

/** How long calls still running when a script ends may take to finish before the result. */
const PENDING_CALLS_GRACE_MS = 5000;

/** Waits until every promise has settled, or `ms` has passed. */
async function settleWithin(promises: Promise<unknown>[], ms: number): Promise<void> {
  if (promises.length === 0) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    Promise.allSettled(promises),
    new Promise((resolve) => timer = setTimeout(resolve, ms)),
  ]);
  clearTimeout(timer);
}

/** A result for a run that never reached a sandbox (a refusal the host decided). */
export function failedBeforeRun(
  profile: string,
  refusal: { error_type: HostOutcome; message: string },
  ms = 0,
): ExecutionResult {
  return {
    success: false,
    stdout: "",
    stderr: "",
    result: null,
    duration_ms: round(ms),
    profile,
    tool_calls: { count: 0, calls: [] },
    protocol_violations: 0,
    outputs: [],
    diagnostics: { ...refusal, reported_by: "host" },
  };
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
