/**
 * SandboxPool's scheduling in process: warm sandboxes, replacements, the waiting queue and its
 * bound, cancellation, boot failures and shutdown. The sandboxes are stand-ins whose boot the
 * test finishes or fails at will (a real one is a Pyodide process; tests/pool_key_test.ts and the
 * end-to-end tests run the pool with those): the pool only uses `ready`, `exited`, `kill` and
 * disposal.
 */
import assert from "node:assert/strict";
import { silentLogger } from "../src/_util/log.ts";
import type { Sandbox } from "../src/sandbox/launcher.ts";
import {
  PoolBusyError,
  type PoolOptions,
  REFILL_DELAY_MS,
  SandboxPool,
  SCRIPT_ALONE_MS,
} from "../src/sandbox/pool.ts";
import { delay } from "./_helpers.ts";
import type { Profile } from "../src/sandbox/profile.ts";
import { plainProfile } from "./_profiles.ts";
import { availableMemoryMb, nextTarget, poolCeiling } from "../src/sandbox/pool_sizing.ts";

const profile = plainProfile;

interface FakeSandbox {
  profile: Profile;
  ready: Promise<void>;
  exited: Promise<Deno.CommandStatus>;
  killed: number;
  disposed: number;
  boot(): void;
  fail(error: Error): void;
  kill(): void;
  [Symbol.asyncDispose](): Promise<void>;
}

/** A pool whose launches are recorded; each boots when the test says (or at once). */
function poolWith(options: Partial<PoolOptions>, bootAtOnce = false) {
  const launched: FakeSandbox[] = [];
  const launch = (p: Profile): Sandbox => {
    const ready = Promise.withResolvers<void>();
    const exited = Promise.withResolvers<Deno.CommandStatus>();
    const status = { success: false, code: 137, signal: "SIGKILL" as const };
    const sandbox: FakeSandbox = {
      profile: p,
      ready: ready.promise,
      exited: exited.promise,
      killed: 0,
      disposed: 0,
      boot: () => ready.resolve(),
      fail: (error) => ready.reject(error),
      kill: () => {
        sandbox.killed++;
        exited.resolve(status);
      },
      [Symbol.asyncDispose]: () => {
        sandbox.disposed++;
        exited.resolve(status);
        return Promise.resolve();
      },
    };
    launched.push(sandbox);
    if (bootAtOnce) sandbox.boot();
    return sandbox as unknown as Sandbox;
  };
  const pool = new SandboxPool({
    warm: 0,
    maxBooting: 4,
    maxWaiting: 4,
    launch,
    log: silentLogger,
    ...options,
  });
  return { pool, launched };
}

