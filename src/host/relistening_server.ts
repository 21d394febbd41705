/**
 * `Deno.serve` that listens again when accepting fails. Deno's accept loop ends at the first
 * failure to accept, and rejects its `finished` promise: out of file descriptors (a client that
 * opened connections and sent nothing on them, about as many as the process may hold), the
 * rejection went unhandled and took the host down, every session and running execution with it.
 * Here the failed server is shut down: it stops listening and closes its idle connections (the
 * descriptors come back), while the responses it is sending (an event stream, a running call)
 * go on to their end. The same address is listened on again after 0.5 s, then up to 5 s apart
 * while that fails too. Clients whose connections were closed connect again; sessions, and the
 * code sessions they hold, live in the host, not in a connection.
 */
import type { Logger } from "../_util/log.ts";

export const RELISTEN_FIRST_MS = 500;
export const RELISTEN_MAX_MS = 5000;

export interface RelisteningOptions {
  hostname: string;
  port: number;
  onError: (error: unknown) => Response | Promise<Response>;
  log: Logger;
}

export interface RelisteningServer {
  /** The address first bound (listening again binds it again). */
  addr: Deno.NetAddr;
  /** Stops accepting and listening again; resolves once the current server has shut down. */
  shutdown(): Promise<void>;
}

export function serveRelistening(
  options: RelisteningOptions,
  handler: Deno.ServeHandler<Deno.NetAddr>,
): RelisteningServer {
  let stopping = false;
  let wake = () => {};
  const start = (port: number): Deno.HttpServer<Deno.NetAddr> => {
    const started = Deno.serve({
      hostname: options.hostname,
      port,
      onListen: () => {},
      onError: options.onError,
    }, handler);
    started.finished.catch((error) => void recover(started, error));
    return started;
  };
  let server = start(options.port);
  const addr = server.addr;

  async function recover(failed: Deno.HttpServer<Deno.NetAddr>, error: unknown): Promise<void> {
    if (stopping) return;
    options.log.error("http listener failed; its connections are closed, and it listens again", {
      error: String(error).slice(0, 300),
    });
    // Not waited for: a response stream may stay open for as long as its client likes.
    void failed.shutdown().catch(() => {});
    for (let delay = RELISTEN_FIRST_MS; !stopping; delay = Math.min(delay * 2, RELISTEN_MAX_MS)) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      if (stopping) return;
      try {
        server = start(addr.port);
        options.log.info("http listening again", { port: addr.port });
        return;
      } catch (failure) {
        options.log.warn("http cannot listen again yet", { error: String(failure).slice(0, 300) });
      }
    }
  }

  return {
    addr,
    async shutdown() {
      stopping = true;
      wake();
      await server.shutdown();
    },
  };
}
