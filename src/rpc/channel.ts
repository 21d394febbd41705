/**
 * Newline-delimited JSON-RPC 2.0 in both directions over a byte stream pair.
 *
 * Used by the host (whose peer, the sandbox, is hostile) and by the sandbox worker. Every
 * incoming line is parsed and its shape checked; a reply is accepted only for an id this side
 * is waiting on; anything else is reported through `onViolation` and otherwise ignored.
 */
import { readLines } from "./lines.ts";
import { type JsonCostLimits, jsonCostProblem } from "./json_cost.ts";

export type JsonRpcId = number | string;

export interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}

export class RemoteError extends Error {
  constructor(readonly error: RpcError) {
    super(error.message);
    this.name = "RemoteError";
  }
}

export const RPC_INVALID_REQUEST = -32600;
export const RPC_METHOD_NOT_FOUND = -32601;
export const RPC_INVALID_PARAMS = -32602;
export const RPC_INTERNAL_ERROR = -32603;

/** Blank lines a peer may send that count as no violation, and how long each may be. */
export const MAX_FREE_BLANK_LINES = 100;
export const MAX_FREE_BLANK_LINE_CHARS = 1024;
/** How much longer than its compact form a message may be written (escapes: `\u0000` is 6). */
export const MAX_PADDING_RATIO = 6;

/** The fields of a JSON-RPC message. */
const MESSAGE_FIELDS = new Set(["jsonrpc", "id", "method", "params", "result", "error"]);

/** How an incoming line broke JSON-RPC. */
export type ViolationKind =
  | "overlong_line"
  | "costly_line"
  | "not_json"
  | "not_an_object"
  | "not_jsonrpc_2"
  | "invalid_request_id"
  | "reply_without_id"
  | "reply_to_nothing"
  | "malformed_reply"
  | "blank_lines"
  | "padded_line"
  | "unknown_fields";

export interface ChannelViolation {
  kind: ViolationKind;
  /** A readable description, for logs. */
  detail: string;
}

export interface ChannelHandlers {
  /** Handles a request; its value is the reply's result, a thrown `RemoteError` its error. */
  onRequest(method: string, params: unknown, id: JsonRpcId): Promise<unknown>;
  onNotification(method: string, params: unknown): void;
  /** A message broke the protocol (bad JSON, bad shape, a reply to nothing, an overlong line). */
  onViolation(violation: ChannelViolation): void;
}

/** What one side sends: method -> params, and for requests also the reply. */
export interface MessageSet {
  notifications: Record<string, unknown>;
  requests: Record<string, { params: unknown; reply: unknown }>;
}

/** What a written line is: this side's own request or notification, or an answer to the peer. */
export type LineKind = "own" | "answer";

export interface ChannelOptions {
  readable: ReadableStream<Uint8Array>;
  /**
   * Writes one complete line (the newline included); `answer` when it answers the peer's request
   * (what the peer asked for, which it may leave unread).
   */
  write: (line: string, kind: LineKind) => void | Promise<void>;
  maxLineBytes: number;
  /**
   * What an incoming message may cost to parse (json_cost.ts): a line past it is a violation,
   * not parsed. Absent: every line within `maxLineBytes` is parsed (the peer is trusted).
   */
  maxParseCost?: JsonCostLimits;
  handlers: ChannelHandlers;
}

/**
 * One side of the channel. `Sends` types what this side sends; what it receives is `unknown`
 * until the receiver checks it.
 */
export class JsonRpcChannel<Sends extends MessageSet = MessageSet> {
  readonly #write: (line: string, kind: LineKind) => void | Promise<void>;
  readonly #handlers: ChannelHandlers;
  readonly #maxParseCost: JsonCostLimits | undefined;
  readonly #pending = new Map<JsonRpcId, PromiseWithResolvers<unknown>>();
  #closed = false;
  /** Blank lines received (see MAX_FREE_BLANK_LINES). */
  #blankLines = 0;
  /** Resolves when the incoming stream ends; pending requests are then rejected. */
  readonly done: Promise<void>;

  constructor(options: ChannelOptions) {
    this.#write = options.write;
    this.#handlers = options.handlers;
    this.#maxParseCost = options.maxParseCost;
    this.done = readLines(options.readable, options.maxLineBytes, {
      line: (text) => this.#receive(text),
      overlong: (bytes) =>
        this.#violation(
          "overlong_line",
          `line longer than ${options.maxLineBytes} bytes (${bytes}+)`,
        ),
    }).catch(() => {}).finally(() => this.#close());
  }

  /**
   * Sends a request and resolves with the peer's result (rejects with `RemoteError`). The result
   * is `unknown`: the peer's word, to be checked by whoever reads it.
   */
  async request<M extends keyof Sends["requests"] & string>(
    method: M,
    params: Sends["requests"][M]["params"],
  ): Promise<unknown> {
    if (this.#closed) throw new Error(`Cannot send "${method}": the channel is closed`);
    // Unguessable: a peer must not answer a request it never saw (the sandbox's script can
    // write raw lines to the channel, and would otherwise answer the host's own "execute").
    const id = crypto.randomUUID();
    const waiter = Promise.withResolvers<unknown>();
    // The channel may close while the request is still being written: its rejection then has
    // nobody awaiting it yet (the send's own failure is what the caller hears).
    waiter.promise.catch(() => {});
    this.#pending.set(id, waiter);
    try {
      await this.#send({ jsonrpc: "2.0", id, method, params });
    } catch (cause) {
      this.#pending.delete(id);
      throw new Error(`Cannot send "${method}": the peer is gone`, { cause });
    }
    return await waiter.promise;
  }

  async notify<M extends keyof Sends["notifications"] & string>(
    method: M,
    params: Sends["notifications"][M],
  ): Promise<void> {
    if (this.#closed) return;
    await this.#send({ jsonrpc: "2.0", method, params });
  }

  #send(message: unknown, kind: LineKind = "own"): void | Promise<void> {
    return this.#write(JSON.stringify(message) + "\n", kind);
  }

  #violation(kind: ViolationKind, detail: string): void {
    this.#handlers.onViolation({ kind, detail });
  }