/** Lets the pool's promise callbacks and zero-delay timers run. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

const work = profile("work");

Deno.test("SandboxPool keeps `warm` sandboxes booting for a profile it warms up", async () => {
  const { pool, launched } = poolWith({ warm: 2 });
  pool.warmUp(work);
  assert.equal(launched.length, 2);
  assert.ok(launched.every((s) => s.profile === work));
  launched.forEach((s) => s.boot());
  await settle();
  assert.equal(launched.length, 2, "no more than warm once they are ready");
  await pool.close();
});

Deno.test("SandboxPool.acquire() hands out a ready sandbox at once and boots a replacement shortly after", async () => {
  const { pool, launched } = poolWith({ warm: 1 }, true);
  pool.warmUp(work);
  await settle();
  const got = await pool.acquire(work);
  assert.equal(got, launched[0] as unknown as Sandbox);
  await settle();
  assert.equal(launched.length, 1, "a boot started beside the script just handed out");
  await delay(REFILL_DELAY_MS * 2); // a timer set later fires later
  assert.equal(launched.length, 2, "a replacement is booting");
  const next = await pool.acquire(work);
  assert.equal(next, launched[1] as unknown as Sandbox, "the replacement is handed out next");
  await pool.close();
});

Deno.test("SandboxPool, while another sandbox is ready, boots a replacement when the script handed out is over, not beside it", async () => {
  const { pool, launched } = poolWith({ warm: 2 }, true);
  pool.warmUp(work);
  await settle();
  const got = await pool.acquire(work);
  assert.equal(got, launched[0] as unknown as Sandbox);
  await delay(REFILL_DELAY_MS * 3);
  assert.equal(launched.length, 2, "a boot started beside the script it would slow");
  got.kill(); // the script is over
  await settle();
  assert.equal(launched.length, 2, "a boot started while the result is on its way");
  await delay(REFILL_DELAY_MS * 3);
  assert.equal(launched.length, 3, "the replacement is booting");
  assert.equal(await pool.acquire(work), launched[1] as unknown as Sandbox);
  assert.equal(await pool.acquire(work), launched[2] as unknown as Sandbox, "then the replacement");
  await pool.close();
});

Deno.test("SandboxPool boots the replacement of a sandbox whose script runs on past SCRIPT_ALONE_MS", async () => {
  const { pool, launched } = poolWith({ warm: 2 }, true);
  pool.warmUp(work);
  await settle();
  await pool.acquire(work);
  await delay(SCRIPT_ALONE_MS / 2);
  assert.equal(launched.length, 2, "the replacement booted beside a script still short");
  await delay(SCRIPT_ALONE_MS);
  assert.equal(launched.length, 3, "no replacement while a long script runs on");
  await pool.close();
});

Deno.test("SandboxPool queues callers up to maxWaiting and refuses one more with PoolBusyError", async () => {
  const { pool, launched } = poolWith({ maxBooting: 1, maxWaiting: 2 });
  const first = pool.acquire(work);
  const second = pool.acquire(work);
  await assert.rejects(pool.acquire(work), (error: unknown) => {
    assert.ok(error instanceof PoolBusyError);
    assert.equal(error.message, "Cannot run now: 2 executions are already waiting for a sandbox");
    return true;
  });
  assert.equal(launched.length, 1, "maxBooting bounds the boots");
  launched[0]!.boot();
  assert.equal(await first, launched[0] as unknown as Sandbox, "first come, first served");
  await settle();
  assert.equal(launched.length, 2, "the next boot starts for the one still waiting");
  launched[1]!.boot();
  assert.equal(await second, launched[1] as unknown as Sandbox);
  await pool.close();
});

Deno.test("SandboxPool rejects a waiting caller whose signal aborts, and frees its place", async () => {
  const { pool, launched } = poolWith({ maxBooting: 1, maxWaiting: 1 });
  const controller = new AbortController();
  const waiting = pool.acquire(work, controller.signal);
  controller.abort();
  await assert.rejects(waiting, /^Error: Cannot run: cancelled while waiting for a sandbox$/);
  const next = pool.acquire(work); // the place is free again: not BUSY
  launched[0]!.boot();
  assert.equal(await next, launched[0] as unknown as Sandbox, "the boot goes to the next caller");
  await pool.close();
});

Deno.test("SandboxPool refuses a caller whose signal has already aborted, taking no place or boot", async () => {
  const { pool, launched } = poolWith({ maxWaiting: 1 });
  const controller = new AbortController();
  controller.abort();
  await assert.rejects(
    pool.acquire(work, controller.signal),
    /^Error: Cannot run: cancelled while waiting for a sandbox$/,
  );
  assert.equal(launched.length, 0, "nothing boots for it");
  const next = pool.acquire(work); // its place was never taken: not BUSY
  launched[0]!.boot();
  assert.equal(await next, launched[0] as unknown as Sandbox);
  await pool.close();
});

Deno.test("SandboxPool stops listening for a caller's abort once the caller is served", async () => {
  const { pool, launched } = poolWith({});
  const controller = new AbortController();
  let listening = 0;
  const signal = controller.signal;
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = ((...args: Parameters<typeof add>) => {
    listening++;
    add(...args);
  }) as typeof add;
  signal.removeEventListener = ((...args: Parameters<typeof remove>) => {
    listening--;
    remove(...args);
  }) as typeof remove;
  const waiting = pool.acquire(work, signal);
  assert.equal(listening, 1);
  launched[0]!.boot();
  await waiting;
  assert.equal(listening, 0, "a long-lived signal keeps no listener per acquire");
  await pool.close();
});

Deno.test("SandboxPool rejects a waiting caller with the error of a failed boot", async () => {
  const { pool, launched } = poolWith({});
  const waiting = pool.acquire(work);
  const error = new Error("Cannot boot sandbox: the process exited");
  launched[0]!.fail(error);
  await assert.rejects(waiting, (e: unknown) => e === error);
  await settle();
  assert.equal(launched.length, 1, "no immediate retry after a failure (backoff)");
  await pool.close();
});

Deno.test("attack: SandboxPool lives through launches that throw at once, and boots again later", async () => {
  // Spawning throws when the host is out of file descriptors: from a refill timer, that ended
  // the host (attacker round 45).
  let spawnFails = true;
  const spawnError = new Error("Failed to spawn 'deno': Too many open files (os error 24)");
  let launches = 0;
  const pool = new SandboxPool({
    warm: 1,
    maxBooting: 2,
    maxWaiting: 4,
    log: silentLogger,
    launch: () => {
      launches++;
      if (spawnFails) throw spawnError;
      return {
        ready: Promise.resolve(),
        exited: new Promise(() => {}),
        kill: () => {},
        [Symbol.asyncDispose]: () => Promise.resolve(),
      } as unknown as Sandbox;
    },
  });
  pool.warmUp(work); // no throw
  await assert.rejects(pool.acquire(work), (e: unknown) => e === spawnError);
  await settle();
  const tried = launches;
  assert.ok(tried <= 4, `${tried} launches: it backs off, not spins`);
  spawnFails = false;
  const sandbox = await pool.acquire(work); // booted once the backoff is over
  assert.ok(sandbox);
  assert.ok(launches > tried);
  await pool.close();
});

Deno.test("SandboxPool.close() kills every sandbox and rejects waiters and later callers", async () => {
  const { pool, launched } = poolWith({ warm: 1, maxBooting: 2 });
  pool.warmUp(work);
  launched[0]!.boot();
  await settle();
  // Boots for "other" (for the caller, and its own warm set) never finish.
  const waiting = pool.acquire(profile("other"));
  assert.equal(launched.length, 3);
  await pool.close();
  await assert.rejects(waiting, /^Error: Cannot run: the server is shutting down$/);
  assert.deepEqual(launched.map((s) => s.disposed), [1, 1, 1], "ready and booting alike");
  await assert.rejects(pool.acquire(work), /^Error: Cannot run: the server is shutting down$/);
});

Deno.test("SandboxPool forgets a ready sandbox whose process exited", async () => {
  const { pool, launched } = poolWith({ warm: 1 }, true);
  pool.warmUp(work);
  await settle();
  launched[0]!.kill(); // died while waiting in the pool
  await settle();
  const got = await pool.acquire(work);
  assert.notEqual(got, launched[0] as unknown as Sandbox, "never a dead sandbox");
  await pool.close();
});

Deno.test("pool sizing: a miss adds one, an idle period takes one, within the bounds", async (t) => {
  const bounds = { min: 1, max: 3 };
  const cases: [number, "miss" | "idle", number][] = [
    [1, "miss", 2],
    [3, "miss", 3],
    [2, "idle", 1],
    [1, "idle", 1],
  ];
  for (const [target, event, next] of cases) {
    await t.step(`${target} after a ${event} -> ${next}`, () => {
      assert.equal(nextTarget(target, event, bounds), next);
    });
  }
  await t.step(
    "the ceiling: two per core, a quarter of the available memory, never below min",
    () => {
      assert.equal(poolCeiling({ cores: 2, availableMb: 20_000 }, 2), 4);
      assert.equal(poolCeiling({ cores: 16, availableMb: 4_000 }, 2), 4); // 1000 MB / 220 MB
      assert.equal(poolCeiling({ cores: 16, availableMb: 100 }, 2), 2);
      assert.equal(poolCeiling({ cores: 2, availableMb: null }, 1), 4);
      assert.equal(poolCeiling({ cores: 64, availableMb: 1_000_000 }, 2), 64);
    },
  );
  await t.step("available memory comes from /proc/meminfo, or is unknown", () => {
    const meminfo = "MemTotal:       24000000 kB\nMemAvailable:   2048000 kB\n";
    assert.equal(availableMemoryMb(() => meminfo), 2000);
    assert.equal(
      availableMemoryMb(() => {
        throw new Error("none");
      }),
      null,
    );
  });
});

Deno.test("SandboxPool keeps more ready after callers had to wait, and fewer again when idle", async () => {
  const { pool, launched } = poolWith({ warm: 1, maxReady: 3, maxBooting: 4, idleMs: 60 }, true);
  pool.warmUp(work);
  await settle();
  assert.equal(launched.length, 1);
  // A burst of three: one meets the ready sandbox, two wait (misses).
  const burst = await Promise.all([pool.acquire(work), pool.acquire(work), pool.acquire(work)]);
  assert.equal(new Set(burst).size, 3);
  await settle();
  const ready = () => launched.filter((s) => !burst.includes(s as unknown as Sandbox) && !s.killed);
  assert.equal(ready().length, 3, "two misses raised the target from 1 to 3");
  // A burst past the ceiling does not raise it further.
  const more = await Promise.all(Array.from({ length: 5 }, () => pool.acquire(work)));
  await settle();
  const readyNow = launched.filter((s) =>
    ![...burst, ...more].includes(s as unknown as Sandbox) && !s.killed
  );
  assert.equal(readyNow.length, 3, "never more than maxReady kept ready");
  // Idle periods bring it back to warm, killing the surplus.
  await new Promise((resolve) => setTimeout(resolve, 400));
  const kept = launched.filter((s) =>
    ![...burst, ...more].includes(s as unknown as Sandbox) && !s.killed
  );
  assert.equal(kept.length, 1, "an idle pool shrinks back to warm");
  await pool.close();
});
