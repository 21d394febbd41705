/**
 * The fetch of the HTTP transports, with the bounds a stdio server's messages have
 * (`MAX_MESSAGE_BYTES`, message_lines.ts; JSON too costly to parse, json_cost.ts): a body the SDK
 * reads whole past them, or one event of an event stream the SDK reads event by event past them,
 * fails the body (an event is replaced by an error answer), and with it the request (a
 * call raises ToolError in the script; a `tools/list` fails its connect, and the server is shown
 * unavailable with the reason). Without it an HTTP upstream's 300 MB reply ended the host: V8
 * aborted the process (out of memory in its Zone) measuring the parsed result. What all the
 * replies of one fetch made here (one server's) hold while they are read is bounded by its
 * `budget` (reply_budget.ts), and how often it resumes streams by `resumptions`. The
 * stream of a POSTed request is noted in `streams`, to be ended once its request is answered or
 * cancelled.
 */
import { MAX_MESSAGE_BYTES } from "../rpc/message_lines.ts";
import { responseWithBody } from "../_util/response_with_body.ts";
import { concatBytes } from "../_util/bytes.ts";
import type { RequestStreams } from "./request_streams.ts";
import { ReplyBudget } from "./reply_budget.ts";
import { TokenBucket } from "../_util/token_bucket.ts";
import { tooLargeReason, unreadReplyAnswer } from "./unread_reply.ts";
import { jsonCostProblem, SCANNED_FROM_CHARS } from "../rpc/json_cost.ts";

/**
 * The largest error body read: the SDK puts it in the call's error, of which a script sees
 * 4,000 characters (one of 9 MiB reached the script whole, 200 times).
 */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;

/**
 * How often a server may have a stream resumed (a GET with `Last-Event-ID`; for the older
 * HTTP+SSE transport, any GET): 10 at once, then 2 a second. The SDK resumes a request's stream
 * for as long as the server keeps ending it after a new event id, also for a request it has
 * given up on (200 timed-out calls kept an idle host making 200 requests a second), and the
 * older transport reconnects its stream after the server's `retry:`, 0 included (420 a second).
 * One refused is retried a few times, then given up.
 */
export const RESUMPTIONS = { burst: 10, perSecond: 2 };

/**
 * Answers to a server's own requests (its pings, a sampling request the client refuses) POSTed
 * at once, per server: one more is not sent. A server answers them with a bare status; one that
 * sent 2,000 pings a second and never answered the POSTs took the host to 20,000 open files and
 * 2 GB, after which no sandbox could start, and Deno panicked.
 */
export const ANSWERS_AT_ONCE = 4;

/**
 * How long a POST whose reply is not read (a notification, an answer, any POST of the older
 * transport) may wait for the server's status before it is given up.
 */
export const ACKNOWLEDGE_MS = 10_000;

