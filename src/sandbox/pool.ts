/**
 * Pre-booted, single-use sandboxes, one warm set per profile. `acquire` hands out a booted
 * sandbox (it is never returned: the caller runs one script and kills it) and boots a
 * replacement in the background, off the cores while the script runs if it can wait. When none
 * is ready, callers queue, up to a bound. The number kept ready follows demand, between `warm`
 * and `maxReady` (see pool_sizing.ts).
 */
import type { Logger } from "../_util/log.ts";
import { Sandbox } from "./launcher.ts";
import { type Profile, sandboxKey } from "./profile.ts";
import { nextTarget, POOL_IDLE_MS } from "./pool_sizing.ts";

export interface PoolOptions {
  /** Booted sandboxes kept ready per profile in use, at least. */
  warm: number;
  /**
   * Booted sandboxes kept ready at most, all profiles together, when demand has raised the
   * targets (default: `warm`, a pool that does not grow).
   */
  maxReady?: number;
  /** A profile's pool that sees no call for this long keeps one sandbox fewer ready. */
  idleMs?: number;
  /** Sandboxes booting at once, all profiles together (boot is CPU-bound). */
  maxBooting: number;
  /** Callers that may wait for a sandbox; one more is refused. */
  maxWaiting: number;
  /** Starts a sandbox process for a profile (injected so tests and the CLI can vary it). */
  launch: (profile: Profile) => Sandbox;
  log: Logger;
}

/**
 * When the replacement of a sandbox just handed out starts booting. A boot takes both cores for
 * about half a second, and a script that shares them runs slower; spawning also stalls the
 * host's event loop for about a millisecond, which a warm `print(1)` felt. Measured through the
 * server, interleaved, median of 20: a 2e6-iteration loop then a 1 MB JSON round trip took 611
 * ms with the replacement held off as below, against 782 ms with it booting 20 ms after the
 * hand-off (warm `print(1)` and a 2 KB script: no difference beyond noise).
 *
 * - While another sandbox of the profile is ready, the next caller does not need the
 *   replacement soon: it boots `REFILL_DELAY_MS` after the script is over (its process exits;
 *   the result is then on its way to the client), or once the script has run for
 *   `SCRIPT_ALONE_MS`.
 * - The last ready one's replacement boots `REFILL_DELAY_MS` after the hand-off: the next caller
 *   would otherwise wait for a whole boot.
 */
export const REFILL_DELAY_MS = 20;
export const SCRIPT_ALONE_MS = 2000;

export class PoolBusyError extends Error {
  constructor(waiting: number) {
    super(`Cannot run now: ${waiting} executions are already waiting for a sandbox`);
    this.name = "PoolBusyError";
  }
}

interface Waiter {
  profile: Profile;
  /** `sandboxKey(profile)`, computed once. */
  key: string;
  resolve(sandbox: Sandbox): void;
  reject(error: Error): void;
  /** Stops listening for the caller's abort (once the waiter is served or gone). */
  forget(): void;
}

export class SandboxPool implements AsyncDisposable {
  readonly #options: PoolOptions;
  readonly #ready = new Map<string, Sandbox[]>();
  readonly #profiles = new Map<string, Profile>();
  readonly #booting = new Map<string, number>();
  readonly #live = new Set<Sandbox>();
  #waiters: Waiter[] = [];
  #closed = false;
  #failures = 0;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  /** Sandboxes to keep ready per profile, when demand moved it from `warm`. */
  readonly #targets = new Map<string, number>();
  /** Profiles that have had a booted sandbox. */
  readonly #warmed = new Set<string>();
  /** Profiles called since the last idle check. */
  readonly #called = new Set<string>();
  readonly #idleTimer: ReturnType<typeof setInterval>;

