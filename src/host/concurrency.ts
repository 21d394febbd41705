/**
 * Caps on executions running at once (per HTTP session and over the whole server). A call over
 * the cap gets a BUSY result at once instead of queueing behind other clients' work.
 */
import { type Executor, failedBeforeRun } from "../execution/executor.ts";

export class ExecutionLimit {
  readonly max: number;
  readonly scope: string;
  #running = 0;

  constructor(max: number, scope: string) {
    this.max = max;
    this.scope = scope;
  }

  get running(): number {
    return this.#running;
  }

  /** `execute` behind this cap. */
  wrap(execute: Executor): Executor {
    return async (request, options) => {
      if (this.#running >= this.max) {
        return failedBeforeRun(request.profile ?? "", {
          error_type: "BUSY",
          message:
            `Cannot run now: ${this.#running} executions are already running ${this.scope} (limit ${this.max}); retry shortly`,
        });
      }
      this.#running++;
      try {
        return await execute(request, options);
      } finally {
        this.#running--;
      }
    };
  }
}
