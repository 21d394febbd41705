/**
 * What one `execute_code` returns, and its readable text form.
 */
import type { ApprovalAnswer } from "./approval.ts";

import type { HostOutcome } from "./outcomes.ts";

export type Diagnostics =
  | {
    error_type: HostOutcome;
    /** The host stopped or refused the run: a fact the sandbox could not forge. */
    reported_by: "host";
    message: string;
    traceback?: string;
    lineno?: number | null;
  }
  | ScriptDiagnostics;

/** An exception the script raised, as the sandbox reported it (the script's own word). */
export interface ScriptDiagnostics {
  error_type: string;
  reported_by: "script";
  message: string;
  /** Python traceback without Pyodide-internal frames (absent for host-side limits). */
  traceback?: string;
  /** Line of the script where the error was raised (syntax errors: where parsing failed). */
  lineno?: number | null;
}

export interface ToolCallRecord {
  server: string;
  tool: string;
  /**
   * Allowed and answered, failed upstream, denied by policy, or still running when the script
   * ended (its effect is unknown).
   */
  outcome: "ok" | "error" | "denied" | "unfinished";
  duration_ms: number;
  error?: string;
  /** How the person answered, for a call that needed approval. */
  approval?: ApprovalAnswer;
}

/** A file the script wrote to outputs/ (data in base64 unless it was omitted for size). */
export interface ResultFile {
  name: string;
  size: number;
  mime_type: string;
  data?: string;
  omitted?: boolean;
  /** Where an omitted file was saved (a path inside the sandbox's writable host folder). */
  saved_to?: string;
  /** Where that is on the host. */
  saved_on_host?: string;
}

export interface ExecutionResult {
  success: boolean;
  stdout: string;
  stderr: string;
  /** The value of the script's last expression: JSON as is, otherwise its repr. */
  result: unknown;
  duration_ms: number;
  profile: string;
  tool_calls: { count: number; calls: ToolCallRecord[] };
  /** Messages the sandbox sent that broke the protocol and were ignored (0 normally). */
  protocol_violations: number;
  /** Files the script wrote to outputs/. */
  outputs: ResultFile[];
  /** What was cut at its size limit, when anything was (the text says where, and the limit). */
  truncated?: ("result" | "stdout" | "stderr")[];
  diagnostics: Diagnostics | null;
  /** The persistent session the run used, open for the next call (absent: none, or it ended). */
  session_id?: string;
}

/**
 * The result as text: indented when that keeps it near its size, else compact. Indenting adds
 * two spaces a level to every line, so a deeply nested result of a few KB would otherwise
 * become megabytes (an attacker's corpus: 6 KB nested 3,000 deep became 18 MB).
 */
function shownResult(result: unknown): string {
  if (typeof result === "string") return result;
  const compact = JSON.stringify(result);
  if (compact.length > INDENTED_UP_TO) return compact;
  const indented = JSON.stringify(result, null, 2);
  return indented.length <= 2 * compact.length + INDENTED_UP_TO ? indented : compact;
}

const INDENTED_UP_TO = 16_384;

/** The text block shown next to the structured result. */
export function formatResultText(r: ExecutionResult): string {
  const parts: string[] = [];
  parts.push(r.success ? `OK (${r.duration_ms} ms)` : `FAILED (${r.duration_ms} ms)`);
  if (r.session_id) parts.push(`session_id: ${r.session_id} (pass it to continue this session)`);
  if (r.stdout) parts.push(`--- stdout ---\n${r.stdout.replace(/\n$/, "")}`);
  if (r.stderr) parts.push(`--- stderr ---\n${r.stderr.replace(/\n$/, "")}`);
  if (r.result !== null && r.result !== undefined) {
    parts.push(`--- result ---\n${shownResult(r.result)}`);
  }
  if (r.outputs.length > 0) {
    const lines = r.outputs.map((f) =>
      `outputs/${f.name} (${f.size} bytes, ${f.mime_type})${
        f.saved_to
          ? ` too large to return: saved at ${f.saved_to}${
            f.saved_on_host ? ` (on the host: ${f.saved_on_host})` : ""
          }`
          : f.omitted
          ? " omitted: past what a result returns (the profile's output_files_bytes, and " +
            "50 files); a profile with a read-write folder saves such files there"
          : ""
      }`
    );
    parts.push(`--- files in outputs/ ---\n${lines.join("\n")}`);
  }
  if (r.tool_calls.count > 0) {
    parts.push(`--- tool calls (${r.tool_calls.count}) ---\n${toolCallLines(r.tool_calls.calls)}`);
  }
  if (r.diagnostics) {
    const d = r.diagnostics;
    const where = d.lineno ? ` (line ${d.lineno})` : "";
    // The host's word first when it stopped the script (a timeout's "the session's state is
    // kept"); the script's traceback says only where it was.
    const body = d.reported_by === "host" && d.traceback
      ? `${d.message}\n${d.traceback}`
      : d.traceback || d.message;
    parts.push(`--- error: ${d.error_type}${where} ---\n${body}`);
  }
  return parts.join("\n");
}

/** Failed calls shown one by one in the text; the structured result lists every call. */
const FAILED_CALLS_SHOWN = 20;

/**
 * The text's summary of the calls: successful ones counted per tool (a loop of 200 calls is one
 * line, not 200), each failed one with its error, up to `FAILED_CALLS_SHOWN`.
 */
export function toolCallLines(calls: readonly ToolCallRecord[]): string {
  const ok = new Map<string, { count: number; ms: number }>();
  const lines: (string | { tool: string })[] = [];
  let failed = 0;
  for (const c of calls) {
    const tool = `${c.server}.${c.tool}`;
    if (c.outcome === "ok") {
      const seen = ok.get(tool);
      if (seen) {
        seen.count++;
        seen.ms += c.duration_ms;
      } else {
        ok.set(tool, { count: 1, ms: c.duration_ms });
        lines.push({ tool });
      }
    } else if (++failed <= FAILED_CALLS_SHOWN) {
      lines.push(`${tool}: ${c.outcome} (${c.duration_ms} ms)${c.error ? ` ${c.error}` : ""}`);
    }
  }
  const text = lines.map((line) => {
    if (typeof line === "string") return line;
    const { count, ms } = ok.get(line.tool)!;
    const total = Math.round(ms * 10) / 10;
    return count === 1
      ? `${line.tool}: ok (${total} ms)`
      : `${line.tool}: ${count} ok (${total} ms in all)`;
  });
  if (failed > FAILED_CALLS_SHOWN) {
    text.push(`... and ${failed - FAILED_CALLS_SHOWN} more failed calls (see tool_calls)`);
  }
  return text.join("\n");
}
