/**
 * The signal the host sends to interrupt a session's script. Not SIGUSR1: since Deno 2.9.2,
 * SIGUSR1 opens the V8 inspector on 127.0.0.1:9229 (as in Node), listener or not, and anyone
 * on the machine could then run JavaScript in the session's sandbox.
 */
export const INTERRUPT_SIGNAL: Deno.Signal = "SIGUSR2";

/**
 * The program of a Worker thread in a session's sandbox process. The main thread is busy
 * running Python, so this thread takes the host's interrupt signal (`INTERRUPT_SIGNAL`) and sets Pyodide's
 * interrupt buffer (2 = SIGINT); Python then raises KeyboardInterrupt and the session keeps its
 * state. Kept as JavaScript text and started from a Blob URL, so it needs no file permission
 * (and works inside the single binary).
 */
export const INTERRUPT_LISTENER_JS = `
self.onmessage = (event) => {
  const buffer = new Int32Array(event.data);
  Deno.addSignalListener("${INTERRUPT_SIGNAL}", () => {
    Atomics.store(buffer, 0, 2);
    self.postMessage("interrupt"); // read only when Python waits (see onInterrupt in worker.ts)
  });
  self.postMessage("listening");
};
`;

/**
 * The interrupt buffer as Python reads it. CPython's check (`_Py_CheckEmscriptenSignals_Helper`,
 * every 50 bytecodes) reads the buffer, then writes 0: an interrupt the listener thread stores
 * between the two is overwritten unseen. A busy loop checks so often that 2-3 % of interrupts
 * were lost (measured: 71 of 3,000), and such a session's script outlived its grace and was
 * killed (CI failed so). Here the read takes the value atomically, only when there is one, and
 * the write does nothing. As fast as the plain buffer in a pure-Python loop, within noise.
 */
export function takenAtomically(buffer: Int32Array): Int32Array {
  const view = Object.defineProperty({}, 0, {
    get: () => buffer[0] === 0 ? 0 : Atomics.exchange(buffer, 0, 0),
    set: () => {},
  });
  return view as Int32Array;
}
