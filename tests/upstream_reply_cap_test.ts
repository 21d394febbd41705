/**
 * An HTTP upstream's reply has the bound a stdio server's message has (10 MiB): past it the call
 * fails in the script and the host lives on. One 300 MB reply used to end the host.
 */
import assert from "node:assert/strict";
import { cappedFetch } from "../src/upstream/capped_fetch.ts";
import { RequestStreams } from "../src/upstream/request_streams.ts";
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
    assert.equal(
      await read(cappedFetch(replying(["ab", "cd"], "application/json"), { maxBytes: 4 })),
      "abcd",
    );
    await assert.rejects(
      read(cappedFetch(replying(["ab", "cde"], "application/json"), { maxBytes: 4 })),
      /the message is larger than/,
    );
  });
  await t.step("many events, each within the bound, pass whatever they add up to", async () => {
    const events = Array.from({ length: 50 }, (_, i) => `data: ${"x".repeat(40)}${i}\n\n`);
    const crlf = Array.from({ length: 50 }, () => `event: m\r\ndata: ${"y".repeat(40)}\r\n\r\n`);
    const split = ["data: ", "x".repeat(40), "\n", "\n", "data: z\n\n"];
    for (const body of [events, crlf, split]) {
      const text = await read(cappedFetch(replying(body, "text/event-stream"), { maxBytes: 64 }));
      assert.equal(text, body.join(""));
    }
  });
  await t.step("lines may end in CR, LF or CRLF, and chunks may split anything", async () => {
    const stream = "event: endpoint\rdata: /messages\r\r: ping\r\n\r\ndata: a\n\ndata: b\r\n\n";
    // The parser the SDK uses must see the same bytes, whatever the chunks.
    for (let cut = 0; cut <= stream.length; cut++) {
      const body = [stream.slice(0, cut), stream.slice(cut)];
      assert.equal(
        await read(cappedFetch(replying(body, "text/event-stream"), { maxBytes: 64 })),
        stream,
      );
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
    const reader = (await cappedFetch(inner, { maxBytes: 64 })("http://x/")).body!.getReader();
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
        cappedFetch(replying([...big("7"), after], "text/event-stream; charset=utf-8"), {
          maxBytes: 64,
        }),
      );
      const [answer, next] = text.split("\n\n");
      const error = JSON.parse(answer!.replace(/^data: /, ""));
      assert.deepEqual([error.id, error.error.code], [7, -32603]);
      assert.match(error.error.message, /one event of its stream is larger than/);
      assert.equal(`${next}\n\n`, after);
      const named = await read(
        cappedFetch(replying(big('"call-1"'), "text/event-stream"), { maxBytes: 64 }),
      );
      assert.equal(JSON.parse(named.replace(/^data: /, "")).id, "call-1");
      // Lines of one event, without a blank line between them, add up; a message that answers
      // nothing (a notification) is dropped.
      const lines = [
        'data: {"jsonrpc":"2.0","method":"notifications/message",\n',
        ...Array.from({ length: 20 }, () => `data: ${"x".repeat(10)}\n`),
        "\n",
        after,
      ];
      assert.equal(
        await read(cappedFetch(replying(lines, "text/event-stream"), { maxBytes: 64 })),
        after,
      );
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

Deno.test("cappedFetch() bounds whole what the SDK reads whole, and ends a request's stream once it is over", async (t) => {
  const MAX = 64;
  const big = Array.from({ length: 20 }, () => `${"x".repeat(10)}\n\n`);
  const post = (message: unknown) => ({ method: "POST", body: JSON.stringify(message) });
  const request = (id: number) => post({ jsonrpc: "2.0", id, method: "tools/call", params: {} });

  await t.step(
    "a reply whose type only names an event stream, or that failed, is bounded whole",
    async () => {
      const cases: [string, string, number, RequestInit | undefined][] = [
        ["a parameter naming it", 'application/json; x="text/event-stream"', 200, request(1)],
        ["an error status", "text/event-stream", 500, request(1)],
        [
          "a reply to a notification",
          "text/event-stream",
          200,
          post({ method: "notifications/x" }),
        ],
        ["a header the SDK may refuse", "text/event-stream; a=b, c", 200, request(1)],
      ];
      for (const [what, type, status, init] of cases) {
        const inner: typeof fetch = () =>
          Promise.resolve(
            new Response(big.join(""), { status, headers: { "content-type": type } }),
          );
        await assert.rejects(
          cappedFetch(inner, { maxBytes: MAX })("http://x/", init).then((r) => r.text()),
          /the message is larger than/,
          what,
        );
      }
    },
  );

  await t.step("a request's stream ends once it is answered, or cancelled", async () => {
    const streams = new RequestStreams();
    let cancelled = 0;
    const leftOpen: typeof fetch = (_input, init) => {
      if (!JSON.parse(String(init?.body)).id) {
        return Promise.resolve(new Response(null, { status: 202 }));
      }
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('data: {"id":1}\n\ndata: unfinished'));
        },
        cancel() {
          cancelled++;
        },
      });
      return Promise.resolve(
        new Response(body, { headers: { "content-type": "text/event-stream" } }),
      );
    };
    const capped = cappedFetch(leftOpen, { maxBytes: MAX, streams });
    const answered = (await capped("http://x/", request(5))).body!.getReader();
    const given = (await capped("http://x/", request(6))).body!.getReader();
    assert.equal(new TextDecoder().decode((await answered.read()).value), 'data: {"id":1}\n\n');
    assert.equal(streams.size, 2);
    streams.end(5); // as the transport does when request 5's answer arrives
    assert.equal((await answered.read()).done, true);
    await capped(
      "http://x/",
      post({ method: "notifications/cancelled", params: { requestId: 6 } }),
    );
    await given.read();
    assert.equal((await given.read()).done, true);
    assert.equal(cancelled, 2, "the server's bodies are cancelled");
    assert.equal(streams.size, 0);
  });

  await t.step(
    "a too-large event on a request's stream answers it, whatever it names",
    async () => {
      const head = 'data: {"result":{"structuredContent":{"method":"GET","body":"';
      const inner = replying([head, ..."y".repeat(100).split(""), '"}}}\n\n'], "text/event-stream");
      const text = await cappedFetch(inner, { maxBytes: MAX })("http://x/", request(9)).then((r) =>
        r.text()
      );
      const answer = JSON.parse(text.replace(/^data: /, ""));
      assert.deepEqual([answer.id, answer.error.code], [9, -32603]);
    },
  );
});
