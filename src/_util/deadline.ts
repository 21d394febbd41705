/**
 * A timer for a deadline on something that answers over I/O (a sandbox's reply).
 *
 * Deno runs a due timer before the I/O that arrived while the process could not run (busy, or
 * starved of CPU on a loaded machine): after such a stall, a plain `setTimeout` fires on an
 * answer that came in time and is already waiting to be read. Measured: a child's line written
 * at 100 ms, a timer due at 300 ms, the loop blocked until 600 ms: the timer ran first, every
 * time. A deadline's callback therefore runs `IO_TURN_MS` after its time is up, in a later turn
 * of the event loop, which reads what was waiting first; clearing it cancels both steps.
 */
export const IO_TURN_MS = 20;

export interface Deadline {
  clear(): void;
}

/** `unref`: the deadline does not keep the process alive (as `Deno.unrefTimer`). */
export function deadline(
  onExpire: () => void,
  ms: number,
  options: { unref?: boolean } = {},
): Deadline {
  const started = (id: ReturnType<typeof setTimeout>) => {
    if (options.unref) Deno.unrefTimer(id);
    return id;
  };
  let timer: ReturnType<typeof setTimeout> | undefined = started(setTimeout(() => {
    timer = started(setTimeout(onExpire, IO_TURN_MS));
  }, ms));
  return {
    clear: () => clearTimeout(timer),
  };
}
