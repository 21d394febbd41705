import assert from "node:assert/strict";
import { coalesced } from "../src/_util/coalesced.ts";
import { delay } from "./_helpers.ts";

Deno.test("coalesced() runs one at a time, merges requests, keeps the gap, survives a throw", async () => {
  const starts: number[] = [];
  let failNext = true;
  const work = coalesced(async () => {
    starts.push(performance.now());
    await delay(20);
    if (failNext) {
      failNext = false;
      throw new Error("reported elsewhere");
    }
  }, 100);
  for (let i = 0; i < 50; i++) work.request(); // the first runs; the rest wait as one
  await delay(10);
  for (let i = 0; i < 50; i++) work.request(); // while it runs: still one more
  for (let i = 0; i < 100 && starts.length < 2; i++) await delay(50);
  await delay(300);
  assert.equal(starts.length, 2, `${starts.length} runs`);
  assert.ok(starts[1]! - starts[0]! >= 95, `${starts[1]! - starts[0]!} ms apart`);
  work.request();
  work.close();
  await delay(150);
  assert.equal(starts.length, 2, "a run after close()");
});

Deno.test("coalesced() rests nine times as long as a costly run took", async () => {
  const starts: number[] = [];
  const work = coalesced(async () => {
    starts.push(performance.now());
    await delay(60);
  }, 10);
  work.request();
  await delay(20);
  work.request(); // during the first run: the next waits 9 × its 60 ms after it ends
  for (let i = 0; i < 100 && starts.length < 2; i++) await delay(50);
  work.close();
  assert.equal(starts.length, 2);
  assert.ok(starts[1]! - starts[0]! >= 60 + 9 * 55, `${starts[1]! - starts[0]!} ms apart`);
});
