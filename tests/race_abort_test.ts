/** raceAbort (src/_util/race_abort.ts): the promise or the abort, whichever comes first. */
import assert from "node:assert/strict";
import { raceAbort } from "../src/_util/race_abort.ts";

/** A signal that counts the abort listeners it holds. */
function countedSignal() {
  const controller = new AbortController();
  let listening = 0;
  const { signal } = controller;
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = ((type: string, listener: EventListener, options?: unknown) => {
    listening++;
    add(type, listener, options as AddEventListenerOptions);
  }) as typeof signal.addEventListener;
  signal.removeEventListener = ((type: string, listener: EventListener) => {
    listening--;
    remove(type, listener);
  }) as typeof signal.removeEventListener;
  return { controller, signal, listening: () => listening };
}

const never = new Promise<string>(() => {});
/** `promise`'s outcome, or "still waiting" after 1 s. */
const within = <T>(promise: Promise<T>) =>
  Promise.race([promise, new Promise((resolve) => setTimeout(resolve, 1000, "still waiting"))]);

Deno.test("raceAbort gives the promise's value when it comes first, and stops listening", async () => {
  const { signal, listening } = countedSignal();
  assert.equal(await raceAbort(Promise.resolve("value"), signal, () => "aborted"), "value");
  assert.equal(listening(), 0, "a listener was left on the signal");
  await assert.rejects(raceAbort(Promise.reject(new Error("no")), signal, () => 1), /no/);
  assert.equal(listening(), 0);
});

Deno.test("raceAbort gives what the abort gives, when it comes first or came before", async () => {
  const { controller, signal, listening } = countedSignal();
  const raced = raceAbort(never, signal, () => "aborted");
  controller.abort(new Error("stop"));
  assert.equal(await within(raced), "aborted");
  assert.equal(listening(), 0);
  // Already aborted: at once, not when the signal fires again (it never does).
  assert.equal(await within(raceAbort(never, signal, () => "aborted")), "aborted");
  // A promise settled already is no less settled for it (a server started before the cancel).
  assert.equal(await raceAbort(Promise.resolve("value"), signal, () => "aborted"), "value");
  await assert.rejects(
    raceAbort(never, signal, () => {
      throw signal.reason;
    }),
    /stop/,
  );
});

Deno.test("raceAbort without a signal is the promise", async () => {
  assert.equal(await raceAbort(Promise.resolve(3), undefined, () => 0), 3);
});
