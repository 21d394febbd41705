/**
 * Runs one script, as named stages:
 *
 *   1. request checks     request_checks.ts   profile, code size, timeout, input files, packages
 *   2. acquire a sandbox  sandbox_lease.ts    a fresh one from the pool, or the session's
 *   3. run                here                the script on that sandbox (launcher.ts), with
 *   4. the tool gate      tool_gate.ts          every tool call (the sandbox's call_tool
 *                                               requests, `gate.call`) decided, routed, recorded
 *   5. map to a result    result_mapping.ts   what happened -> ExecutionResult, once
 *                         shared_write_modes.ts   has taken back the write access the script
 *                                                 gave others in its read-write folders
 *
 * then scrubs the result of secrets and writes the audit record. Every decision about a
 * sandbox's requests is made on the host, never inside the sandbox.
 *
 * With tracing on, an execution is a span "execute_code" with children "sandbox.acquire",
 * "sandbox.run" and one "tool_call" per call the script makes (see ToolGate); they carry names
 * and outcomes, never the code, arguments, results or output.
 */
import { z } from "zod";
import { type Logger, withFields } from "../_util/log.ts";
import { NO_TRACING, type TraceSpan, type Tracing } from "../_util/tracing.ts";
import type { PackageSources } from "../packages/package_sources.ts";
import type { Redactor } from "../policy/redaction.ts";
import type { ProgressParams } from "../rpc/sandbox_protocol.ts";
import type { RawOutcome } from "../sandbox/launcher.ts";
import type { SandboxPool } from "../sandbox/pool.ts";
import type { Profile } from "../sandbox/profile.ts";
import { NEW_SESSION, SESSION_ID, type SessionManager } from "../sandbox/sessions.ts";
import type { ToolGateDeps } from "./tool_gate.ts";
import type { Approver } from "./approval.ts";
import { PENDING_CALLS_GRACE_MS, ToolGate } from "./tool_gate.ts";
import { type AuditRecord, auditRecord } from "./audit_log.ts";
import type { ExecutionResult } from "./execution_result.ts";
import { checkRequest, isRefusal } from "./request_checks.ts";
import { refusedResult, toExecutionResult, verifyOutputs } from "./result_mapping.ts";
import { acquireSandbox } from "./sandbox_lease.ts";
import { scrubbedLines } from "./scrubbed_lines.ts";
import { watchSharedModes } from "./shared_write_modes.ts";
import type { Owner } from "../_util/host_owner.ts";
import { scrubbedResult } from "./scrubbed_result.ts";

/** What a caller asks to run; the `execute_code` tool's input schema (and its only source). */
export const EXECUTE_REQUEST_SHAPE = {
  code: z.string().describe(
    "Python 3 source. Top-level await is allowed. The value of the last expression is returned as `result`.",
  ),
  timeout_s: z.number().positive().optional().describe(
    "Wall-clock limit in seconds (default from the profile, usually 30).",
  ),
  profile: z.string().optional().describe("Permission profile."),
  session_id: z.string().regex(SESSION_ID).optional().describe(
    'Keep variables and imports across calls: "new" opens a persistent session, and the result\'s session_id names it; pass that id in later calls to continue it. Omit for a fresh sandbox.',
  ),
  packages: z.array(z.string().max(100)).max(20).optional().describe(
    "Python packages to install first, with their dependencies: from the server's wheel folder, Pyodide's package set (numpy, pandas, ...) or a configured index, as the profile allows (a PEP 723 '# /// script' block in the code works too). A version constraint ('pandas>=2') is accepted but not evaluated: a source has one version of each package.",
  ),
  files: z.record(z.string(), z.union([z.string(), z.strictObject({ base64: z.string() })]))
    .optional()
    .describe(
      "Input files placed in the working folder before the run: name -> text, or {base64}. Files the script writes to outputs/ come back with the result.",
    ),
};

export const ExecuteRequestSchema = z.object(EXECUTE_REQUEST_SHAPE);
export type ExecuteRequest = z.infer<typeof ExecuteRequestSchema>;

