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
  const stalled: string[] = [];
  const out = asyncStdout({ onGone: (why) => stalled.push(why), maxQueuedBytes: 100, target });
  out.write("hello\n");
  out.write("world\n");
  for (let i = 0; i < 50 && written.join("") !== "hello\nworld\n"; i++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    release();
  }
  await new Promise((resolve) => setTimeout(resolve, 0));
  release();
  assert.equal(written.join(""), "hello\nworld\n");
  assert.equal(stalled.length, 0);
  // A sender waiting for the queue to drain (as the SDK's stdio transport does) hears that it
  // never will, rather than waiting for ever.
  const failed = Promise.withResolvers<Error>();
  out.once("error", failed.resolve);
  for (let i = 0; i < 5; i++) out.write("x".repeat(40)); // never taken: the target waits
  assert.equal(stalled.length, 1, "told once");
  assert.match((await failed.promise).message, /the client left 0 MiB unread/);
  assert.match(stalled[0]!, /the client left 0 MiB unread/);
});

Deno.test("asyncStdout(): a write that fails (a closed pipe) says the client is gone, once", async () => {
  const gone: string[] = [];
  const out = asyncStdout({
    onGone: (why) => gone.push(why),
    target: { write: () => Promise.reject(new Error("Broken pipe (os error 32)")) },
  });
  out.on("error", () => {});
  out.write("a\n");
  out.write("b\n");
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.deepEqual(gone, ["stdout closed (Broken pipe (os error 32))"]);
});
