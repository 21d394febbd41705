/**
 * Caps on executions running at once (per HTTP session or caller, and over the whole server). A
 * call over a cap waits its turn, first come first served, behind at most `maxWaiting` others;
 * one more gets a BUSY result at once. A call whose client cancels it while it waits leaves the
 * queue without running.
 */
import type { Executor } from "../execution/executor.ts";
import { refusedResult } from "../execution/result_mapping.ts";

export class ExecutionLimit {
  readonly max: number;
  readonly scope: string;
  readonly maxWaiting: number;
  #running = 0;
  /** Callers waiting for a place, oldest first; each is handed a freed place directly. */
  #waiting: ((turn: boolean) => void)[] = [];

  constructor(max: number, scope: string, maxWaiting = 0) {
    this.max = max;
    this.scope = scope;
    this.maxWaiting = maxWaiting;
  }

  get running(): number {
    return this.#running;
  }

  get waiting(): number {
    return this.#waiting.length;
  }

  /** `executor` behind this cap. */
  wrap(executor: Executor): Executor {
    return {
      execute: async (request, options) => {
        const refuse = (outcome: "BUSY" | "CANCELLED", message: string) =>
          refusedResult({ profile: request.profile ?? "", outcome, message });
        if (this.#running < this.max) {
          this.#running++;
        } else if (this.#waiting.length >= this.maxWaiting) {
          return refuse(
            "BUSY",
            `Cannot run now: ${this.#running} executions are running ${this.scope} (limit ${this.max}) ` +
              `and ${this.#waiting.length} are waiting (limit ${this.maxWaiting}); retry shortly`,
          );
        } else if (!await this.#turn(options?.signal)) {
          return refuse("CANCELLED", "Cancelled while waiting for its turn; nothing ran");
        }
        try {
          return await executor.execute(request, options);
        } finally {
          this.#release();
        }
      },
    };
  }

  /** Waits for a place: true when given one, false when `signal` aborted first. */
  #turn(signal: AbortSignal | undefined): Promise<boolean> {
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const onAbort = () => {
        this.#waiting = this.#waiting.filter((w) => w !== waiter);
        resolve(false);
      };
      const waiter = (turn: boolean) => {
        signal?.removeEventListener("abort", onAbort);
        resolve(turn);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(waiter);
    });
  }

  /** A finished execution's place goes to the oldest waiter, or is freed. */
  #release(): void {
    const next = this.#waiting.shift();
    if (next) next(true);
    else this.#running--;
  }
}