  #close(): void {
    this.#closed = true;
    for (const waiter of this.#pending.values()) {
      waiter.reject(new Error("Cannot finish request: the peer closed the channel"));
    }
    this.#pending.clear();
  }

  #receive(text: string): void {
    if (text.trim() === "") {
      // A stray blank line is no harm; a flood of them (8 MiB of spaces a line, for 20 s) kept
      // the host's thread reading 3.6 GB with no violation counted.
      const blank = ++this.#blankLines > MAX_FREE_BLANK_LINES ||
        text.length > MAX_FREE_BLANK_LINE_CHARS;
      if (blank) {
        this.#violation(
          "blank_lines",
          `a blank line of ${text.length} characters, past what is let go`,
        );
      }
      return;
    }
    // Read off the text first: some JSON costs the host's thread seconds to parse and walk.
    const costly = this.#maxParseCost ? jsonCostProblem(text, this.#maxParseCost) : null;
    if (costly !== null) {
      this.#violation("costly_line", `message too costly for the host to read: ${costly}`);
      return;
    }
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      this.#violation("not_json", "a line that is not JSON");
      return;
    }
    if (typeof message !== "object" || message === null || Array.isArray(message)) {
      this.#violation("not_an_object", "a message that is not a JSON object");
      return;
    }
    // Blank space inside a message, between its tokens: a valid one-character output padded
    // with 8 MiB of spaces a line was read and parsed for nothing, 1.6 GB in 8 s, uncounted.
    // Each side writes its messages compact (JSON.stringify); at most escapes lengthen them.
    if (
      text.length > MAX_FREE_BLANK_LINE_CHARS &&
      text.length > MAX_PADDING_RATIO * JSON.stringify(message).length
    ) {
      this.#violation("padded_line", `a message padded to ${text.length} characters`);
      return;
    }
    const m = message as Record<string, unknown>;
    // Nothing but what JSON-RPC carries: a valid message with a field of 7 MiB of junk was read
    // and parsed for nothing (1.6 GB in 8 s), uncounted.
    if (Object.keys(m).some((key) => !MESSAGE_FIELDS.has(key))) {
      this.#violation("unknown_fields", "a message with fields JSON-RPC does not have");
      return;
    }
    if (m.jsonrpc !== "2.0") {
      this.#violation("not_jsonrpc_2", 'a message without jsonrpc "2.0"');
      return;
    }
    const hasId = typeof m.id === "number" || typeof m.id === "string";
    if (typeof m.method === "string") {
      if (hasId) this.#answer(m.id as JsonRpcId, m.method, m.params);
      else if (m.id === undefined) this.#handlers.onNotification(m.method, m.params);
      else this.#violation("invalid_request_id", "a request with an invalid id");
      return;
    }
    if (!hasId) {
      this.#violation("reply_without_id", "a reply without a valid id");
      return;
    }
    const waiter = this.#pending.get(m.id as JsonRpcId);
    if (waiter === undefined) {
      this.#violation(
        "reply_to_nothing",
        `a reply to id ${quotedId(m.id as JsonRpcId)}, which is not pending`,
      );
      return;
    }
    this.#pending.delete(m.id as JsonRpcId);
    if ("result" in m && !("error" in m)) {
      waiter.resolve(m.result);
    } else if (isRpcError(m.error) && !("result" in m)) {
      waiter.reject(new RemoteError(m.error));
    } else {
      waiter.reject(new Error("Cannot read reply: it has neither a result nor a valid error"));
      this.#violation("malformed_reply", "a reply with neither a result nor a valid error");
    }
  }

  #answer(id: JsonRpcId, method: string, params: unknown): void {
    this.#handlers.onRequest(method, params, id).then(
      (result) => this.#send({ jsonrpc: "2.0", id, result: result ?? null }, "answer"),
      (error) => {
        const rpcError: RpcError = error instanceof RemoteError
          ? error.error
          : { code: RPC_INTERNAL_ERROR, message: String(error?.message ?? error) };
        return this.#send({ jsonrpc: "2.0", id, error: rpcError }, "answer");
      },
    ).catch(() => {/* the peer is gone; nothing to tell it */});
  }
}

/**
 * How much of a peer's id a violation quotes. The peer chooses the id: a sandbox's 99 replies
 * with 8 MB ids, quoted whole, took the host to 1.35 GB for one execution.
 */
export const QUOTED_ID_CHARS = 64;

function quotedId(id: JsonRpcId): string {
  if (typeof id !== "string" || id.length <= QUOTED_ID_CHARS) return JSON.stringify(id);
  return `${JSON.stringify(id.slice(0, QUOTED_ID_CHARS))}... (${id.length} characters)`;
}

function isRpcError(value: unknown): value is RpcError {
  if (typeof value !== "object" || value === null) return false;
  const e = value as Record<string, unknown>;
  return typeof e.code === "number" && typeof e.message === "string";
}
