import assert from "node:assert/strict";
import { asyncStdout } from "../src/host/async_stdout.ts";

Deno.test("asyncStdout(): writes in order without blocking; a client that takes nothing is gone past the bound", async () => {
  const written: string[] = [];
  let release = () => {};
  const target = {
    write(bytes: Uint8Array) {
      // Half of each write at a time: the rest is written after.
      const half = Math.max(1, bytes.length >> 1);
      written.push(new TextDecoder().decode(bytes.subarray(0, half)));
      return new Promise<number>((resolve) => release = () => resolve(half));
    },
  };
  const stalled: number[] = [];
  const out = asyncStdout({ onStalled: (n) => stalled.push(n), maxQueuedBytes: 100, target });
  out.write("hello\n");
  out.write("world\n");
  for (let i = 0; i < 50 && written.join("") !== "hello\nworld\n"; i++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    release();
  }
  await new Promise((resolve) => setTimeout(resolve, 0));
  release();
  assert.equal(written.join(""), "hello\nworld\n");
  assert.deepEqual(stalled, []);
  for (let i = 0; i < 5; i++) out.write("x".repeat(40)); // never taken: the target waits
  assert.equal(stalled.length, 1, "told once");
  assert.ok(stalled[0]! > 100);
});
