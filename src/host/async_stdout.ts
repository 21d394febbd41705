/**
 * stdout as the MCP stdio transport writes to it, without ever blocking the host. Deno's
 * `process.stdout` writes to a pipe synchronously: a client that stopped reading (but kept the
 * pipe open) held the host's one thread inside a write, and with it every timer, so no sandbox
 * was stopped at its time or memory limit (one ran on at 1.7 GB, 25 s past a 5 s limit). Here a
 * write is Deno's asynchronous one; what the client has not taken waits in memory, up to
 * `maxQueuedBytes`, past which the client is taken to be gone, as it is when a write fails (a
 * closed pipe): a write accepted into the queue has already been reported done to its sender.
 */
import { Writable } from "node:stream";

/** Messages the client may leave unread before it is taken to be gone. */
export const MAX_QUEUED_STDOUT_BYTES = 64 * 1024 * 1024;

export function asyncStdout(options: {
  /** Called once, when a write fails or more than `maxQueuedBytes` wait for the client. */
  onGone: (why: string) => void;
  maxQueuedBytes?: number;
  /** Where the bytes go (tests give a pipe of their own). */
  target?: { write(bytes: Uint8Array): Promise<number> };
}): Writable {
  const target = options.target ?? Deno.stdout;
  const most = options.maxQueuedBytes ?? MAX_QUEUED_STDOUT_BYTES;
  let gone = false;
  // Once the client is gone, every write waiting in the queue fails at once (a sender waiting for
  // the queue to drain, such as the SDK closing a listen stream, would otherwise wait forever).
  const goneBecause = (why: string) => {
    if (gone) return;
    gone = true;
    queueMicrotask(() => stream.destroy(new Error(why)));
    options.onGone(why);
  };
  const stream: Writable = new Writable({
    async write(chunk: Uint8Array, _encoding, done) {
      try {
        for (let rest = chunk; rest.length > 0;) rest = rest.subarray(await target.write(rest));
        done();
      } catch (error) {
        goneBecause(`stdout closed (${(error as Error).message})`);
        done(error as Error);
      }
    },
  });
  // Its failures are told through onGone; senders hear of them through their own listeners.
  stream.on("error", () => {});
  const write = stream.write.bind(stream) as (chunk: unknown, ...rest: unknown[]) => boolean;
  stream.write = ((chunk: unknown, ...rest: unknown[]) => {
    const fits = write(chunk, ...rest);
    if (stream.writableLength > most) {
      const mib = Math.round(stream.writableLength / (1024 * 1024));
      goneBecause(`stdout: the client left ${mib} MiB unread`);
    }
    return fits;
  }) as typeof stream.write;
  return stream;
}
