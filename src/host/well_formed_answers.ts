/**
 * Every answer the server gives is well-formed Unicode. A script's result or error, or an
 * upstream's text passed on, may hold half a surrogate pair (`'\ud800'`): JSON escapes it, but a
 * client that decodes strings to UTF-8 (the Python SDK; Rust's serde_json refuses the escape) cannot
 * read the message, and waits for its answer until it times out. Such halves become U+FFFD: in
 * every handler's answer (`answerWellFormed`; the 2026-07-28 HTTP path answers through the SDK's
 * own transports, which nothing else wraps), and in every message of the transports we make
 * (`sendWellFormed`: answers written outside the handlers), and in every JSON body the HTTP server
 * sends (`wellFormedResponse`: errors the SDK writes itself). Notifications are made well-formed
 * where they are written (execute_code.ts, `liveFeedback`).
 */
import type { McpServer } from "@modelcontextprotocol/server";
import { wrapRequestHandlers } from "./request_handlers.ts";

/**
 * Makes every request handler of `server` answer with well-formed strings, results and error
 * messages alike. Call it before registering anything: it wraps the handlers as they are
 * installed.
 */
export function answerWellFormed(server: McpServer): void {
  wrapRequestHandlers(server, (_method, handler) => async (...args) => {
    try {
      return wellFormed(await handler(...args));
    } catch (error) {
      if (error instanceof Error) error.message = error.message.toWellFormed();
      throw error;
    }
  });
}

/**
 * Makes every message `transport` sends well-formed: answers, results and error messages alike,
 * notifications (a script's progress message, a task's output so far), and answers written
 * outside the request handlers (an Invalid Request under the client's own id).
 */
export function sendWellFormed<T extends { send: (message: never, ...rest: never[]) => unknown }>(
  transport: T,
): T {
  const send = transport.send.bind(transport) as (message: unknown, ...rest: unknown[]) => unknown;
  transport.send =
    ((message: unknown, ...rest: unknown[]) => send(wellFormed(message), ...rest)) as T["send"];
  return transport;
}

/**
 * `response` with a JSON body made well-formed: the SDK's own 2026-07-28 HTTP errors (a header and
 * body that disagree) quote the client's strings back, halves of surrogate pairs and all, before
 * any handler runs. JSON writes such a half as an escape (`\ud800`), so only a body holding one
 * is parsed again; streams are left as they are (their messages come from the handlers).
 */
export async function wellFormedResponse(response: Response): Promise<Response> {
  if (!/^application\/json\b/.test(response.headers.get("content-type") ?? "")) return response;
  const text = await response.text();
  const rebuilt = (body: string) =>
    new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  if (!LONE_SURROGATE_ESCAPE.test(text)) return rebuilt(text);
  try {
    return rebuilt(JSON.stringify(wellFormed(JSON.parse(text))));
  } catch {
    return rebuilt(text);
  }
}

/**
 * Whether JSON-RPC `text` (one message or a batch) holds a request whose id is a string that is
 * not well-formed. Its answer could carry neither that id (a client decoding to UTF-8 cannot read
 * it) nor a mended one (the HTTP transports find the waiting stream by the id): such a request
 * is refused whole, before any transport sees it.
 */
export function holdsIllFormedId(text: string): boolean {
  if (!LONE_SURROGATE_ESCAPE.test(text)) return false;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return false; // the transport says it is no JSON
  }
  return (Array.isArray(parsed) ? parsed : [parsed]).some((message) => {
    const id = (message as { id?: unknown } | null)?.id;
    return typeof id === "string" && !id.isWellFormed();
  });
}

/** A `\uD800`–`\uDFFF` escape in JSON text (not an escaped backslash before `ud800`). */
const LONE_SURROGATE_ESCAPE = /(?<!\\)(?:\\\\)*\\u[dD][89a-fA-F]/;

/** `value` with every string (and key) well-formed; what needs no change is returned as is. */
export function wellFormed<T>(value: T): T {
  if (typeof value === "string") return (value.isWellFormed() ? value : value.toWellFormed()) as T;
  if (Array.isArray(value)) {
    const items = value.map(wellFormed);
    return (items.every((item, i) => item === value[i]) ? value : items) as T;
  }
  if (value === null || typeof value !== "object" || !isPlain(value)) return value;
  let changed = false;
  const entries = Object.entries(value).map(([key, item]) => {
    const fixed: [string, unknown] = [wellFormed(key), wellFormed(item)];
    if (fixed[0] !== key || fixed[1] !== item) changed = true;
    return fixed;
  });
  return (changed ? Object.fromEntries(entries) : value) as T;
}

function isPlain(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
