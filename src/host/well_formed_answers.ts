/**
 * Every answer the server gives is well-formed Unicode. A script's result or error, or an
 * upstream's text passed on, may hold half a surrogate pair (`'\ud800'`): JSON escapes it, but a
 * client that decodes strings to UTF-8 (the Python SDK; Rust's serde_json refuses the escape) cannot
 * read the message, and waits for its answer until it times out. Such halves become U+FFFD: in
 * every handler's answer (`answerWellFormed`; the 2026-07-28 HTTP path answers through the SDK's
 * own transports, which nothing else wraps), and in every message of the transports we make
 * (`sendWellFormed`: answers written outside the handlers). Notifications are made well-formed
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
