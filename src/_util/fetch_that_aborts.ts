/**
 * Deno's `fetch`, but aborting the request's signal always cancels its response body, which
 * closes its connection: for the MCP client transports, whose 2026-07-28 cancel is closing the
 * request. Deno's own `fetch` (2.9.6) loses the abort once the `Response` object is gone and a
 * garbage collection has run, and the SDK's client keeps only a response's body: the body goes
 * on reading and the server is never told. Seen in this project's tests on a loaded machine (the
 * call's connection still established 30 s after the abort); reproduced with
 * `(await fetch(url, { signal })).body.getReader()`, one read, `gc()`, then the abort.
 */
import { responseWithBody } from "./response_with_body.ts";

export const fetchThatAborts: typeof fetch = async (input, init) => {
  const response = await fetch(input, init);
  const signal = init?.signal;
  if (!signal || !response.body) return response;
  const reader = response.body.getReader();
  const onAbort = () => reader.cancel(signal.reason).catch(() => {});
  // The signal may outlive the response (the transport's own), so the listener goes with it.
  const release = () => signal.removeEventListener("abort", onAbort);
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const chunk = await reader.read().catch((error) => {
        release();
        throw error;
      });
      if (chunk.done) {
        release();
        controller.close();
      } else controller.enqueue(chunk.value);
    },
    cancel: (reason) => {
      release();
      return reader.cancel(reason);
    },
  });
  signal.addEventListener("abort", onAbort, { once: true });
  return responseWithBody(response, body);
};
