/**
 * A token bucket: up to `burst` takes at once, then `perSecond` on average. Pure but for the
 * clock, which is passed in.
 */
export class TokenBucket {
  readonly #burst: number;
  readonly #perMs: number;
  readonly #now: () => number;
  #tokens: number;
  #at: number;

  constructor(burst: number, perSecond: number, now: () => number = () => performance.now()) {
    this.#burst = burst;
    this.#perMs = perSecond / 1000;
    this.#now = now;
    this.#tokens = burst;
    this.#at = now();
  }

  /** Takes a token if there is one. */
  take(): boolean {
    const now = this.#now();
    this.#tokens = Math.min(this.#burst, this.#tokens + (now - this.#at) * this.#perMs);
    this.#at = now;
    if (this.#tokens < 1) return false;
    this.#tokens--;
    return true;
  }
}
