/**
 * What one HTTP upstream's replies may hold in the host at once, however they are made to
 * linger: bodies read whole until they end, and events of a stream until their blank line. One
 * reply is bounded (10 MiB, capped_fetch.ts), but a server decides how many it leaves open: pings
 * answered with bodies that never end, answers sent on a resumed stream that then stays open,
 * stream headers sent only after the request was cancelled; each route took the host past 1 GB.
 * A reply that would take the budget past its bound fails instead. The bound leaves room for
 * the most one execution may await at once from a server (10 calls, 10 MiB each).
 */
export const MAX_HELD_REPLY_BYTES = 128 * 1024 * 1024;

export class ReplyBudget {
  readonly max: number;
  #held = 0;

  constructor(max = MAX_HELD_REPLY_BYTES) {
    this.max = max;
  }

  /** Takes `bytes` if they fit. */
  take(bytes: number): boolean {
    if (this.#held + bytes > this.max) return false;
    this.#held += bytes;
    return true;
  }

  give(bytes: number): void {
    this.#held -= bytes;
  }

  get held(): number {
    return this.#held;
  }
}
