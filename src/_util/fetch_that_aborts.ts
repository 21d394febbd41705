/**
 * Deno's `fetch`, but aborting the request's signal always cancels its response body, which
 * closes its connection: for the MCP client transports, whose 2026-07-28 cancel is closing the
 * request. Deno's own `fetch` (2.9.6) loses the abort once the `Response` object is gone and a
 * garbage collection has run, and the SDK's client keeps only a response's body: the body goes
 * on reading and the server is never told. Seen in this project's tests on a loaded machine (the
 * call's connection still established 30 s after the abort); reproduced with
 * `(await fetch(url, { signal })).body.getReader()`, one read, `gc()`, then the abort.
 */
export const fetchThatAborts: typeof fetch = async (input, init) => {
  const response = await fetch(input, init);
  const signal = init?.signal;
  if (!signal || !response.body) return response;
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
  signal.addEventListener("abort", () => reader.cancel(signal.reason).catch(() => {}), {
    once: true,
  });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
};
