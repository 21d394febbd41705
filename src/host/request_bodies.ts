/**
 * POST bodies as the HTTP host reads them: whole and once, before anything else of the request
 * is read, each at most `MAX_BODY_BYTES`, within `BODY_READ_MS`, and at most `MAX_BODIES_BYTES`
 * of bodies being read at once. Bodies are read before a session's caps apply: 300 clients that
 * each sent 4 MB of a body and then stalled held 1.7 GB of the host, for as long as they kept
 * their connections (attacker round 44).
 */
import { jsonCostProblem } from "../rpc/json_cost.ts";
import { concatBytes } from "../_util/bytes.ts";
import type { Logger } from "../_util/log.ts";

/** The largest POST body read (the SDK transport's own default). */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** The most bytes of bodies being read at once, over all requests: 16 of the largest. */
export const MAX_BODIES_BYTES = 64 * 1024 * 1024;
/** How long a body may take to arrive whole. */
export const BODY_READ_MS = 30_000;

export interface BodyLimits {
  maxBodyBytes: number;
  maxBodiesBytes: number;
  readMs: number;
}

const DEFAULT_LIMITS: BodyLimits = {
  maxBodyBytes: MAX_BODY_BYTES,
  maxBodiesBytes: MAX_BODIES_BYTES,
  readMs: BODY_READ_MS,
};

/** A JSON-RPC error answer with an HTTP status (and headers). */
export type Refusal = (status: number, message: string, headers?: HeadersInit) => Response;

export class RequestBodies {
  /** Bytes set aside for the bodies being read now. */
  #held = 0;
  readonly #refuse: Refusal;
  readonly #log: Logger;
  readonly #limits: BodyLimits;

  constructor(refuse: Refusal, log: Logger, limits: Partial<BodyLimits> = {}) {
    this.#refuse = refuse;
    this.#log = log;
    this.#limits = { ...DEFAULT_LIMITS, ...limits };
  }

  /**
   * The request with its body read, and that body as text; or the answer: 413 past the size,
   * 503 while other bodies hold the whole budget, 408 past the time, 400 when the client cut
   * it short. Every later reader (the id check, the SDK's era check and transport) reads the
   * copy: a clone of an unread body over the bound was never answered, and held what had come
   * of it (a 5 MB POST, 40 of them: 504 MB).
   */
  async read(request: Request): Promise<{ request: Request; text: string } | Response> {
    const { maxBodyBytes, maxBodiesBytes, readMs } = this.#limits;
    const tooLarge = `Payload Too Large: Request body must not exceed ${maxBodyBytes} bytes`;
    const declared = Number(request.headers.get("content-length"));
    if (declared > maxBodyBytes) return this.#refuse(413, tooLarge);
    // A body without a length may come to the bound: set that much aside.
    const reserved = Number.isSafeInteger(declared) && declared >= 0 &&
        request.headers.has("content-length")
      ? declared
      : maxBodyBytes;
    if (this.#held + reserved > maxBodiesBytes) {
      this.#log.warn("http request refused: other request bodies are being read", {
        held_bytes: this.#held,
      });
      return this.#refuse(
        503,
        `Service Unavailable: other requests' bodies, ${maxBodiesBytes} bytes in all, are being read; try again`,
        { "retry-after": "1" },
      );
    }
    this.#held += reserved;
    let read: Uint8Array | "too large" | "too slow";
    try {
      read = await readWithin(request.body, maxBodyBytes, readMs);
    } catch (error) {
      this.#log.debug("http request body could not be read", {
        error: String(error).slice(0, 200),
      });
      return this.#refuse(400, "Bad Request: the request body could not be read whole");
    } finally {
      this.#held -= reserved;
    }
    if (read === "too large") return this.#refuse(413, tooLarge);
    if (read === "too slow") {
      return this.#refuse(
        408,
        `Request Timeout: the request body did not arrive whole within ${readMs / 1000} s`,
        { connection: "close" },
      );
    }
    const buffered = new Request(request.url, {
      method: request.method,
      headers: request.headers,
      body: read as Uint8Array<ArrayBuffer>,
      signal: request.signal,
    });
    const text = new TextDecoder().decode(read);
    // Some JSON within the size costs the host's thread seconds to parse and walk (an attacker's
    // corpus: eight bodies of 4 MB nested 2 million deep held every other caller 6.6 s).
    const costly = jsonCostProblem(text);
    if (costly !== null) return this.#refuse(400, `Bad Request: the body was not read: ${costly}`);
    return { request: buffered, text };
  }
}

/**
 * A body's bytes; "too large" once they pass `maxBytes`, "too slow" when they have not all come
 * within `ms`; in both cases the body is cancelled, what came of it let go. Errors are thrown.
 */
async function readWithin(
  body: ReadableStream<Uint8Array> | null,
  maxBytes: number,
  ms: number,
): Promise<Uint8Array | "too large" | "too slow"> {
  if (body === null) return new Uint8Array();
  const reader = body.getReader();
  let late = false;
  const timer = setTimeout(() => {
    late = true;
    reader.cancel().catch(() => {});
  }, ms);
  try {
    const parts: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (late) return "too slow";
      if (done) return concatBytes(parts, size);
      size += value.length;
      if (size > maxBytes) {
        await reader.cancel().catch(() => {});
        return "too large";
      }
      parts.push(value);
    }
  } finally {
    clearTimeout(timer);
  }
}