export interface ExecuteOptions {
  signal?: AbortSignal;
  /** Runs under this profile instead of a named one (internal callers only, never clients). */
  profileOverride?: Profile;
  /** An internal run that checks code rather than runs it (the audit log says so). */
  purpose?: "analysis";
  onOutput?: (stream: "stdout" | "stderr", text: string) => void;
  onProgress?: (report: ProgressParams) => void;
  /** Who is asking (one MCP connection); sessions belong to their owner. */
  owner?: string;
  /** Asks a person about tool calls the profile says need approval (absent: nobody to ask). */
  approve?: Approver;
}

/**
 * Runs Python scripts. Implementations never throw: a refusal, a limit, a crash, a cancellation
 * or the script's own exception all come back as an `ExecutionResult` with `success: false` and
 * diagnostics that say which (see src/execution/outcomes.ts).
 */
export interface Executor {
  execute(request: ExecuteRequest, options?: ExecuteOptions): Promise<ExecutionResult>;
}

export interface SandboxExecutorDeps {
  pool: SandboxPool;
  /** Persistent sessions (absent: session_id is refused). */
  sessions?: SessionManager;
  /** Looks up a profile a caller may use; undefined when unknown or not allowed. */
  profile: (name: string) => Profile | undefined;
  /** Why a profile callers may name cannot be used now, if it cannot. */
  unavailableProfile?: (name: string) => string | undefined;
  defaultProfile: string;
  /** Where requested Python packages come from. */
  packages?: PackageSources;
  /** What the tool gate of each run needs, but the profile. */
  tools: Omit<ToolGateDeps, "profile" | "redact" | "approve" | "tracing" | "traceParent">;
  /** Removes secrets from everything a result carries. */
  redact: Redactor;
  log: Logger;
  /** Receives one record per execution (the audit log). */
  audit?: (record: AuditRecord) => void;
  /** Where spans go (absent: nowhere). */
  tracing?: Tracing;
  /** The server's own user and group (read-write folders' entries go back to them). */
  owner?: Owner;
}

export class SandboxExecutor implements Executor {
  readonly #deps: SandboxExecutorDeps;

  constructor(deps: SandboxExecutorDeps) {
    this.#deps = deps;
  }

  execute(request: ExecuteRequest, options: ExecuteOptions = {}): Promise<ExecutionResult> {
    const tracing = this.#deps.tracing ?? NO_TRACING;
    return tracing.span("execute_code", async (span) => {
      const result = await this.#execute(request, options, span);
      span.set({
        "codemode.profile": result.profile,
        "codemode.outcome": executionOutcome(result),
        "codemode.tool_calls": result.tool_calls.count,
      });
      if (!result.success) span.fail();
      return result;
    });
  }

