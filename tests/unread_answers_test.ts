import assert from "node:assert/strict";
import { UnreadAnswers, unreadVerdict } from "../src/sandbox/unread_answers.ts";

const LIMITS = { stalledBytes: 100, stalledMs: 50, hardBytes: 1000 };

Deno.test("unreadVerdict(): a reader that keeps reading is never stopped below the hard limit", () => {
  assert.equal(unreadVerdict(999, 0, LIMITS), null);
  assert.equal(unreadVerdict(101, 49, LIMITS), null);
  assert.match(unreadVerdict(101, 50, LIMITS)!, /left unread exceeded/);
  assert.equal(unreadVerdict(100, 10_000, LIMITS), null);
  assert.match(
    unreadVerdict(1001, 0, LIMITS)!,
    /waiting for the script exceeded .*its memory limit/,
  );
});

Deno.test("UnreadAnswers: stops a sandbox that stops reading, once; not one that reads", async () => {
  const stopped: string[] = [];
  const reading = new UnreadAnswers((m) => stopped.push(m), LIMITS);
  for (let i = 0; i < 20; i++) {
    assert.equal(reading.writing(60), true);
    await new Promise((resolve) => setTimeout(resolve, 10));
    reading.read(60);
  }
  await new Promise((resolve) => setTimeout(resolve, 120));
  assert.equal(stopped.length, 0);
  reading.close();

  const stalled = new UnreadAnswers((m) => stopped.push(m), LIMITS);
  // Idle since long before its first result: it is not behind for that.
  await new Promise((resolve) => setTimeout(resolve, 80));
  assert.equal(stalled.writing(60), true);
  assert.equal(stalled.writing(60), true); // 120 waiting: over, but only just
  assert.equal(stopped.length, 0);
  await new Promise((resolve) => setTimeout(resolve, 130));
  assert.equal(stopped.length, 1);
  assert.match(stopped[0]!, /left unread/);
  assert.equal(stalled.writing(1), false, "nothing more is written to a sandbox being stopped");

  // Held still by the host (a person deciding): not behind however long; behind again after.
  const held = new UnreadAnswers((m) => stopped.push(m), LIMITS);
  held.hold();
  assert.equal(held.writing(120), true);
  await new Promise((resolve) => setTimeout(resolve, 130));
  assert.equal(stopped.length, 1);
  held.release();
  await new Promise((resolve) => setTimeout(resolve, 130));
  assert.equal(stopped.length, 2);
  assert.match(stopped[1]!, /left unread/);
  stopped.pop();

  const flood = new UnreadAnswers((m) => stopped.push(m), LIMITS);
  assert.equal(flood.writing(600), true);
  assert.equal(flood.writing(600), false);
  assert.equal(stopped.length, 2);
  assert.match(stopped[1]!, /waiting for the script exceeded .*its memory limit/);
});

Deno.test("UnreadAnswers: a read that completed while the host stalled counts before the check", async () => {
  const stopped: string[] = [];
  const answers = new UnreadAnswers((m) => stopped.push(m), LIMITS);
  // The sandbox reads its result at 30 ms (a pipe write completing); the host is busy from
  // before then until well past the check, which falls due at 50 ms.
  const child = new Deno.Command("sh", { args: ["-c", "sleep 0.03; echo"], stdout: "piped" })
    .spawn();
  const read = child.stdout.getReader().read().then(() => answers.read(150));
  answers.writing(150);
  const until = performance.now() + 300;
  while (performance.now() < until) {
    // stalled
  }
  await Promise.all([read, child.status]);
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.deepEqual(stopped, [], "stopped for results it had read");
  answers.close();
});
