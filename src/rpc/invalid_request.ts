/**
 * The answer to a line a client sent that is JSON but no JSON-RPC message: a batch (MCP has none
 * since 2025-06-18), an id that is null, an object, a fraction or past 2^53, a missing
 * `jsonrpc`. The SDK's transport dropped such a line with a log entry, and the client waited for
 * its answer until it timed out; JSON-RPC 2.0 answers it with Invalid Request. Pure.
 */
import type { JSONRPCMessage } from "@modelcontextprotocol/server";

export const INVALID_REQUEST = -32600;

/**
 * The error answer to `value`: under the id it gave, when that is a string or a number, so the
 * client's wait ends (JSON-RPC says null when the id cannot be read). Null for what looks like
 * an answer to one of our own requests: answering it could start an exchange of errors.
 */
export function invalidRequestAnswer(value: unknown): JSONRPCMessage | null {
  const record = typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Record<string, unknown>
    : null;
  if (record && !("method" in record) && ("result" in record || "error" in record)) return null;
  const id = record && (typeof record.id === "string" || Number.isFinite(record.id))
    ? record.id
    : null;
  const message = Array.isArray(value)
    ? "Invalid Request: batches are not supported (send one JSON-RPC message per line)"
    : "Invalid Request: not a JSON-RPC 2.0 message (its id must be a string or an integer)";
  return {
    jsonrpc: "2.0",
    id,
    error: { code: INVALID_REQUEST, message },
  } as unknown as JSONRPCMessage;
}

/** A message id as written in JSON: a string or an integer. */
const ID = String.raw`("(?:[^"\\]|\\.){0,200}"|-?\d{1,16})`;
const ID_AT_START = new RegExp(
  String.raw`^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*${ID}`,
);
const ID_AT_END = new RegExp(String.raw`"id"\s*:\s*${ID}\s*\}\s*$`);

/**
 * The error answer to a line longer than `maxBytes` that was skipped unread, under the id found
 * at its start or end (where clients write it), so the client's wait ends; null for what looks
 * like an answer to one of our own requests.
 */
export function oversizedAnswer(
  start: string,
  end: string,
  maxBytes: number,
): JSONRPCMessage | null {
  return unreadAnswer(start, end, `the message is over ${maxBytes} bytes and was not read`);
}

/** The same for a line skipped as too costly to parse (`why`: json_cost.ts's reason). */
export function costlyAnswer(start: string, end: string, why: string): JSONRPCMessage | null {
  return unreadAnswer(start, end, `the message was not read: ${why}`);
}

function unreadAnswer(start: string, end: string, what: string): JSONRPCMessage | null {
  if (/^\s*\{\s*"(?:result|error)"/.test(start)) return null;
  const found = ID_AT_START.exec(start)?.[1] ?? ID_AT_END.exec(end)?.[1];
  let id: string | number | null = null;
  try {
    const parsed = found === undefined ? null : JSON.parse(found);
    if (typeof parsed === "string" || Number.isSafeInteger(parsed)) id = parsed;
  } catch {
    // not an id after all
  }
  return {
    jsonrpc: "2.0",
    id,
    error: {
      code: INVALID_REQUEST,
      message: `Invalid Request: ${what}`,
    },
  } as unknown as JSONRPCMessage;
}