  async #execute(
    asked: ExecuteRequest,
    options: ExecuteOptions,
    span: TraceSpan,
  ): Promise<ExecutionResult> {
    const id = crypto.randomUUID();
    const log = withFields(this.#deps.log, { execution: id });
    // A session keeps the profile it was opened with: a call that names none continues under it.
    const session = asked.session_id;
    const opened = asked.profile === undefined && session !== undefined && session !== NEW_SESSION
      ? this.#deps.sessions?.profileOf(options.owner ?? "local", session)
      : undefined;
    const request = opened === undefined ? asked : { ...asked, profile: opened };
    let result: ExecutionResult;
    try {
      result = scrubbedResult(await this.#run(request, options, log, span), this.#deps.redact);
    } catch (error) {
      // Not expected: every known failure is mapped in #run. Still an answer, never a throw.
      log.error("execution failed on the host", { error: String(error) });
      result = refusedResult({
        profile: request.profile ?? this.#deps.defaultProfile,
        outcome: "SANDBOX_CRASHED",
        message: `Cannot run: the host failed (${error instanceof Error ? error.message : error})`,
      });
    }
    if (this.#deps.audit) {
      this.#deps.audit(await auditRecord(id, request.code, result, options.purpose));
    }
    log.debug("execution finished", {
      profile: result.profile,
      success: result.success,
      error_type: result.diagnostics?.error_type,
      ms: result.duration_ms,
    });
    return result;
  }

  async #run(
    request: ExecuteRequest,
    options: ExecuteOptions,
    log: Logger,
    execution: TraceSpan,
  ): Promise<ExecutionResult> {
    const deps = this.#deps;
    const tracing = deps.tracing ?? NO_TRACING;
    const started = performance.now();
    const elapsed = () => performance.now() - started;

    // 1. Request checks.
    const checked = await checkRequest(request, deps, options.profileOverride, options.signal);
    if (isRefusal(checked)) return refusedResult(checked, elapsed());
    const { profile } = checked;

    // 2. Acquire a sandbox.
    const lease = await tracing.span("sandbox.acquire", async (span) => {
      const lease = await acquireSandbox({
        profile,
        sessionId: checked.sessionId,
        owner: options.owner ?? "local",
        signal: options.signal,
      }, deps);
      span.set({
        "codemode.session": checked.sessionId === undefined
          ? "none"
          : checked.sessionId === NEW_SESSION
          ? "new"
          : "resumed",
        "codemode.outcome": "sandbox" in lease ? "ok" : lease.outcome,
      });
      if (!("sandbox" in lease)) span.fail();
      return lease;
    }, execution);
    if (!("sandbox" in lease)) return refusedResult({ profile: profile.name, ...lease }, elapsed());

    // 3. Run, with 4. the tool gate answering the script's tool calls.
    const gate = new ToolGate({
      ...deps.tools,
      profile,
      redact: deps.redact,
      approve: options.approve,
      tracing,
      traceParent: execution,
    });
    // Live output reaches the client as it comes, scrubbed like the result (line by line).
    const live = options.onOutput ? scrubbedLines(deps.redact, options.onOutput) : undefined;
    const onProgress = options.onProgress;
    let outcome: RawOutcome | undefined;
    let released: ReturnType<typeof lease.release> = null;
    const sandbox = lease.sandbox;
    const sharedModes = watchSharedModes(profile, { owner: deps.owner });
    try {
      outcome = await tracing.span("sandbox.run", async (span) => {
        const ran = await sandbox.execute({
          code: checked.code,
          files: checked.files,
          pythonPackages: checked.pythonPackages,
          timeoutMs: checked.timeoutMs,
          memoryBytes: profile.limits.memory_mb * 1024 * 1024,
          outputBytes: profile.limits.output_bytes,
          outputFilesBytes: profile.limits.output_files_bytes,
          toolCalls: profile.limits.tool_calls,
        }, {
          callTool: (params, clock) => gate.call(params, clock),
          signal: options.signal,
          onOutput: live?.write,
          onProgress: onProgress &&
            ((report) => {
              // Scrubbing turns a number whose digits hold a secret into a string, which a
              // progress notification cannot carry: such a report is not sent.
              const shown = deps.redact.json(report);
              const numbers = [shown.progress, shown.total ?? 0];
              if (numbers.every((n) => typeof n === "number")) onProgress(shown);
            }),
          log,
        });
        span.set({ "codemode.outcome": runOutcome(ran) });
        return ran;
      }, execution);
    } finally {
      live?.flush();
      // A client that cancelled, before or during the grace, wants nothing more from this run;
      // nor does a script the host ended (its time ran out, its session was closed, a limit):
      // nobody will read its calls' answers.
      const ended = outcome?.interrupted || outcome?.stop;
      await gate.close(ended ? 0 : PENDING_CALLS_GRACE_MS, options.signal);
      released = lease.release(outcome);
      // Once the sandbox can no longer touch its folders (killed, or a session's paused): what
      // it shared in them is taken back, whether or not the run ended as it should.
      await sharedModes.sweep(log);
    }

    // 5. Map to a result.
    if (outcome.reply?.outputs) {
      outcome.reply.outputs = await verifyOutputs(outcome.reply.outputs, profile);
    }
    return toExecutionResult(outcome, {
      profile,
      calls: gate.calls,
      elapsedMs: elapsed(),
      session: lease.sessionId,
      lostSession: released?.lostSession,
    });
  }
}

/** An execution's outcome for its span: "ok", the host's outcome, or "script_error". */
function executionOutcome(result: ExecutionResult): string {
  if (result.success) return "ok";
  // A script's exception names are the script's own words (it may define any class): not kept.
  return result.diagnostics?.reported_by === "host"
    ? result.diagnostics.error_type
    : "script_error";
}

/** How the run ended, for its span: "ok", "script_error", or why the host stopped it. */
function runOutcome(outcome: RawOutcome): string {
  if (outcome.stop !== null) return outcome.stop.reason;
  return outcome.reply?.ok === true ? "ok" : "script_error";
}
