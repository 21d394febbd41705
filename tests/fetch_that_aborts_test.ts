/**
 * fetchThatAborts: an aborted request's response is closed even after a garbage collection, the
 * case Deno's own fetch loses (see src/_util/fetch_that_aborts.ts). Needs `gc()`: the test task
 * runs with `--v8-flags=--expose-gc`.
 */
import assert from "node:assert/strict";
import { fetchThatAborts } from "../src/_util/fetch_that_aborts.ts";

Deno.test("an aborted request's event stream is closed even after a garbage collection", async () => {
  const gc = (globalThis as { gc?: () => void }).gc;
  assert.ok(gc, "gc() is missing: run deno test with --v8-flags=--expose-gc");
  const encoder = new TextEncoder();
  /** The streams the server is writing, and how many its clients closed. */
  const open = new Set<
    { controller: ReadableStreamDefaultController; timer: ReturnType<typeof setInterval> }
  >();
  let closedByClient = 0;
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, () => {
    let stream: {
      controller: ReadableStreamDefaultController;
      timer: ReturnType<typeof setInterval>;
    };
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode(": open\n\n"));
        const timer = setInterval(() => controller.enqueue(encoder.encode(": alive\n\n")), 100);
        stream = { controller, timer };
        open.add(stream);
      },
      cancel() {
        clearInterval(stream.timer);
        open.delete(stream);
        closedByClient++;
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  const url = `http://127.0.0.1:${server.addr.port}/`;
  const readers: ReadableStreamDefaultReader<Uint8Array>[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const abort = new AbortController();
      // Only the body is kept, as the MCP SDK's client does.
      const reader = (await fetchThatAborts(url, { signal: abort.signal })).body!.getReader();
      readers.push(reader);
      await reader.read();
      for (let j = 0; j < 3; j++) gc();
      const before = closedByClient;
      abort.abort();
      for (let j = 0; j < 40 && closedByClient === before; j++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(closedByClient, before + 1, `request ${i}: the server never saw it closed`);
    }
  } finally {
    // Whatever happened, end every stream so the server can shut down.
    for (const { controller, timer } of open) {
      clearInterval(timer);
      controller.close();
    }
    for (const reader of readers) await reader.cancel().catch(() => {});
    await server.shutdown();
  }
});

Deno.test("a response through fetchThatAborts keeps its url, status, headers and body", async () => {
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    (request) =>
      new URL(request.url).pathname === "/from"
        ? Response.redirect(new URL("/to", request.url), 307)
        : new Response("body", { status: 201, headers: { "x-kept": "yes" } }),
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  try {
    const response = await fetchThatAborts(`${base}/from`, {
      signal: new AbortController().signal,
    });
    assert.equal(response.url, `${base}/to`);
    assert.equal(response.redirected, true);
    assert.equal(response.type, "basic");
    assert.equal(response.status, 201);
    assert.equal(response.headers.get("x-kept"), "yes");
    assert.equal(await response.text(), "body");
  } finally {
    await server.shutdown();
  }
});
