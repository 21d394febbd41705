/**
 * `promise`, or what `aborted()` gives once `signal` is aborted (at once if it already is),
 * whichever comes first (a promise settled already comes before a signal aborted already). The
 * listener is removed either way, so a long-lived signal gathers none. `aborted` may throw, to
 * reject instead.
 */
export function raceAbort<T, U>(
  promise: Promise<T>,
  signal: AbortSignal | undefined,
  aborted: () => U,
): Promise<T | U> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.race([promise, Promise.resolve().then(aborted)]);
  const { promise: abort, resolve } = Promise.withResolvers<void>();
  const onAbort = () => resolve();
  signal.addEventListener("abort", onAbort, { once: true });
  return Promise.race([promise, abort.then(aborted)]).finally(() =>
    signal.removeEventListener("abort", onAbort)
  );
}
