/**
 * The executor of a server that is still starting. The server answers `initialize` (and a
 * 2026-07-28 client's `server/discover`) at once, while it builds or checks the snapshot and
 * connects the upstream servers in the background; a script sent before that is done waits for
 * it here, then runs. A client that cancels while waiting gets CANCELLED; a start-up that failed
 * answers every script with why.
 */
import type { ExecuteOptions, ExecuteRequest, Executor } from "./executor.ts";
import type { ExecutionResult } from "./execution_result.ts";
import { refusedResult } from "./result_mapping.ts";
import { raceAbort } from "../_util/race_abort.ts";

export class StartingExecutor implements Executor {
  readonly #ready: Promise<Executor>;
  readonly #defaultProfile: string;

  /** `ready` resolves with the executor to use once the server has started. */
  constructor(ready: Promise<Executor>, defaultProfile: string) {
    this.#ready = ready;
    this.#ready.catch(() => {}); // answered per call below
    this.#defaultProfile = defaultProfile;
  }

  async execute(request: ExecuteRequest, options: ExecuteOptions = {}): Promise<ExecutionResult> {
    const started = performance.now();
    const profile = request.profile ?? this.#defaultProfile;
    let executor: Executor | null;
    try {
      executor = await raceAbort(this.#ready, options.signal, () => null);
    } catch (error) {
      return refusedResult({
        profile,
        outcome: "SANDBOX_CRASHED",
        message: `Cannot run: the server failed to start (${
          error instanceof Error ? error.message : String(error)
        })`,
      }, performance.now() - started);
    }
    if (executor === null) {
      return refusedResult({
        profile,
        outcome: "CANCELLED",
        message: "Execution was cancelled by the client while the server was starting",
      }, performance.now() - started);
    }
    return executor.execute(request, options);
  }
}
