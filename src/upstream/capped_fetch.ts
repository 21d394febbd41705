/**
 * The fetch of the HTTP transports, with the bound a stdio server's messages have
 * (`MAX_MESSAGE_BYTES`, message_lines.ts): a body the SDK reads whole past it, or one event of an
 * event stream the SDK reads event by event past it, fails the body, and with it the request (a
 * call raises ToolError in the script; a `tools/list` fails its connect, and the server is shown
 * unavailable with the reason). Without it an HTTP upstream's 300 MB reply ended the host: V8
 * aborted the process (out of memory in its Zone) measuring the parsed result. The stream of a
 * POSTed request is noted in `streams`, to be ended once its request is answered or cancelled.
 */
import { MAX_MESSAGE_BYTES } from "../rpc/message_lines.ts";
import { responseWithBody } from "../_util/response_with_body.ts";
import { concatBytes } from "../_util/bytes.ts";
import type { RequestStreams } from "./request_streams.ts";

export function cappedFetch(
  inner: typeof fetch,
  options: { maxBytes?: number; streams?: RequestStreams } = {},
): typeof fetch {
  const maxBytes = options.maxBytes ?? MAX_MESSAGE_BYTES;
  return async (input, init) => {
    const sent = postedMessage(init?.body);
    // A request given up on (its timeout, or its script ended): nobody reads its stream.
    if (sent.cancels !== undefined) options.streams?.end(sent.cancels);
    const response = await inner(input, init);
    if (!response.body) return response;
    const method = init?.method ?? (input instanceof Request ? input.method : "GET");
    if (!readAsEvents(response, method, sent.requestId)) {
      return responseWithBody(response, response.body.pipeThrough(bodyCap(maxBytes)));
    }
    const cap = eventCap(maxBytes, sent.requestId);
    if (sent.requestId !== undefined && options.streams) {
      cap.forget = options.streams.opened(sent.requestId, cap.end);
    }
    return responseWithBody(response, response.body.pipeThrough(cap.stream));
  };
}

/**
 * Whether the SDK reads this response event by event, as it decides: a successful answer (not
 * 202) whose media type is `text/event-stream`, to a GET or a POSTed request. Anything else it
 * reads whole (an error status, a reply to a notification, `application/json; x="text/event-
 * stream"`: each was read whole past the per-event bound, 60 MiB and more). A header with a
 * comma is taken as read whole: the SDK's parser may refuse it and read it whole.
 */
function readAsEvents(response: Response, method: string, requestId: unknown): boolean {
  const type = response.headers.get("content-type") ?? "";
  const essence = (type.split(";", 1)[0] ?? "").trim().toLowerCase();
  return response.ok && response.status !== 202 && essence === "text/event-stream" &&
    !type.includes(",") && (method.toUpperCase() === "GET" || requestId !== undefined);
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
 * Passes an event stream, holding back each event until it has ended (a blank line; lines end
 * in CR, LF or CRLF, as the format allows). An event past `maxBytes` is not passed: in its place
 * comes an error answer to the request it answered, when its edges say which (a response sent
 * in an event stream is the only answer its request gets: failing the stream would leave the
 * call waiting for its timeout). The stream itself may run on as long as the server keeps it
 * open. One pass over the bytes, no work per line or event beyond a few comparisons, and what is
 * held is the unfinished event's bytes (a hostile stream of short lines made an earlier version
 * hold 70 times its size, and of blank lines spend 190 times the parser's time).
 */
function eventCap(
  maxBytes: number,
  /** The request a POST sent, whose answer its stream carries (absent: a GET's stream). */
  sent: string | number | undefined,
): EventCap {
  /**
   * The unfinished event's bytes from earlier chunks, while it is within bounds: copied into one
   * buffer that doubles as it fills (an array of the chunks' tails held hundreds of bytes for
   * each byte when a server sent its event one byte a chunk).
   */
  const held = new GrowingBytes();
  /** Bytes of the unfinished event so far. */
  let size = 0;
  /** A too-large event's first and last bytes, to tell what it answered. */
  let tooBig: { head: Uint8Array; tail: Uint8Array } | null = null;
  let lineHasBytes = false;
  let afterCR = false;
  const encoder = new TextEncoder();
  let output: TransformStreamDefaultController<Uint8Array> | undefined;
  const cap: EventCap = {
    stream: new TransformStream({
      start(controller) {
        output = controller;
      },
      transform,
      flush(controller) {
        cap.forget();
        if (held.length > 0) controller.enqueue(held.take());
      },
    }),
    // What it holds is let go, the reader reads what was passed and then the end, and the
    // server's body is cancelled (its connection closed).
    end: () => {
      held.clear();
      tooBig = null;
      try {
        output?.terminate();
      } catch { /* already ended */ }
    },
    forget: () => {},
  };
  return cap;

  function transform(chunk: Uint8Array, controller: TransformStreamDefaultController<Uint8Array>) {
    // chunk[passFrom, eventStart) holds whole events within bounds, not passed on yet; a
    // too-large event's bytes of this chunk from tailFrom on are not in its tail yet.
    let passFrom = 0;
    let eventStart = 0;
    let tailFrom = 0;
    const pass = () => {
      if (eventStart > passFrom) controller.enqueue(chunk.subarray(passFrom, eventStart));
      passFrom = eventStart;
    };
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!;
      size++;
      if (byte === LF && afterCR) {
        afterCR = false; // the LF of a CRLF: its line ended at the CR
      } else if (byte === LF || byte === CR) {
        afterCR = byte === CR;
        if (lineHasBytes) lineHasBytes = false;
        else {
          // A blank line: the event ends here.
          const end = i + 1;
          if (tooBig) {
            pass();
            const tail = last([tooBig.tail, chunk.subarray(tailFrom, end)]);
            const message = tooLarge(maxBytes, "one event of its stream").message;
            const answer = errorAnswer(decode(tooBig.head), decode(tail), sent, message);
            if (answer) controller.enqueue(encoder.encode(`data: ${answer}\n\n`));
            passFrom = end;
            tooBig = null;
          } else if (held.length > 0) {
            // Its start came in earlier chunks, before anything of this one was passed.
            controller.enqueue(held.take());
          }
          eventStart = end;
          size = 0;
        }
      } else {
        afterCR = false;
        lineHasBytes = true;
      }
      if (size > maxBytes && !tooBig) {
        const parts = [held.take(), chunk.subarray(eventStart, i + 1)];
        tooBig = { head: first(parts), tail: last(parts) };
        tailFrom = i + 1;
      }
    }
    // Whole events go on; the unfinished one waits for its end, or is dropped as too large.
    pass();
    if (tooBig) tooBig.tail = last([tooBig.tail, chunk.subarray(Math.max(eventStart, tailFrom))]);
    else if (eventStart < chunk.length) held.append(chunk.subarray(eventStart));
  }
}