export function cappedFetch(
  inner: typeof fetch,
  options: {
    maxBytes?: number;
    streams?: RequestStreams;
    budget?: ReplyBudget;
    resumptions?: TokenBucket;
    /**
     * The older HTTP+SSE transport: every answer comes on its GET stream, and a POST's reply
     * is only an acknowledgment, which the SDK reads whole (one of endless events took the
     * host past 1.6 GB).
     */
    answersOnTheStream?: boolean;
    /** ACKNOWLEDGE_MS, unless a test says otherwise. */
    acknowledgeMs?: number;
  } = {},
): typeof fetch {
  const maxBytes = options.maxBytes ?? MAX_MESSAGE_BYTES;
  const budget = options.budget ?? new ReplyBudget();
  const resumptions = options.resumptions ??
    new TokenBucket(RESUMPTIONS.burst, RESUMPTIONS.perSecond);
  const legacy = options.answersOnTheStream ?? false;
  /** Answers to the server's requests waiting for its status now. */
  let answering = 0;
  return async (input, init) => {
    const method = (init?.method ?? (input instanceof Request ? input.method : "GET"))
      .toUpperCase();
    const resumes = new Headers(init?.headers).has("last-event-id") ||
      (legacy && method === "GET");
    if (resumes && !resumptions.take()) {
      return new Response(null, { status: 429, statusText: "Too many resumed streams" });
    }
    const sent = postedMessage(init?.body);
    // A request given up on (its timeout, or its script ended): nobody reads its stream.
    if (sent.cancels !== undefined) options.streams?.end(sent.cancels);
    /** Notes how the request this POST sends is ended, if it sends one; returns the forget. */
    const noteRequest = (end: () => void) =>
      sent.requestId !== undefined && options.streams
        ? options.streams.opened(sent.requestId, end)
        : () => {};
    // A notification or an answer (to the server's ping), or any POST of the older transport,
    // gets nothing back the SDK uses when it is accepted.
    const unread = sent.answersNothing || (legacy && method === "POST");
    if (sent.answers && answering >= ANSWERS_AT_ONCE) {
      return new Response(null, { status: 202, statusText: "Not sent: too many answers at once" });
    }
    // Until its status comes, a request can be given up on too (its headers never came: the
    // connection stayed open for good), and an unread POST waits at most ACKNOWLEDGE_MS.
    const abort = new AbortController();
    const signals = [abort.signal, ...(init?.signal ? [init.signal] : [])];
    if (unread) signals.push(AbortSignal.timeout(options.acknowledgeMs ?? ACKNOWLEDGE_MS));
    const pending = noteRequest(() => abort.abort(new Error("its request is over")));
    if (sent.answers) answering++;
    let response: Response;
    try {
      response = await inner(input, { ...init, signal: AbortSignal.any(signals) });
    } finally {
      pending();
      if (sent.answers) answering--;
    }
    if (!response.body) return response;
    // Its body is not read (one that never ended kept its POST open for good); nor an error
    // body that answers a notification or an answer (a server that failed each answer at once
    // with a body that never ended had a connection a ping, past the cap on answers waiting).
    if ((unread && response.ok) || sent.answersNothing) {
      void response.body.cancel().catch(() => {});
      return responseWithBody(response, null);
    }
    // A body read whole is a request's stream too: one that never ends (a space every few
    // seconds) stayed open after its call timed out, a connection each.
    const cap = readAsEvents(response, method, legacy ? undefined : sent.requestId)
      ? eventCap(maxBytes, sent.requestId, budget)
      : response.ok
      ? bodyCap(maxBytes, budget, true)
      : bodyCap(Math.min(maxBytes, MAX_ERROR_BODY_BYTES), budget, false);
    cap.forget = noteRequest(cap.end);
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
    !type.includes(",") && (method === "GET" || requestId !== undefined);
}

function tooLarge(maxBytes: number, what: string): Error {
  return new RangeError(tooLargeReason(maxBytes, what));
}

/**
 * Passes at most `maxBytes` of a body, each byte taken from `budget` until the body has ended
 * (its reader holds them until then). With `scanned`, the body is passed once it has ended, and
 * not at all when it is JSON too costly to parse (json_cost.ts): the SDK reads such a body
 * whole anyway, and one of 600,000 keys held the host's thread seconds.
 */
function bodyCap(maxBytes: number, budget: ReplyBudget, scanned: boolean): StreamCap {
  let seen = 0;
  let parts: Uint8Array[] = [];
  const giveBack = () => {
    budget.give(seen);
    seen = 0;
  };
  let output: TransformStreamDefaultController<Uint8Array> | undefined;
  const cap: StreamCap = {
    stream: new TransformStream({
      start(controller) {
        output = controller;
      },
      transform(chunk, controller) {
        if (seen + chunk.length > maxBytes) {
          giveBack();
          controller.error(tooLarge(maxBytes, "the message"));
        } else if (!budget.take(chunk.length)) {
          giveBack();
          controller.error(overBudget(budget));
        } else {
          seen += chunk.length;
          if (scanned) parts.push(chunk);
          else controller.enqueue(chunk);
        }
      },
      flush(controller) {
        cap.forget();
        giveBack();
        if (!scanned) return;
        const body = concatBytes(parts);
        parts = [];
        const costly = jsonCostProblem(decode(body));
        if (costly === null) controller.enqueue(body);
        else controller.error(new Error(`Cannot read the server's reply: ${costly}`));
      },
      cancel() {
        cap.forget();
        giveBack();
        parts = [];
      },
    } as Transformer<Uint8Array, Uint8Array>),
    // Its request is over: the reader gets an error, and the server's body is cancelled.
    end: () => {
      giveBack();
      parts = [];
      try {
        output?.error(new Error("Cannot read the server's reply: its request is over"));
      } catch { /* already ended */ }
    },
    forget: () => {},
  };
  return cap;
}

function overBudget(budget: ReplyBudget): Error {
  return new RangeError(
    `Cannot read the server's reply: its replies still being read hold more than ${
      budget.max / (1024 * 1024)
    } MiB`,
  );
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
  budget: ReplyBudget,
): StreamCap {
  /**
   * The unfinished event's bytes from earlier chunks, while it is within bounds: copied into one
   * buffer that doubles as it fills (an array of the chunks' tails held hundreds of bytes for
   * each byte when a server sent its event one byte a chunk), taken from the server's budget.
   */
  const held = new GrowingBytes(budget);
  /** Bytes of the unfinished event so far. */
  let size = 0;
  /**
   * A dropped event's first and last bytes, to tell what it answered, and why it was dropped:
   * too large, or past the budget of the server's replies.
   */
  let tooBig: { head: Uint8Array; tail: Uint8Array; why: string } | null = null;
  let lineHasBytes = false;
  let afterCR = false;
  const encoder = new TextEncoder();
  let output: TransformStreamDefaultController<Uint8Array> | undefined;
  const cap: StreamCap = {
    stream: new TransformStream({
      start(controller) {
        output = controller;
      },
      transform,
      flush(controller) {
        cap.forget();
        if (held.length > 0) controller.enqueue(held.take());
      },
      // Its reader gave up, or the server's body failed: what it held goes back to the budget
      // (which it kept for good, so that cancelled calls wore the budget down).
      cancel() {
        cap.forget();
        held.clear();
      },
    } as Transformer<Uint8Array, Uint8Array>),
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
    /**
     * Whether the event ending at `end` is JSON too costly to parse (json_cost.ts); if it is,
     * what came before it is passed and an error answer in its place.
     */
    const isCostly = (end: number): boolean => {
      const own = chunk.subarray(held.length > 0 ? 0 : eventStart, end);
      const text = decode(held.length > 0 ? concatBytes([held.bytes(), own]) : own);
      const costly = jsonCostProblem(text);
      if (costly === null) return false;
      pass();
      const why = `Cannot read the server's reply: ${costly}`;
      const answer = unreadReplyAnswer(
        text.slice(0, EDGE_BYTES),
        text.slice(-EDGE_BYTES),
        sent,
        why,
      );
      if (answer) controller.enqueue(encoder.encode(`data: ${JSON.stringify(answer)}\n\n`));
      return true;
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
            const answer = unreadReplyAnswer(decode(tooBig.head), decode(tail), sent, tooBig.why);
            if (answer) controller.enqueue(encoder.encode(`data: ${JSON.stringify(answer)}\n\n`));
            passFrom = end;
            tooBig = null;
          } else if (size >= SCANNED_FROM_CHARS && isCostly(end)) {
            // Dropped for an error answer, as one too large is (its earlier bytes are held).
            held.clear();
            passFrom = end;
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
        const why = tooLarge(maxBytes, "one event of its stream").message;
        tooBig = { head: first(parts), tail: last(parts), why };
        tailFrom = i + 1;
      }
    }
    // Whole events go on; the unfinished one waits for its end, or is dropped as too large, or
    // as past the budget.
    pass();
    const rest = chunk.subarray(Math.max(eventStart, tooBig ? tailFrom : 0));
    if (tooBig) tooBig.tail = last([tooBig.tail, rest]);
    else if (rest.length > 0 && !held.append(rest)) {
      const parts = [held.take(), rest];
      tooBig = { head: first(parts), tail: last(parts), why: overBudget(budget).message };
    }
  }
}

