/**
 * Lines written to a stream without ever blocking the host. A synchronous write to a pipe waits
 * while the pipe is full: a client that keeps the server's stderr open but never reads it fills
 * the pipe at 64 KiB of logs, and the next log line would hold the host's one thread (and every
 * timer and limit with it) for good. Here each line is written with Deno's asynchronous write;
 * lines wait in memory up to `maxQueuedBytes`, past which they are dropped and counted, and a
 * line saying how many is written once the reader catches up. A line longer than a sixteenth of
 * that is cut (an upstream's 9 MiB error text made one line that was dropped whole). A stream
 * that fails (closed) is written to no more.
 */
import { waitAtMost } from "./wait_at_most.ts";

/** Log lines that may wait for a reader before later ones are dropped. */
export const MAX_QUEUED_LOG_BYTES = 1024 * 1024;

export interface QueuedLines {
  write(line: string): void;
  /** Waits, at most `ms`, for the lines queued so far to be written (at exit). */
  flush(ms: number): Promise<void>;
}

export function queuedLines(
  target: { write(bytes: Uint8Array): Promise<number> },
  maxQueuedBytes = MAX_QUEUED_LOG_BYTES,
): QueuedLines {
  const encoder = new TextEncoder();
  const queue: Uint8Array[] = [];
  let queuedBytes = 0;
  let dropped = 0;
  let closed = false;
  let writing: Promise<void> | undefined;

  const drain = async () => {
    try {
      for (let line = queue[0]; line !== undefined; line = queue[0]) {
        for (let rest = line; rest.length > 0;) rest = rest.subarray(await target.write(rest));
        queue.shift();
        queuedBytes -= line.length;
        if (queue.length === 0 && dropped > 0) {
          const why = `more than ${maxQueuedBytes} bytes were waiting to be written`;
          queue.push(encoder.encode(`[code-mode] warn: ${dropped} log lines dropped (${why})\n`));
          dropped = 0;
        }
      }
    } catch {
      closed = true; // nowhere left to say so
      queue.length = 0;
    } finally {
      writing = undefined;
    }
  };

  return {
    write(line) {
      if (closed) return;
      const longest = Math.floor(maxQueuedBytes / 16);
      const bytes = encoder.encode(
        line.length > longest
          ? `${line.slice(0, longest)}… [cut at ${longest} characters]\n`
          : line,
      );
      if (queuedBytes + bytes.length > maxQueuedBytes) {
        dropped++;
        return;
      }
      queue.push(bytes);
      queuedBytes += bytes.length;
      writing ??= drain();
    },
    async flush(ms) {
      if (writing) await waitAtMost(writing, ms);
    },
  };
}
