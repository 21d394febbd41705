/**
 * The server's executor as it stops: `stop()` cancels every run (those waiting for a sandbox or
 * their packages too, and any started after), each answered CANCELLED as a client's cancel is,
 * and resolves once they have all answered. Shutdown does this before it closes connections, so
 * every caller is told: closing an HTTP session first ended its running calls with no answer,
 * and each client waited out its own timeout (operator 51: 25 s, or the 310 s clients are told
 * to allow).
 */
import type { ExecuteOptions, ExecuteRequest, Executor } from "./executor.ts";
import type { ExecutionResult } from "./execution_result.ts";

export const STOPPING_MESSAGE = "Execution was cancelled: the server is shutting down";

/** The reason a signal aborted by the server's stop gives. */
export class ServerStopping extends Error {
  constructor() {
    super(STOPPING_MESSAGE);
  }
}

export class StoppingExecutor implements Executor {
  readonly #inner: Executor;
  readonly #stopping = new AbortController();
  readonly #running = new Set<Promise<unknown>>();

  constructor(inner: Executor) {
    this.#inner = inner;
  }

  execute(request: ExecuteRequest, options: ExecuteOptions = {}): Promise<ExecutionResult> {
    const stopping = this.#stopping.signal;
    return this.guard(
      (signal) =>
        this.#inner.execute(request, { ...options, signal }).then((result) =>
          cutByTheStop(stopping, options.signal) ? stoppedResult(result) : result
        ),
      options.signal,
    );
  }

  /**
   * Runs other work the stop must wait for (a code-generation run, waiting on its model) with
   * `signal` and the stop's together; its abort reason is a `ServerStopping` when the stop came.
   */
  guard<T>(work: (signal: AbortSignal) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const stopping = this.#stopping.signal;
    const run = work(signal ? AbortSignal.any([signal, stopping]) : stopping);
    this.#running.add(run);
    void run.finally(() => this.#running.delete(run)).catch(() => {});
    return run;
  }

  /**
   * Cancels every run, now and later; resolves once those running have answered, with how many
   * there were.
   */
  async stop(): Promise<number> {
    this.#stopping.abort(new ServerStopping());
    const running = [...this.#running];
    await Promise.allSettled(running);
    return running.length;
  }
}

/**
 * Whether the stop cancelled a run, not its caller: its own signal (a code-generation run's is
 * guarded too) was not aborted, or was aborted by the stop.
 */
function cutByTheStop(stopping: AbortSignal, own: AbortSignal | undefined): boolean {
  return stopping.aborted && (!own?.aborted || own.reason instanceof ServerStopping);
}

/** A run the server's stop cut short says so, not that the client cancelled it. */
function stoppedResult(result: ExecutionResult): ExecutionResult {
  if (result.diagnostics?.error_type !== "CANCELLED") return result;
  return { ...result, diagnostics: { ...result.diagnostics, message: STOPPING_MESSAGE } };
}
