/**
 * Tool results written to a sandbox that it has not read yet. They wait in the host's memory,
 * outside the sandbox's memory limit: a script that starts many calls and then never yields to
 * read their results (a busy loop) held 1.8 GB in the host with 199 results of 8 MB. A script
 * that reads them is never stopped for how many arrive at once (results it gathers come faster
 * than it decodes them), only one that stops reading while too much waits, or lets more wait
 * than its own memory limit could take in. While the host itself holds the sandbox still (a
 * person deciding on an approval, a session between scripts), it is not behind.
 */
import { type Deadline, deadline } from "../_util/deadline.ts";

export interface UnreadLimits {
  /** Past this, a sandbox that has read nothing for `stalledMs` (while results wait) is stopped. */
  stalledBytes: number;
  stalledMs: number;
  /** Past this, it is stopped at once (the sandbox's memory limit). */
  hardBytes: number;
}

const MIB = 1024 * 1024;

/** The limits for a sandbox whose memory limit is `memoryBytes`. */
export function unreadLimits(memoryBytes: number): UnreadLimits {
  return { stalledBytes: 32 * MIB, stalledMs: 2000, hardBytes: memoryBytes };
}

/** Whether unread results are too many (pure): the reason to stop the sandbox, or null. */
export function unreadVerdict(
  unreadBytes: number,
  sinceLastReadMs: number,
  limits: UnreadLimits,
): string | null {
  const mib = (n: number) => `${n / MIB} MiB`;
  if (unreadBytes > limits.hardBytes) {
    return `Tool results waiting for the script exceeded ${
      mib(limits.hardBytes)
    }, its memory limit`;
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
  #timer: Deadline | undefined;
  #over = false;
  /** Held still by the host: not behind however long it reads nothing. */
  #held = false;

  constructor(
    private readonly exceeded: (message: string) => void,
    private readonly limits: UnreadLimits,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.#lastRead = now();
  }

  /** The host holds the sandbox still (SIGSTOP): its time without reading stops counting. */
  hold(): void {
    this.#held = true;
  }

  /** The host lets the sandbox go on: it is not behind for the time it was held. */
  release(): void {
    this.#held = false;
    this.#lastRead = this.now();
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
    this.#timer?.clear();
    this.#over = true;
  }

  #check(): void {
    const sinceLastRead = this.#held ? 0 : this.now() - this.#lastRead;
    const verdict = unreadVerdict(this.#bytes, sinceLastRead, this.limits);
    if (verdict !== null && !this.#over) {
      this.close();
      this.exceeded(verdict);
    }
  }

  #checkLater(): void {
    if (this.#timer !== undefined) return;
    // A deadline: the reads that completed while the host was stalled count first.
    this.#timer = deadline(
      () => {
        this.#timer = undefined;
        this.#check();
        if (!this.#over && this.#bytes > this.limits.stalledBytes) this.#checkLater();
      },
      this.limits.stalledMs,
      { unref: true },
    );
  }
}
