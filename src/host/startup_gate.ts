/**
 * Holds a server's tool and resource requests until the service has started. `initialize`,
 * `server/discover`, `ping` and the rest are answered at once, so a client that gives a server
 * a few seconds to answer its handshake is never kept waiting by a snapshot build or a slow
 * upstream server; a `tools/list` waits for the tool index it describes.
 */
import type { McpServer } from "@modelcontextprotocol/server";
import { wrapRequestHandlers } from "./request_handlers.ts";
import { raceAbort } from "../_util/race_abort.ts";

const HELD = /^(tools|resources)\//;

/** Runs work the server's stop waits for, with a signal the stop aborts (StoppingExecutor). */
export type StopGuard = <T>(work: (signal: AbortSignal) => Promise<T>) => Promise<T>;

/**
 * Makes `server` answer its `tools/*` and `resources/*` requests only after `started` resolves
 * (an error naming why, if it rejects). A request held when the server stops is answered with
 * an error saying so (`guard`: the stop waits for that answer; it closed them unanswered). Call
 * it before registering anything: it wraps the handlers as they are installed.
 */
export function holdUntilStarted(
  server: McpServer,
  started: Promise<void>,
  guard: StopGuard = (work) => work(new AbortController().signal),
): void {
  const failed = started.then(
    () => null,
    (error) => new Error(`Cannot serve: the server failed to start (${(error as Error).message})`),
  );
  let settled = false;
  void failed.then(() => settled = true);
  const held = (signal: AbortSignal) => raceAbort(failed, signal, () => STOPPING);
  wrapRequestHandlers(server, (method, handler) =>
    HELD.test(method)
      ? async (...args) => {
        // Once started, nothing is held (and nothing is left listening for the stop).
        const error = settled ? await failed : await guard(held);
        if (error) throw error;
        return handler(...args);
      }
      : handler);
}

const STOPPING = new Error("Cannot serve: the server is shutting down");
