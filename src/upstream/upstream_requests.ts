/**
 * What a stdio upstream's own requests (its pings, and whatever it asks the host) can make the
 * host do. The SDK answers them by itself, and its stdio transport keeps whatever the child has
 * not read queued in the host, with a listener each: a server that wrote a million pings and
 * never read its stdin took the host to 2.7 GB, and kept it there. So an answer is not written
 * while the child's stdin is full (its last write not yet drained): the server, which is not
 * reading, misses nothing it would read. And its requests are taken at a bounded rate
 * (`REQUESTS`), the rest dropped unread, so a flood costs the host a parse per line, not the
 * SDK's handling of each. As on HTTP, where at most 4 answers wait (capped_fetch.ts). The
 * host's own requests are still written: each is bounded by its call.
 */
import type { JSONRPCMessage, Transport } from "@modelcontextprotocol/client";
import { TokenBucket } from "../_util/token_bucket.ts";

/** How many of a server's own requests are taken: a burst, then a rate per second. */
export const REQUESTS = { burst: 100, perSecond: 50 };

/** `transport`, whose answers are dropped while `stdinFull()` says the child is not reading. */
export function answersOnlyWhileRead<T extends Transport>(
  transport: T,
  stdinFull: () => boolean,
): T {
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    if (isAnswer(message) && stdinFull()) return Promise.resolve();
    return send(message, options);
  };
  return transport;
}

/**
 * `transport`, whose server's requests beyond what `bucket` allows never reach the client.
 * Call before the client connects: it wraps the handler the client installs.
 */
export function requestsAtABoundedRate<T extends Transport>(
  transport: T,
  bucket = new TokenBucket(REQUESTS.burst, REQUESTS.perSecond),
): T {
  let handler: Transport["onmessage"];
  Object.defineProperty(transport, "onmessage", {
    configurable: true,
    get: () => handler,
    set: (next: Transport["onmessage"]) => {
      handler = next && ((message, extra) => {
        if (isRequest(message) && !bucket.take()) return;
        next(message, extra);
      });
    },
  });
  return transport;
}

function isAnswer(message: JSONRPCMessage): boolean {
  return "id" in message && !("method" in message);
}

function isRequest(message: JSONRPCMessage): boolean {
  return "id" in message && "method" in message;
}
