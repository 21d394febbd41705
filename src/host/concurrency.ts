/**
 * Caps on executions running at once (per HTTP session and over the whole server). A call over
 * the cap gets a BUSY result at once instead of queueing behind other clients' work.
 */
import type { Executor } from "../execution/executor.ts";
import { refusedResult } from "../execution/result_mapping.ts";

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

  /** `executor` behind this cap. */
  wrap(executor: Executor): Executor {
    return {
      execute: async (request, options) => {
        if (this.#running >= this.max) {
          return refusedResult({
            profile: request.profile ?? "",
            outcome: "BUSY",
            message:
              `Cannot run now: ${this.#running} executions are already running ${this.scope} (limit ${this.max}); retry shortly`,
          });
        }
        this.#running++;
        try {
          return await executor.execute(request, options);
        } finally {
          this.#running--;
        }
      },
    };
  }
}
