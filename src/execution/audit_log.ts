/**
 * The audit log: one JSON line per execution, appended to a file (never stdout).
 */
import { dirname } from "node:path";
import { sha256Hex } from "../_util/digest.ts";
import type { ExecutionResult, ToolCallRecord } from "./execution_result.ts";
import { type HostOutcome, LIMIT_OUTCOMES } from "./outcomes.ts";
import { writeAllSync } from "../_util/write_all.ts";

export interface AuditRecord {
  time: string;
  execution_id: string;
  profile: string;
  code_sha256: string;
  code_chars: number;
  /** Each call: who, how it ended, how long, and how a person answered when one was asked. */
  tool_calls: Pick<ToolCallRecord, "server" | "tool" | "outcome" | "duration_ms" | "approval">[];
  /**
   * "ok"; a host outcome (TIMEOUT, MEMORY_LIMIT, ...); or "error" when the script raised an
   * exception (named in `script_error`: the script's own word, so it never decides `outcome`).
   */
  outcome: "ok" | "error" | HostOutcome;
  script_error?: string;
  limit_hit: HostOutcome | null;
  duration_ms: number;
  /** "analysis": the host checking code (a skill being saved, generated code), not a client's run. */
  purpose?: "analysis";
}

export async function auditRecord(
  id: string,
  code: string,
  result: ExecutionResult,
  purpose?: "analysis",
): Promise<AuditRecord> {
  const diagnostics = result.diagnostics;
  const errorType = diagnostics?.reported_by === "host" ? diagnostics.error_type : null;
  return {
    time: new Date().toISOString(),
    execution_id: id,
    profile: result.profile,
    code_sha256: await sha256Hex(code),
    code_chars: code.length,
    tool_calls: result.tool_calls.calls.map(({ server, tool, outcome, duration_ms, approval }) => ({
      server,
      tool,
      outcome,
      duration_ms,
      ...(approval ? { approval } : {}),
    })),
    outcome: result.success ? "ok" : errorType ?? "error",
    ...(diagnostics?.reported_by === "script"
      ? { script_error: diagnostics.error_type.slice(0, 200) }
      : {}),
    limit_hit: errorType !== null && LIMIT_OUTCOMES.has(errorType) ? errorType : null,
    duration_ms: result.duration_ms,
    ...(purpose ? { purpose } : {}),
  };
}

export interface AuditLog {
  write(record: AuditRecord): void;
  close(): void;
}

/**
 * Appends to `path` (created with its folder when missing). The folder is only touched when it
 * is missing, so a host that may write just the file can keep a log in an existing folder.
 */
export function openAuditLog(path: string): AuditLog {
  const open = () => Deno.openSync(path, { append: true, create: true });
  let file: Deno.FsFile;
  try {
    file = open();
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    Deno.mkdirSync(dirname(path), { recursive: true });
    file = open();
  }
  let isOpen = true;
  return {
    write(record) {
      if (!isOpen) return;
      writeAllSync(file, auditLine(record));
    },
    close() {
      if (isOpen) file.close();
      isOpen = false;
    },
  };
}

/**
 * One record as one line for any reader: JSON.stringify leaves U+0085, U+2028 and U+2029 as
 * they are, and readers such as Python's `str.splitlines()` break lines there (a script chooses
 * the tool names a record holds).
 */
export function auditLine(record: AuditRecord): string {
  const json = JSON.stringify(record).replace(
    /[\u0085\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  return json + "\n";
}
