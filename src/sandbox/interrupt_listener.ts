/**
 * The program of a Worker thread in a session's sandbox process. The main thread is busy
 * running Python, so this thread takes the host's interrupt signal (SIGUSR1) and sets Pyodide's
 * interrupt buffer (2 = SIGINT); Python then raises KeyboardInterrupt and the session keeps its
 * state. Kept as JavaScript text and started from a Blob URL, so it needs no file permission
 * (and works inside the single binary).
 */
export const INTERRUPT_LISTENER_JS = `
self.onmessage = (event) => {
  const buffer = new Int32Array(event.data);
  Deno.addSignalListener("SIGUSR1", () => Atomics.store(buffer, 0, 2));
  self.postMessage("listening");
};
`;