  constructor(options: PoolOptions) {
    this.#options = options;
    this.#idleTimer = setInterval(() => this.#shrinkIdle(), options.idleMs ?? POOL_IDLE_MS);
    Deno.unrefTimer(this.#idleTimer);
  }

  /** Starts keeping `profile` warm. */
  warmUp(profile: Profile): void {
    this.#profiles.set(sandboxKey(profile), profile);
    this.#refill();
  }

  /** A booted sandbox for `profile`, for one execution. The caller must dispose of it. */
  acquire(profile: Profile, signal?: AbortSignal): Promise<Sandbox> {
    if (this.#closed) return Promise.reject(new Error("Cannot run: the server is shutting down"));
    const key = sandboxKey(profile);
    this.#profiles.set(key, profile);
    this.#called.add(key);
    const sandbox = this.#ready.get(key)?.shift();
    if (sandbox) {
      this.#replaceLater(key, sandbox);
      return Promise.resolve(sandbox);
    }
    const cancelled = () => new Error("Cannot run: cancelled while waiting for a sandbox");
    if (signal?.aborted) return Promise.reject(cancelled());
    this.#grow(key); // a miss: this caller waits for a boot
    if (this.#waiters.length >= this.#options.maxWaiting) {
      return Promise.reject(new PoolBusyError(this.#waiters.length));
    }
    const waiting = Promise.withResolvers<Sandbox>();
    const onAbort = () => {
      this.#take(waiter);
      waiter.reject(cancelled());
    };
    const waiter: Waiter = {
      profile,
      key,
      resolve: waiting.resolve,
      reject: waiting.reject,
      forget: () => signal?.removeEventListener("abort", onAbort),
    };
    this.#waiters.push(waiter);
    signal?.addEventListener("abort", onAbort, { once: true });
    this.#refill();
    return waiting.promise;
  }

  /** Boots the replacement of a sandbox just handed out, when (see REFILL_DELAY_MS) it is due. */
  #replaceLater(key: string, sandbox: Sandbox): void {
    const soon = () => setTimeout(() => this.#refill(), REFILL_DELAY_MS);
    if ((this.#ready.get(key)?.length ?? 0) === 0) {
      soon();
      return;
    }
    const timer = setTimeout(() => this.#refill(), SCRIPT_ALONE_MS);
    void sandbox.exited.finally(() => {
      clearTimeout(timer);
      soon();
    });
  }

  /** Removes a waiter from the queue; it no longer listens for its caller's abort. */
  #take(waiter: Waiter): void {
    this.#waiters = this.#waiters.filter((w) => w !== waiter);
    waiter.forget();
  }

  #target(key: string): number {
    return this.#targets.get(key) ?? this.#options.warm;
  }

  /**
   * One more sandbox kept ready for `key`, if the ceiling over all profiles allows. Not while
   * the profile's first sandboxes are still booting: a call that comes before the pool was ever
   * ready (at start-up) says nothing about demand.
   */
  #grow(key: string): void {
    if (!this.#warmed.has(key)) return;
    const max = this.#options.maxReady ?? this.#options.warm;
    let total = 0;
    for (const k of this.#profiles.keys()) total += this.#target(k);
    if (total >= max) return;
    this.#targets.set(key, nextTarget(this.#target(key), "miss", { min: this.#options.warm, max }));
  }

  /** One sandbox fewer kept ready for each profile not called since the last check. */
  #shrinkIdle(): void {
    for (const key of this.#profiles.keys()) {
      if (this.#called.has(key) || this.#target(key) <= this.#options.warm) continue;
      const target = nextTarget(this.#target(key), "idle", {
        min: this.#options.warm,
        max: this.#options.maxReady ?? this.#options.warm,
      });
      this.#targets.set(key, target);
      const ready = this.#ready.get(key) ?? [];
      while (ready.length > target) ready.shift()!.kill();
    }
    this.#called.clear();
  }

  #wanted(key: string): number {
    const waiting = this.#waiters.filter((w) => w.key === key).length;
    const ready = this.#ready.get(key)?.length ?? 0;
    const booting = this.#booting.get(key) ?? 0;
    return this.#target(key) + waiting - ready - booting;
  }

  #totalBooting(): number {
    let total = 0;
    for (const n of this.#booting.values()) total += n;
    return total;
  }

  #refill(): void {
    if (this.#closed) return;
    // Serve waiters' profiles first, then keep every known profile warm.
    const order = [
      ...new Set([...this.#waiters.map((w) => w.key), ...this.#profiles.keys()]),
    ];
    for (const key of order) {
      while (this.#wanted(key) > 0 && this.#totalBooting() < this.#options.maxBooting) {
        this.#boot(this.#profiles.get(key)!);
      }
    }
  }

  #boot(profile: Profile): void {
    const key = sandboxKey(profile);
    this.#booting.set(key, (this.#booting.get(key) ?? 0) + 1);
    const failed = (error: Error) => {
      if (this.#closed) return;
      this.#failures++;
      this.#options.log.error("sandbox failed to boot", { error: error.message });
      const waiter = this.#waiters.find((w) => w.key === key);
      if (waiter) {
        this.#take(waiter);
        waiter.reject(error);
      }
    };
    const settled = () => {
      this.#booting.set(key, (this.#booting.get(key) ?? 1) - 1);
      // Back off after repeated boot failures instead of spinning.
      if (this.#failures === 0) return this.#refill();
      clearTimeout(this.#retryTimer);
      this.#retryTimer = setTimeout(
        () => this.#refill(),
        Math.min(5000, 100 * 2 ** this.#failures),
      );
    };
    let sandbox: Sandbox;
    try {
      sandbox = this.#options.launch(profile);
    } catch (error) {
      // Spawning throws at once when the host is out of file descriptors: thrown from a refill
      // timer, that ended the host (attacker round 45). A boot that failed, tried again later.
      failed(error instanceof Error ? error : new Error(String(error)));
      // Settled later, as a boot is: settled now, the refill loop that called this would boot
      // (and fail) again at once, for ever.
      return void queueMicrotask(settled);
    }
    this.#live.add(sandbox);
    void sandbox.exited.finally(() => {
      this.#live.delete(sandbox);
      const list = this.#ready.get(key);
      if (list?.includes(sandbox)) this.#ready.set(key, list.filter((s) => s !== sandbox));
    });
    sandbox.ready.then(
      () => {
        this.#failures = 0;
        this.#booted(key, sandbox);
      },
      failed,
    ).finally(settled);
  }

  #booted(key: string, sandbox: Sandbox): void {
    if (this.#closed) {
      sandbox.kill();
      return;
    }
    this.#warmed.add(key);
    const waiter = this.#waiters.find((w) => w.key === key);
    if (waiter) {
      this.#take(waiter);
      waiter.resolve(sandbox);
      return;
    }
    const list = this.#ready.get(key) ?? [];
    list.push(sandbox);
    this.#ready.set(key, list);
  }

  /** Kills every sandbox, booting, ready or running, and waits for them to exit. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    clearInterval(this.#idleTimer);
    for (const waiter of this.#waiters) {
      waiter.forget();
      waiter.reject(new Error("Cannot run: the server is shutting down"));
    }
    this.#waiters = [];
    const all = [...this.#live];
    this.#ready.clear();
    await Promise.all(all.map((s) => s[Symbol.asyncDispose]()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
