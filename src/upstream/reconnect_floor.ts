/**
 * A floor under the reconnection delay an HTTP upstream may ask for. An event stream's `retry:`
 * field sets how long the SDK waits before it reconnects a stream that ended, and nothing stops
 * a server from asking for none: one `retry: 0` made an idle host reconnect 420 times a second,
 * for good. The SDK keeps the server's value in `_serverRetryMs` (StreamableHTTPClientTransport);
 * a transport without it is refused, so an SDK that changes this fails the tests rather than
 * losing the floor unseen.
 */
import type { StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

/** The shortest reconnection delay a server may set (the SDK's own first delay). */
export const MIN_RECONNECT_MS = 1000;

export function flooredReconnects<T extends StreamableHTTPClientTransport>(transport: T): T {
  const holder = transport as unknown as Record<string, unknown>;
  if (!Object.hasOwn(holder, "_serverRetryMs")) {
    throw new TypeError("this transport keeps no server retry delay to floor");
  }
  let retryMs = holder._serverRetryMs as number | undefined;
  Object.defineProperty(holder, "_serverRetryMs", {
    get: () => retryMs,
    set: (ms: number | undefined) => {
      retryMs = ms === undefined ? undefined : Math.max(MIN_RECONNECT_MS, ms);
    },
  });
  return transport;
}
