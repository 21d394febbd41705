/**
 * What stands in for a server's message too large to read (over stdio, a line; over HTTP, a
 * body or one event of a stream): an error answer to the request it answered, so that one call
 * fails and the connection goes on. Pure.
 */

/** Why a server's message was not read. */
export function tooLargeReason(maxBytes: number, what: string): string {
  return `Cannot read the server's reply: ${what} is larger than ${maxBytes / (1024 * 1024)} MiB`;
}

/** A message id as written in JSON: a string or an integer. */
const ID_VALUE = String.raw`"(?:[^"\\]|\\.){0,200}"|-?\d{1,16}`;
const ID = `(${ID_VALUE})`;
/** An event's other fields, before its `data:` (on an event stream). */
const EVENT_FIELDS = String.raw`(?:(?:event|id|retry)\b[^\r\n]*(?:\r\n|\r|\n))*`;
/** Where a message's members start. */
const MESSAGE_START = String.raw`^${EVENT_FIELDS}\s*(?:data:\s*)?\{\s*`;
/** `jsonrpc` and `id`, which writers put first or last. */
const JSONRPC = String.raw`"jsonrpc"\s*:\s*"2\.0"`;
const LEADING_MEMBERS = String.raw`(?:"(?:jsonrpc|id)"\s*:\s*(?:${ID_VALUE})\s*,\s*){0,2}`;
/** An id as the message's first key (after `jsonrpc`), or its last (before `jsonrpc`). */
const FIRST_ID = new RegExp(String.raw`${MESSAGE_START}(?:${JSONRPC}\s*,\s*)?"id"\s*:\s*${ID}`);
const LAST_ID = new RegExp(String.raw`"id"\s*:\s*${ID}\s*(?:,\s*${JSONRPC}\s*)?\}\s*$`);
/** An answer's start: `result` or `error` first, or after `jsonrpc` and `id`. */
const ANSWER_START = new RegExp(
  String.raw`${MESSAGE_START}${LEADING_MEMBERS}"(?:result|error)"\s*:`,
);
/** A request's or notification's start: its `method` where an answer has its result. */
const REQUEST_START = new RegExp(String.raw`${MESSAGE_START}${LEADING_MEMBERS}"method"\s*:`);

/**
 * The JSON-RPC error answer in place of a message not read, given its first bytes (`head`) and
 * last (`tail`); null when it answers nothing. A message that starts as a server's own request
 * or notification is dropped. Any other answers, on a POST's own stream, the request it carries
 * (`sent`): better that call fails than waits out its timeout. Elsewhere only a message that
 * starts as an answer does, under the id it gives first or last. A server could name another of
 * its own requests so; it could answer that one anyway.
 */
export function unreadReplyAnswer(
  head: string,
  tail: string,
  sent: string | number | undefined,
  message: string,
): { jsonrpc: "2.0"; id: string | number; error: { code: number; message: string } } | null {
  if (REQUEST_START.test(head)) return null;
  let id = sent;
  if (id === undefined) {
    if (!ANSWER_START.test(head)) return null;
    const given = FIRST_ID.exec(head)?.[1] ?? LAST_ID.exec(tail)?.[1];
    if (given === undefined) return null;
    id = JSON.parse(given) as string | number;
  }
  return { jsonrpc: "2.0", id, error: { code: INTERNAL_ERROR, message } };
}

const INTERNAL_ERROR = -32603;
