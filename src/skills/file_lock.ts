/**
 * An exclusive lock on a file that other processes take too (the skills folder's `.lock`), waited
 * for at most `waitMs`. Deno's lock call cannot give up, and closing a file while its lock is
 * still pending is unsafe, so a lock not had in time is still waited for in the background and
 * let go of as soon as it comes. Until it has come, a new take is refused at once: a process
 * that holds the lock for good leaves one waiting thread behind, not one per attempt.
 */

/** The lock was not had in time, or an earlier wait for it has not ended yet. */
export class LockTimeoutError extends Error {}

export class FileLock {
  readonly path: string;
  readonly waitMs: number;
  /** A wait that outlived its take, still pending. */
  #late: Promise<void> | null = null;

  constructor(path: string, waitMs: number) {
    this.path = path;
    this.waitMs = waitMs;
  }

  /** The file, open and locked; closing it lets the lock go. */
  async take(): Promise<Deno.FsFile> {
    if (this.#late) {
      throw new LockTimeoutError(
        `another process still holds ${this.path} (an earlier wait for it has not ended)`,
      );
    }
    const taking = (async () => {
      // Opening waits too, for a FIFO a neighbour put there.
      const file = await Deno.open(this.path, { write: true, create: true });
      try {
        await file.lock(true);
        return file;
      } catch (error) {
        file.close();
        throw error;
      }
    })();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), this.waitMs);
    });
    const file = await Promise.race([taking, late]).finally(() => clearTimeout(timer));
    if (file) return file;
    this.#late = taking.then((f) => f.close(), () => {}).finally(() => this.#late = null);
    throw new LockTimeoutError(
      `another process has held ${this.path} for over ${this.waitMs / 1000} s`,
    );
  }
}
