/**
 * The event streams that an HTTP upstream opened in answer to POSTed requests, by the request
 * each carries, so that each ends once nobody reads it: when its request has been answered (on
 * it or another stream) or cancelled. A server may keep such a stream open after its answer,
 * and the unfinished event it holds there (up to 10 MiB, capped_fetch.ts) stayed in the host as
 * long: 120 calls answered at once, each leaving 9.9 MiB unfinished, took the host from 236 MB to
 * 1.6 GB for good. (A 2026-07-28 request's stream is closed by the SDK itself.)
 */
import type { JSONRPCMessage, Transport } from "@modelcontextprotocol/client";

type RequestId = string | number;

/**
 * Requests remembered as over, for a stream whose headers come only after its request was
 * cancelled (each such stream stayed open).
 */
const REMEMBERED_OVER = 4096;

export class RequestStreams {
  /** How each open stream is ended, by its request's id as JSON (1 and "1" differ). */
  readonly #ends = new Map<string, () => void>();
  /** The latest requests answered or cancelled, oldest first. */
  readonly #over = new Set<string>();

  /** Notes the stream of request `id`; returns what to call when it ends by itself. */
  opened(id: RequestId, end: () => void): () => void {
    const key = JSON.stringify(id);
    if (this.#over.has(key)) {
      end(); // its request is over already
      return () => {};
    }
    this.#ends.get(key)?.(); // an id used again: the older stream's request is over
    this.#ends.set(key, end);
    return () => {
      if (this.#ends.get(key) === end) this.#ends.delete(key);
    };
  }

  /** Request `id` is over: ends its stream, now or when it opens. */
  end(id: RequestId): void {
    const key = JSON.stringify(id);
    const end = this.#ends.get(key);
    this.#ends.delete(key);
    end?.();
    this.#over.delete(key);
    this.#over.add(key);
    if (this.#over.size > REMEMBERED_OVER) this.#over.delete(this.#over.values().next().value!);
  }

  /** Streams open now. */
  get size(): number {
    return this.#ends.size;
  }
}

/**
 * `transport`, each of whose answers (a result or error response) ends the stream of the request
 * it answers. Set before the client connects: the client's own handler runs after this one, on
 * the message already read.
 */
export function endingAnsweredStreams<T extends Transport>(
  transport: T,
  streams: RequestStreams,
): T {
  transport.onmessage = (message: JSONRPCMessage) => {
    const id = answeredId(message);
    if (id !== undefined) streams.end(id);
  };
  return transport;
}

/** The id a response answers; undefined for a request or notification. */
function answeredId(message: JSONRPCMessage): RequestId | undefined {
  const m = message as { id?: unknown; method?: unknown; result?: unknown; error?: unknown };
  if (m.method !== undefined || !("result" in m || "error" in m)) return undefined;
  return typeof m.id === "string" || typeof m.id === "number" ? m.id : undefined;
}
