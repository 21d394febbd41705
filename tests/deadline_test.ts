/**
 * A deadline fires only after the I/O that arrived while the host could not run: a host that
 * stalls (busy, or starved of CPU) must not call an answer that came in time late.
 */
import assert from "node:assert/strict";
import { deadline } from "../src/_util/deadline.ts";
import { sessionSandbox } from "./_sandbox.ts";

function stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // the host busy, or not scheduled
  }
}

Deno.test("a deadline that falls due during a stall comes after the I/O that arrived", async () => {
  const child = new Deno.Command("sh", {
    args: ["-c", "sleep 0.1; echo answer"],
    stdout: "piped",
  }).spawn();
  const order: string[] = [];
  const read = child.stdout.getReader().read().then(() => order.push("answer"));
  const expired = Promise.withResolvers<void>();
  deadline(() => {
    order.push("deadline");
    expired.resolve();
  }, 300);
  stall(600);
  await Promise.all([read, expired.promise, child.status]);
  assert.deepEqual(order, ["answer", "deadline"]);
});

Deno.test("a deadline cleared in its last step does not fire", async () => {
  let fired = false;
  const timer = deadline(() => fired = true, 10);
  await new Promise((resolve) => setTimeout(resolve, 15)); // past its time, within its I/O turn
  timer.clear();
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(fired, false);
});

Deno.test("a session whose host stalls past the interrupt's grace keeps its state", async () => {
  await using sandbox = await sessionSandbox();
  const run = { timeoutMs: 300, memoryBytes: 512 * 1024 * 1024, outputBytes: 65536 };
  // The host stalls just after it sends the interrupt and arms the grace it gives the script
  // (the only 2 s timer here), in that turn of its event loop: the script stops at once, and
  // its answer waits unread while the grace runs out. (As it failed on a loaded CI machine.)
  const setTimer = globalThis.setTimeout;
  let stalled = false;
  globalThis.setTimeout = ((fn: () => void, ms?: number) => {
    const id = setTimer(fn, ms);
    if (ms === 2000 && !stalled) {
      stalled = true;
      void Promise.resolve().then(() => stall(2500));
    }
    return id;
  }) as typeof setTimeout;
  try {
    const outcome = await sandbox.execute({ ...run, code: "x = 1\nwhile True:\n    pass" }, {
      callTool: () => Promise.reject(new Error("no calls here")),
    });
    assert.ok(stalled, "the host stalled during the grace");
    assert.equal(outcome.stop, null, outcome.stop?.message);
    assert.match(outcome.interrupted ?? "", /time limit/);
    assert.equal(
      outcome.reply?.ok === false && outcome.reply.error.error_type,
      "KeyboardInterrupt",
    );
  } finally {
    globalThis.setTimeout = setTimer;
  }
  const after = await sandbox.execute({ ...run, timeoutMs: 30_000, code: "x" }, {
    callTool: () => Promise.reject(new Error("no calls here")),
  });
  assert.equal(after.reply?.ok && after.reply.result, 1);
});
