/**
 * Tool results written to a sandbox that it has not read yet. They wait in the host's memory,
 * outside the sandbox's memory limit: a script that starts many calls and then never yields to
 * read their results (a busy loop, a paused session) held 1.8 GB in the host with 199 results of
 * 8 MB. A script that reads them is never stopped for how many arrive at once (results it
 * gathers come faster than it decodes them), only one that stops reading while too much waits,
 * or lets more wait than any script could take in.
 */

export interface UnreadLimits {
  /** Past this, a sandbox that has read nothing for `stalledMs` (while results wait) is stopped. */
  stalledBytes: number;
  stalledMs: number;
  /** Past this, it is stopped at once. */
  hardBytes: number;
}

const MIB = 1024 * 1024;

export const UNREAD_LIMITS: UnreadLimits = {
  stalledBytes: 32 * MIB,
  stalledMs: 2000,
  hardBytes: 128 * MIB,
};

/** Whether unread results are too many (pure): the reason to stop the sandbox, or null. */
export function unreadVerdict(
  unreadBytes: number,
  sinceLastReadMs: number,
  limits: UnreadLimits,
): string | null {
  const mib = (n: number) => `${n / MIB} MiB`;
  if (unreadBytes > limits.hardBytes) {
    return `Tool results waiting for the script exceeded ${mib(limits.hardBytes)}`;
  }
  if (unreadBytes > limits.stalledBytes && sinceLastReadMs >= limits.stalledMs) {
    return `Tool results the script left unread exceeded ${mib(limits.stalledBytes)} for ` +
      `${limits.stalledMs / 1000} s (await the calls it starts instead of keeping Python busy ` +
      "while they return)";
  }
  return null;
}

/** Counts what a sandbox has not read and calls `exceeded` once when it is too much. */
export class UnreadAnswers {
  #bytes = 0;
  #lastRead: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #over = false;

  constructor(
    private readonly exceeded: (message: string) => void,
    private readonly limits: UnreadLimits = UNREAD_LIMITS,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.#lastRead = now();
  }

  /** Before `bytes` are written: false when they must not be (the sandbox is being stopped). */
  writing(bytes: number): boolean {
    if (this.#over) return false;
    // Nothing was waiting: the sandbox is not behind, whenever it last read.
    if (this.#bytes === 0) this.#lastRead = this.now();
    this.#bytes += bytes;
    this.#check();
    if (!this.#over && this.#bytes > this.limits.stalledBytes) this.#checkLater();
    return !this.#over;
  }

  /** `bytes` written earlier have been read (their write completed, or failed). */
  read(bytes: number): void {
    this.#bytes -= bytes;
    this.#lastRead = this.now();
  }

  close(): void {
    clearTimeout(this.#timer);
    this.#over = true;
  }

  #check(): void {
    const verdict = unreadVerdict(this.#bytes, this.now() - this.#lastRead, this.limits);
    if (verdict !== null && !this.#over) {
      this.close();
      this.exceeded(verdict);
    }
  }

  #checkLater(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#check();
      if (!this.#over && this.#bytes > this.limits.stalledBytes) this.#checkLater();
    }, this.limits.stalledMs);
    Deno.unrefTimer(this.#timer);
  }
}
