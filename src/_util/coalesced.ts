/**
 * A task run on request, never two at once, at most once per `gapMs`, and idle at least nine
 * times as long as its last run took (so it never takes more than a tenth of the time, however
 * costly a run is made): requests made while a run waits or runs are merged into one more run
 * after it. For work that a remote party can ask for as often as it likes (an upstream server's
 * `list_changed` notifications, each of which may cost a tool list and a catalog rebuild).
 */
export interface Coalesced {
  request(): void;
  /** No more runs; a waiting one is dropped (one running finishes). */
  close(): void;
}

export function coalesced(
  task: () => Promise<void>,
  gapMs: number,
  now: () => number = () => performance.now(),
): Coalesced {
  let last = -Infinity;
  let lastEnd = -Infinity;
  let took = 0;
  let running = false;
  let again = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;
  const schedule = () => {
    if (closed) return;
    const rest = Math.max(last + gapMs, lastEnd + 9 * took);
    timer = setTimeout(run, Math.max(0, rest - now()));
  };
  const run = async () => {
    timer = undefined;
    running = true;
    again = false;
    last = now();
    try {
      await task();
    } catch {
      // The task reports its own failures; a run that throws is over all the same (and must not
      // end the host as an unhandled rejection from a timer).
    } finally {
      lastEnd = now();
      took = lastEnd - last;
      running = false;
      if (again) schedule();
    }
  };
  return {
    request() {
      if (closed) return;
      if (running) again = true;
      else if (timer === undefined) schedule();
    },
    close() {
      closed = true;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