/** A reply's body as the SDK reads it, which can be ended when its request is over. */
interface StreamCap {
  stream: TransformStream<Uint8Array, Uint8Array>;
  /** Ends the stream now (its request is over). */
  end: () => void;
  /** Called once the stream has ended by itself. */
  forget: () => void;
}

/**
 * Bytes appended into one buffer that doubles as it fills, each taken from `budget` until
 * `take()` or `clear()` empties it.
 */
class GrowingBytes {
  #buffer = new Uint8Array(0);
  length = 0;
  readonly #budget: ReplyBudget;

  constructor(budget: ReplyBudget) {
    this.#budget = budget;
  }

  /** Appends `bytes` if the budget has room for them. */
  append(bytes: Uint8Array): boolean {
    if (!this.#budget.take(bytes.length)) return false;
    if (this.length + bytes.length > this.#buffer.length) {
      const grown = new Uint8Array(Math.max(4096, 2 * (this.length + bytes.length)));
      grown.set(this.#buffer.subarray(0, this.length));
      this.#buffer = grown;
    }
    this.#buffer.set(bytes, this.length);
    this.length += bytes.length;
    return true;
  }

  /** What is held, without taking it. */
  bytes(): Uint8Array {
    return this.#buffer.subarray(0, this.length);
  }

  take(): Uint8Array {
    const bytes = this.#buffer.slice(0, this.length);
    this.clear();
    return bytes;
  }

  clear(): void {
    this.#budget.give(this.length);
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
 * What a POST body holds: the id of the one JSON-RPC request it sends; or the id of the request
 * a `notifications/cancelled` it sends gives up on; and whether it is one message that asks for
 * no answer (a notification, or an answer to the server's own request).
 */
function postedMessage(body: unknown): {
  requestId?: string | number;
  cancels?: string | number;
  answersNothing?: boolean;
  /** An answer to the server's own request. */
  answers?: boolean;
} {
  if (typeof body !== "string") return {};
  let message;
  try {
    message = JSON.parse(body);
  } catch {
    return {};
  }
  if (message === null || typeof message !== "object" || Array.isArray(message)) return {};
  const isId = (id: unknown): id is string | number =>
    typeof id === "string" || typeof id === "number";
  if (typeof message.method !== "string") {
    const answers = "result" in message || "error" in message;
    return { answersNothing: answers, answers };
  }
  if (isId(message.id)) return { requestId: message.id };
  const cancelled = message.params?.requestId;
  return {
    answersNothing: message.id === undefined,
    ...(message.method === "notifications/cancelled" && isId(cancelled)
      ? { cancels: cancelled }
      : {}),
  };
}
