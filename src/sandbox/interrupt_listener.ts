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
