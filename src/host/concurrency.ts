/**
 * Caps on executions running at once (per HTTP session or caller, and over the whole server). A
 * call over a cap waits its turn, first come first served, behind at most `maxWaiting` others;
 * one more gets a BUSY result at once. A call whose client cancels it while it waits leaves the
 * queue without running.
 */
import type { Executor } from "../execution/executor.ts";
import { refusedResult } from "../execution/result_mapping.ts";
import { Turns } from "../_util/turns.ts";

export class ExecutionLimit {
  readonly max: number;
  readonly scope: string;
  readonly maxWaiting: number;
  readonly #turns: Turns;

  constructor(max: number, scope: string, maxWaiting = 0) {
    this.max = max;
    this.scope = scope;
    this.maxWaiting = maxWaiting;
    this.#turns = new Turns(max);
  }

  get running(): number {
    return this.#turns.held;
  }

  get waiting(): number {
    return this.#turns.waiting;
  }

  /** `executor` behind this cap. */
  wrap(executor: Executor): Executor {
    return {
      execute: async (request, options) => {
        const refuse = (outcome: "BUSY" | "CANCELLED", message: string) =>
          refusedResult({ profile: request.profile ?? "", outcome, message });
        if (!this.#turns.tryTake()) {
          if (this.waiting >= this.maxWaiting) {
            return refuse(
              "BUSY",
              `Cannot run now: ${this.running} executions are running ${this.scope} (limit ${this.max}) ` +
                `and ${this.waiting} are waiting (limit ${this.maxWaiting}); retry shortly`,
            );
          }
          if (!await this.#turns.take(options?.signal)) {
            return refuse("CANCELLED", "Cancelled while waiting for its turn; nothing ran");
          }
        }
        try {
          return await executor.execute(request, options);
        } finally {
          this.#turns.release();
        }
      },
    };
  }
}
