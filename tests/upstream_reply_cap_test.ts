/**
 * An HTTP upstream's reply has the bound a stdio server's message has (10 MiB): past it the call
 * fails in the script and the host lives on. One 300 MB reply used to end the host.
 */
import assert from "node:assert/strict";
import { cappedFetch } from "../src/upstream/capped_fetch.ts";
import { startHttpFixture, startServer } from "./_helpers.ts";

const MIB = 1024 * 1024;

function replying(body: string[], type: string): typeof fetch {
  const encoder = new TextEncoder();
  return () =>
    Promise.resolve(
      new Response(
        new ReadableStream({
          start(controller) {
            for (const chunk of body) controller.enqueue(encoder.encode(chunk));
            controller.close();
          },
        }),
        { headers: { "content-type": type } },
      ),
    );
}

Deno.test("cappedFetch() bounds a JSON reply, and each event of a stream, not the stream", async (t) => {
  const read = (f: typeof fetch) => f("http://x/").then((r) => r.text());
  await t.step("a JSON body up to the bound passes; one past it fails", async () => {
    assert.equal(await read(cappedFetch(replying(["ab", "cd"], "application/json"), 4)), "abcd");
    await assert.rejects(
      read(cappedFetch(replying(["ab", "cde"], "application/json"), 4)),
      /the message is larger than/,
    );
  });
  await t.step("many events, each within the bound, pass whatever they add up to", async () => {
    const events = Array.from({ length: 50 }, (_, i) => `data: ${"x".repeat(40)}${i}\n\n`);
    const crlf = Array.from({ length: 50 }, () => `event: m\r\ndata: ${"y".repeat(40)}\r\n\r\n`);
    const split = ["data: ", "x".repeat(40), "\n", "\n", "data: z\n\n"];
    for (const body of [events, crlf, split]) {
      const text = await read(cappedFetch(replying(body, "text/event-stream"), 64));
      assert.equal(text, body.join(""));
    }
  });
  await t.step("lines may end in CR, LF or CRLF, and chunks may split anything", async () => {
    const stream = "event: endpoint\rdata: /messages\r\r: ping\r\n\r\ndata: a\n\ndata: b\r\n\n";
    // The parser the SDK uses must see the same bytes, whatever the chunks.
    for (let cut = 0; cut <= stream.length; cut++) {
      const body = [stream.slice(0, cut), stream.slice(cut)];
      assert.equal(await read(cappedFetch(replying(body, "text/event-stream"), 64)), stream);
    }
  });
  await t.step("a CR-only event is passed once it ends, with the stream still open", async () => {
    const open = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("event: endpoint\rdata: /messages\r\r"));
      },
    });
    const inner: typeof fetch = () =>
      Promise.resolve(new Response(open, { headers: { "content-type": "text/event-stream" } }));
    const reader = (await cappedFetch(inner, 64)("http://x/")).body!.getReader();
    const { value } = await reader.read();
    assert.equal(new TextDecoder().decode(value), "event: endpoint\rdata: /messages\r\r");
    await reader.cancel();
  });
  await t.step(
    "an event past the bound is replaced by an error answer to its request",
    async () => {
      const big = (id: string) => [
        `data: {"jsonrpc":"2.0","id":${id},"result":{"content":"`,
        ...Array.from({ length: 20 }, () => "x".repeat(10)),
        '"}}\n\n',
      ];
      const after = "data: next\n\n";
      const text = await read(
        cappedFetch(replying([...big("7"), after], "text/event-stream; charset=utf-8"), 64),
      );
      const [answer, next] = text.split("\n\n");
      const error = JSON.parse(answer!.replace(/^data: /, ""));
      assert.deepEqual([error.id, error.error.code], [7, -32603]);
      assert.match(error.error.message, /one event of its stream is larger than/);
      assert.equal(`${next}\n\n`, after);
      const named = await read(cappedFetch(replying(big('"call-1"'), "text/event-stream"), 64));
      assert.equal(JSON.parse(named.replace(/^data: /, "")).id, "call-1");
      // Lines of one event, without a blank line between them, add up; a message that answers
      // nothing (a notification) is dropped.
      const lines = [
        'data: {"jsonrpc":"2.0","method":"notifications/message",\n',
        ...Array.from({ length: 20 }, () => `data: ${"x".repeat(10)}\n`),
        "\n",
        after,
      ];
      assert.equal(await read(cappedFetch(replying(lines, "text/event-stream"), 64)), after);
    },
  );
});

for (const mode of ["http", "sse"] as const) {
  Deno.test(`a ${mode} upstream's reply past 10 MiB fails the call, and the host lives on`, async () => {
    await using fixture = await startHttpFixture(mode);
    const dir = await Deno.makeTempDir();
    const config = `${dir}/mcp_servers.json`;
    await Deno.writeTextFile(
      config,
      JSON.stringify({
        servers: { remote: { url: fixture.url, ...(mode === "sse" ? { type: "sse" } : {}) } },
        settings: { pool_size: 1, permissions_dir: `${Deno.cwd()}/tests/fixtures/permissions` },
      }),
    );
    await using server = await startServer({ args: ["--config", config] });
    const r = await server.execute({
      code: [
        "from mcp_tools import remote",
        "try:",
        `    remote.big_text(bytes=${11 * MIB})`,
        "    said = 'no error'",
        "except Exception as e:",
        "    said = f'{type(e).__name__}: {e}'",
        "said",
      ].join("\n"),
      timeout_s: 120,
    });
    assert.equal(r.success, true, r.text);
    assert.match(String(r.result), /^(ToolError|UpstreamUnavailable): .*larger than 10 MiB/);
    const after = await server.execute({
      code: `from mcp_tools import remote\nlen(remote.big_text(bytes=${MIB}))`,
      timeout_s: 120,
    });
    assert.equal(after.result, MIB, after.text);
    await Deno.remove(dir, { recursive: true });
  });
}
