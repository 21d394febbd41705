/**
 * Places taken in turn: at most `max` holders at once, the others waiting first come first
 * served; a freed place goes straight to the oldest waiter. A waiter whose signal aborts leaves
 * the queue without a place.
 */
export class Turns {
  readonly max: number;
  #held = 0;
  /** Waiters, oldest first; each is handed a freed place directly. */
  #waiting: ((turn: boolean) => void)[] = [];

  constructor(max: number) {
    this.max = max;
  }

  /** Places held now. */
  get held(): number {
    return this.#held;
  }

  get waiting(): number {
    return this.#waiting.length;
  }

  /** Takes a place if one is free. */
  tryTake(): boolean {
    if (this.#held >= this.max) return false;
    this.#held++;
    return true;
  }

  /** Waits for a place: true when given one, false when `signal` aborted first. */
  take(signal?: AbortSignal): Promise<boolean> {
    if (signal?.aborted) return Promise.resolve(false);
    if (this.tryTake()) return Promise.resolve(true);
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

  /** Gives a place back: to the oldest waiter, or freed. */
  release(): void {
    const next = this.#waiting.shift();
    if (next) next(true);
    else this.#held--;
  }
}
