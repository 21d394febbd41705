/**
 * Stage: mapping what happened to an `ExecutionResult`. `toDiagnostics` is the one place where a
 * failure (a limit the host enforced, a refusal, a crash, or the script's own exception) becomes
 * the diagnostics a caller reads; everything that builds a failed result goes through it.
 */
import type { OutputFile, ScriptError } from "../rpc/sandbox_protocol.ts";
import { largeOutputsFolder, type RawOutcome } from "../sandbox/launcher.ts";
import type { Profile } from "../sandbox/profile.ts";
import type {
  Diagnostics,
  ExecutionResult,
  ResultFile,
  ToolCallRecord,
} from "./execution_result.ts";
import { mimeType } from "./mime_types.ts";
import { type HostOutcome, OUTCOMES, scriptErrorType } from "./outcomes.ts";

/** Why a run failed: the host's word, or an exception the script raised (the script's word). */
export type Failure =
  | { stoppedBy: HostOutcome; message: string; traceback?: string; lineno?: number | null }
  | {
    raised: ScriptError;
    /** The host's record of a call it denied in this run (a ToolDenied may be the script's own). */
    deniedCall?: ToolCallRecord;
  };

/** The diagnostics for a failure; texts the sandbox wrote are cut to `limit` characters. */
export function toDiagnostics(failure: Failure, limit: number): Diagnostics {
  if ("stoppedBy" in failure) {
    const { stoppedBy, message, traceback, lineno } = failure;
    return {
      error_type: stoppedBy,
      reported_by: "host",
      message,
      ...(traceback === undefined ? {} : { traceback: traceback.slice(0, limit) }),
      ...(lineno === undefined ? {} : { lineno }),
    };
  }
  const { raised, deniedCall } = failure;
  // An uncaught ToolDenied is TOOL_DENIED only when the host did deny a call of this run, and
  // the message says which call, from the host's own record.
  if (raised.error_type === OUTCOMES.TOOL_DENIED.raises.python && deniedCall) {
    return {
      error_type: "TOOL_DENIED",
      reported_by: "host",
      message: `${deniedCall.server}.${deniedCall.tool} was denied: ${deniedCall.error}`.slice(
        0,
        limit,
      ),
      traceback: raised.traceback.slice(0, limit),
      lineno: raised.lineno,
    };
  }
  const errorType = scriptErrorType(raised.error_type);
  const claimed = errorType === raised.error_type ? "" : `${raised.error_type}: `;
  return {
    error_type: errorType,
    reported_by: "script",
    message: (claimed + raised.message).slice(0, limit),
    traceback: raised.traceback.slice(0, limit),
    lineno: raised.lineno,
  };
}

export interface RunFacts {
  profile: Profile;
  /** The tool gate's record of the run's calls. */
  calls: ToolCallRecord[];
  elapsedMs: number;
  /** The persistent session the run used, if any. */
  session?: string;
  /** The session whose state was lost with this run, if any. */
  lostSession?: string;
}

/** The result of a run that reached a sandbox. */
export function toExecutionResult(outcome: RawOutcome, facts: RunFacts): ExecutionResult {
  const { profile, calls } = facts;
  const limit = profile.limits.output_bytes;
  const base = {
    outputs: (outcome.reply?.outputs ?? []).map(describeOutput),
    stdout: outcome.stdout,
    stderr: outcome.stderr,
    duration_ms: round(facts.elapsedMs),
    profile: profile.name,
    tool_calls: { count: calls.length, calls },
    protocol_violations: outcome.violations.length,
    ...(outcome.truncated.length > 0 && { truncated: outcome.truncated }),
    // The session goes on: its id, for the next call (a new session's only way to learn it).
    ...(facts.session !== undefined && facts.lostSession === undefined &&
      { session_id: facts.session }),
  };
  const reply = outcome.reply;
  let diagnostics: Diagnostics;
  if (outcome.stop || reply === null) {
    const stop = outcome.stop ?? {
      reason: "SANDBOX_CRASHED" as const,
      message: "The sandbox gave no answer",
    };
    diagnostics = toDiagnostics({ stoppedBy: stop.reason, message: stop.message }, limit);
  } else if (outcome.interrupted) {
    diagnostics = toDiagnostics({
      stoppedBy: "TIMEOUT",
      message:
        `${outcome.interrupted}; the script was interrupted (KeyboardInterrupt) and the session's state is kept`,
      traceback: reply.ok ? undefined : reply.error.traceback,
    }, limit);
  } else if (reply.ok) {
    const capped = capResult(reply.result, limit);
    const truncated = [
      ...outcome.truncated,
      ...(reply.result_cut || capped.cut ? ["result" as const] : []),
    ];
    return {
      ...base,
      success: true,
      result: capped.value,
      ...(truncated.length > 0 && { truncated }),
      diagnostics: null,
    };
  } else {
    const deniedCall = calls.find((c) => c.outcome === "denied");
    diagnostics = toDiagnostics({ raised: reply.error, deniedCall }, limit);
  }
  if (facts.lostSession !== undefined) {
    diagnostics.message += `; session "${facts.lostSession}" was closed and its state is lost`;
  }
  return { ...base, success: false, result: null, diagnostics };
}

