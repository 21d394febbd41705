/**
 * ExecutionLimit: calls over the cap wait their turn in order, up to a bound; a cancelled waiter
 * leaves the queue without running. The executor behind it is a stand-in that runs until told;
 * the last test is a real server over stdio, whose one client is held to `--max-concurrent`.
 */
import assert from "node:assert/strict";
import { startServer } from "./_helpers.ts";
import { ExecutionLimit } from "../src/host/concurrency.ts";
import type { ExecutionResult } from "../src/execution/execution_result.ts";
import type { Executor } from "../src/execution/executor.ts";

/** An executor whose runs finish when the test says, recording the order they started in. */
function heldExecutor() {
  const started: string[] = [];
  const finishers = new Map<string, () => void>();
  const executor: Executor = {
    execute: (request) =>
      new Promise((resolve) => {
        started.push(request.code);
        finishers.set(request.code, () =>
          resolve({ success: true, result: request.code } as unknown as ExecutionResult));
      }),
  };
  return { executor, started, finish: (code: string) => finishers.get(code)!() };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

Deno.test("calls over the cap wait their turn, first come first served", async () => {
  const held = heldExecutor();
  const limited = new ExecutionLimit(1, "in this session", 2).wrap(held.executor);
  const a = limited.execute({ code: "a" });
  const b = limited.execute({ code: "b" });
  const c = limited.execute({ code: "c" });
  await tick();
  assert.deepEqual(held.started, ["a"]);
  held.finish("a");
  assert.equal((await a).result, "a");
  await tick();
  assert.deepEqual(held.started, ["a", "b"]);
  held.finish("b");
  await b;
  await tick();
  held.finish("c");
  assert.equal((await c).result, "c");
});

Deno.test("past max_waiting a call gets BUSY at once, naming both limits", async () => {
  const held = heldExecutor();
  const limit = new ExecutionLimit(1, "in this session", 1);
  const limited = limit.wrap(held.executor);
  const a = limited.execute({ code: "a" });
  const b = limited.execute({ code: "b" });
  const busy = await limited.execute({ code: "c" });
  assert.equal(busy.diagnostics?.error_type, "BUSY");
  assert.match(
    busy.diagnostics!.message,
    /1 executions are running in this session \(limit 1\) and 1 are waiting \(limit 1\)/,
  );
  held.finish("a");
  await a;
  await tick();
  held.finish("b");
  await b;
  assert.equal(limit.running, 0);
});

Deno.test("a waiting call cancelled by its client leaves the queue and never runs", async () => {
  const held = heldExecutor();
  const limit = new ExecutionLimit(1, "in this session", 4);
  const limited = limit.wrap(held.executor);
  const a = limited.execute({ code: "a" });
  const controller = new AbortController();
  const b = limited.execute({ code: "b" }, { signal: controller.signal });
  const c = limited.execute({ code: "c" });
  await tick();
  assert.equal(limit.waiting, 2);
  controller.abort();
  const cancelled = await b;
  assert.equal(cancelled.diagnostics?.error_type, "CANCELLED");
  assert.equal(limit.waiting, 1);
  held.finish("a");
  await a;
  await tick();
  assert.deepEqual(held.started, ["a", "c"]);
  held.finish("c");
  await c;
  assert.equal(limit.running, 0);
});

Deno.test("attack: a stdio client's calls run at most --max-concurrent at once; the rest wait", async () => {
  // Each running call may hold a sandbox of up to its memory limit (512 MB by default): 8 at
  // once held 1.9 GB, with nothing over stdio to stop 80.
  await using server = await startServer({ args: ["--max-concurrent", "2"] });
  const code = "import time\nstarted = time.time()\ntime.sleep(6)\nstarted";
  const replies = await Promise.all(Array.from({ length: 4 }, () => server.execute({ code })));
  for (const reply of replies) assert.equal(reply.success, true, reply.text);
  const starts = replies.map((r) => r.result as number).sort((a, b) => a - b);
  // The third began only once one of the first two had ended, six seconds in.
  assert.ok(starts[2]! - starts[0]! >= 5.5, `started at ${starts.map((t) => t - starts[0]!)}`);
});
