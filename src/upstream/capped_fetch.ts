/**
 * The fetch of the HTTP transports, with the bound a stdio server's messages have
 * (`MAX_MESSAGE_BYTES`, message_lines.ts): a JSON reply past it, or one event of an event stream
 * past it, fails the body, and with it the request (a call raises ToolError in the script; a
 * `tools/list` fails its connect, and the server is shown unavailable with the reason). Without
 * it an HTTP upstream's 300 MB reply ended the host: V8 aborted the process (out of memory in
 * its Zone) measuring the parsed result.
 */
import { MAX_MESSAGE_BYTES } from "../rpc/message_lines.ts";
import { responseWithBody } from "../_util/response_with_body.ts";

export function cappedFetch(inner: typeof fetch, maxBytes = MAX_MESSAGE_BYTES): typeof fetch {
  return async (input, init) => {
    const response = await inner(input, init);
    if (!response.body) return response;
    const events = /\btext\/event-stream\b/i.test(response.headers.get("content-type") ?? "");
    const cap = events ? eventCap(maxBytes, requestId(init?.body)) : bodyCap(maxBytes);
    return responseWithBody(response, response.body.pipeThrough(cap));
  };
}

function tooLarge(maxBytes: number, what: string): Error {
  return new RangeError(
    `Cannot read the server's reply: ${what} is larger than ${maxBytes / (1024 * 1024)} MiB`,
  );
}

/** Passes at most `maxBytes` of a body. */
function bodyCap(maxBytes: number): TransformStream<Uint8Array, Uint8Array> {
  let seen = 0;
  return new TransformStream({
    transform(chunk, controller) {
      seen += chunk.length;
      if (seen > maxBytes) controller.error(tooLarge(maxBytes, "the message"));
      else controller.enqueue(chunk);
    },
  });
}

/**
 * Passes an event stream event by event (the lines up to a blank one; LF or CRLF line ends),
 * each whole once it has ended. An event past `maxBytes` is not passed: in its place comes an
 * error response to the request it answered, when its first bytes say which (a response sent in
 * an event stream is the only answer its request gets: failing the stream would leave the call
 * waiting for its timeout). The stream itself may run on as long as the server keeps it open.
 */
function eventCap(
  maxBytes: number,
  /** The request a POST sent, whose answer its stream carries (absent: a GET's stream). */
  sent: string | number | undefined,
): TransformStream<Uint8Array, Uint8Array> {
  let parts: Uint8Array[] = [];
  let size = 0;
  let head = "";
  let tail = "";
  let line = 0;
  let lastOfLine = -1;
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  const ended = (controller: TransformStreamDefaultController<Uint8Array>) => {
    if (size <= maxBytes) {
      for (const part of parts) controller.enqueue(part);
    } else {
      const message = tooLarge(maxBytes, "one event of its stream").message;
      const answer = errorAnswer(head, tail, sent, message);
      if (answer) controller.enqueue(encoder.encode(`data: ${answer}\n\n`));
    }
    parts = [];
    size = 0;
    head = "";
    tail = "";
  };
  return new TransformStream({
    transform(chunk, controller) {
      for (let from = 0; from < chunk.length;) {
        const lf = chunk.indexOf(0x0a, from);
        const end = lf === -1 ? chunk.length : lf + 1;
        const piece = chunk.subarray(from, end);
        if (head.length < EDGE_CHARS) head += decoder.decode(piece.subarray(0, EDGE_CHARS));
        tail = (tail + decoder.decode(piece.subarray(-EDGE_CHARS))).slice(-EDGE_CHARS);
        size += piece.length;
        if (size <= maxBytes) parts.push(piece);
        else parts = [];
        const text = lf === -1 ? end - from : end - from - 1;
        if (text > 0) lastOfLine = chunk[from + text - 1]!;
        line += text;
        from = end;
        if (lf === -1) break;
        // A blank line (nothing, or a lone CR) ends the event.
        if (line === 0 || (line === 1 && lastOfLine === 0x0d)) ended(controller);
        line = 0;
        lastOfLine = -1;
      }
    },
    flush(controller) {
      if (size > 0) ended(controller);
    },
  });
}

/** How much of an event's start and end is kept to tell what it answered. */
const EDGE_CHARS = 4096;

/** The id of the one JSON-RPC request a POST body holds, if it holds one. */
function requestId(body: unknown): string | number | undefined {
  if (typeof body !== "string") return undefined;
  try {
    const message = JSON.parse(body);
    const id = message?.id;
    return typeof message?.method === "string" && (typeof id === "string" || typeof id === "number")
      ? id
      : undefined;
  } catch {
    return undefined;
  }
}

/** An id in JSON, as the message's first or last key. */
const FIRST_ID =
  /^\s*(?:data:\s*)?\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,16})/;
const LAST_ID = /"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,16})\s*\}\s*$/;

/**
 * A JSON-RPC error response to the request a too-large message answers, or null when it
 * answers none: a message that names a method (a request or notification of the server's own)
 * is dropped. The request is the one its POST sent; on a GET's stream (the older HTTP+SSE
 * transport answers there), the id the message gives as its first or last key. An upstream could
 * name another of its own requests there; it could answer that one anyway.
 */
function errorAnswer(
  head: string,
  tail: string,
  sent: string | number | undefined,
  message: string,
): string | null {
  if (/"method"\s*:/.test(head)) return null;
  const given = FIRST_ID.exec(head)?.[1] ?? LAST_ID.exec(tail)?.[1];
  const id = sent ?? (given === undefined ? undefined : JSON.parse(given));
  if (id === undefined) return null;
  return JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32603, message } });
}