/** A result for a run that never reached a sandbox (a refusal the host decided). */
export function refusedResult(
  refusal: { profile: string; outcome: HostOutcome; message: string },
  elapsedMs = 0,
): ExecutionResult {
  return {
    success: false,
    stdout: "",
    stderr: "",
    result: null,
    duration_ms: round(elapsedMs),
    profile: refusal.profile,
    tool_calls: { count: 0, calls: [] },
    protocol_violations: 0,
    outputs: [],
    diagnostics: toDiagnostics(
      { stoppedBy: refusal.outcome, message: refusal.message },
      Infinity,
    ),
  };
}

/**
 * The outputs as the host can state them: a returned file's size is its data's; a file the
 * sandbox says it saved must be there, in the profile's large-outputs folder on the host, and
 * its size is the file's. Sizes of files neither returned nor saved remain the script's word.
 */
export async function verifyOutputs(files: OutputFile[], profile: Profile): Promise<OutputFile[]> {
  const folder = largeOutputsFolder(profile);
  return await Promise.all(files.map(async (file) => {
    if (file.data !== undefined) return { ...file, size: base64Bytes(file.data) };
    if (file.saved_to === undefined) return file;
    const { saved_to: savedTo, ...rest } = file;
    if (!folder) return rest;
    try {
      const stat = await Deno.lstat(`${folder.onHost}/${file.name}`);
      return stat.isFile
        ? {
          ...rest,
          size: stat.size,
          saved_to: savedTo,
          saved_on_host: `${folder.onHost}/${file.name}`,
        }
        : rest;
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

/**
 * The sandbox promises a capped result; the host does not take its word for it. A result nested
 * deeper than `MAX_RESULT_DEPTH` comes back as its JSON text: what handles it after this (the
 * scrubbing of secrets, the text a client shows) may walk it level by level.
 */
export function capResult(value: unknown, limit: number): { value: unknown; cut: boolean } {
  const text = JSON.stringify(value) ?? "null";
  const deep = depthOver(value, MAX_RESULT_DEPTH);
  if (text.length <= limit && !deep) return { value, cut: false };
  const nested = `nested deeper than ${MAX_RESULT_DEPTH} levels`;
  if (text.length <= limit) {
    return { value: `${text} [result given as its JSON text: ${nested}]`, cut: false };
  }
  const kept = text.slice(0, limit);
  const why = deep ? `${nested}; ` : "";
  return {
    value: `${kept}... [result truncated: ${why}${text.length} chars, limit ${limit}]`,
    cut: true,
  };
}

export const MAX_RESULT_DEPTH = 100;

/**
 * Whether a JSON value nests arrays and objects deeper than `max` (walked without recursion;
 * only containers are held, with their depths in a second stack: a pair for every value held
 * took 1.8 s over a million empty objects).
 */
export function depthOver(value: unknown, max: number): boolean {
  const containers: object[] = [];
  const depths: number[] = [];
  const hold = (item: unknown, depth: number) => {
    if (item === null || typeof item !== "object") return false;
    if (depth >= max) return true;
    containers.push(item);
    depths.push(depth);
    return false;
  };
  if (hold(value, 0)) return true;
  while (containers.length > 0) {
    const item = containers.pop()!;
    const depth = depths.pop()! + 1;
    if (Array.isArray(item)) {
      for (let i = 0; i < item.length; i++) if (hold(item[i], depth)) return true;
    } else {
      for (const child of Object.values(item)) if (hold(child, depth)) return true;
    }
  }
  return false;
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
