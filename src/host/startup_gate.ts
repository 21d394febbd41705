/**
 * Holds a server's tool and resource requests until the service has started. `initialize`,
 * `server/discover`, `ping` and the rest are answered at once, so a client that gives a server
 * a few seconds to answer its handshake is never kept waiting by a snapshot build or a slow
 * upstream server; a `tools/list` waits for the tool index it describes.
 */
import type { McpServer } from "@modelcontextprotocol/server";
import { wrapRequestHandlers } from "./request_handlers.ts";

const HELD = /^(tools|resources)\//;

/**
 * Makes `server` answer its `tools/*` and `resources/*` requests only after `started` resolves
 * (an error naming why, if it rejects). Call it before registering anything: it wraps the
 * handlers as they are installed.
 */
export function holdUntilStarted(server: McpServer, started: Promise<void>): void {
  const failed = started.then(
    () => null,
    (error) => new Error(`Cannot serve: the server failed to start (${(error as Error).message})`),
  );
  wrapRequestHandlers(server, (method, handler) =>
    HELD.test(method)
      ? async (...args) => {
        const error = await failed;
        if (error) throw error;
        return handler(...args);
      }
      : handler);
}