interface EventCap {
  stream: TransformStream<Uint8Array, Uint8Array>;
  /** Ends the stream now (its request is over). */
  end: () => void;
  /** Called once the stream has ended by itself. */
  forget: () => void;
}

/** Bytes appended into one buffer that doubles as it fills; `take()` empties it. */
class GrowingBytes {
  #buffer = new Uint8Array(0);
  length = 0;

  append(bytes: Uint8Array): void {
    if (this.length + bytes.length > this.#buffer.length) {
      const grown = new Uint8Array(Math.max(4096, 2 * (this.length + bytes.length)));
      grown.set(this.#buffer.subarray(0, this.length));
      this.#buffer = grown;
    }
    this.#buffer.set(bytes, this.length);
    this.length += bytes.length;
  }

  take(): Uint8Array {
    const bytes = this.#buffer.slice(0, this.length);
    this.clear();
    return bytes;
  }

  clear(): void {
    this.#buffer = new Uint8Array(0);
    this.length = 0;
  }
}

const LF = 0x0a;
const CR = 0x0d;

/** The first `EDGE_BYTES` of `parts`, joined. */
function first(parts: Uint8Array[]): Uint8Array {
  const out: Uint8Array[] = [];
  let left = EDGE_BYTES;
  for (const part of parts) {
    if (left === 0) break;
    out.push(part.subarray(0, left));
    left -= out.at(-1)!.length;
  }
  return concatBytes(out);
}

/** The last `EDGE_BYTES` of `parts`, joined. */
function last(parts: Uint8Array[]): Uint8Array {
  const out: Uint8Array[] = [];
  let left = EDGE_BYTES;
  for (let i = parts.length - 1; i >= 0 && left > 0; i--) {
    out.unshift(parts[i]!.subarray(Math.max(0, parts[i]!.length - left)));
    left -= out[0]!.length;
  }
  return concatBytes(out);
}

function decode(bytes: Uint8Array): string {
  return new TextDecoder().decode(bytes);
}

/** How much of an event's start and end is kept to tell what it answered. */
const EDGE_BYTES = 4096;

/**
 * What a POST body holds: the id of the one JSON-RPC request it sends, or the id of the request a
 * `notifications/cancelled` it sends gives up on.
 */
function postedMessage(
  body: unknown,
): { requestId?: string | number; cancels?: string | number } {
  if (typeof body !== "string") return {};
  let message;
  try {
    message = JSON.parse(body);
  } catch {
    return {};
  }
  const isId = (id: unknown): id is string | number =>
    typeof id === "string" || typeof id === "number";
  if (typeof message?.method !== "string") return {};
  if (isId(message.id)) return { requestId: message.id };
  const cancelled = message.params?.requestId;
  return message.method === "notifications/cancelled" && isId(cancelled)
    ? { cancels: cancelled }
    : {};
}

/** An id in JSON, as the message's first or last key. */
const FIRST_ID =
  /^\s*(?:data:\s*)?\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,16})/;
const LAST_ID = /"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,16})\s*\}\s*$/;

/**
 * A JSON-RPC error response to the request a too-large message answers, or null when it
 * answers none. On a POST's stream, the request it sent, whatever the message is (a result whose
 * first bytes named a `method` was dropped, and its call waited out its timeout). On a GET's
 * stream (the older HTTP+SSE transport answers there), the id the message gives as its first or
 * last key, and a message that names a method (a request or notification of the server's own) is
 * dropped. An upstream could name another of its own requests there; it could answer that one
 * anyway.
 */
function errorAnswer(
  head: string,
  tail: string,
  sent: string | number | undefined,
  message: string,
): string | null {
  let id = sent;
  if (id === undefined) {
    if (/"method"\s*:/.test(head)) return null;
    const given = FIRST_ID.exec(head)?.[1] ?? LAST_ID.exec(tail)?.[1];
    if (given === undefined) return null;
    id = JSON.parse(given) as string | number;
  }
  return JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32603, message } });
}
