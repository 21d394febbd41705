/**
 * An HTTP upstream's reply has the bound a stdio server's message has (10 MiB): past it the call
 * fails in the script and the host lives on. One 300 MB reply used to end the host.
 */
import assert from "node:assert/strict";
import {
  ANSWERS_AT_ONCE,
  cappedFetch,
  MAX_ERROR_BODY_BYTES,
  RESUMPTIONS,
} from "../src/upstream/capped_fetch.ts";
import { RequestStreams } from "../src/upstream/request_streams.ts";
import { ReplyBudget } from "../src/upstream/reply_budget.ts";
import { TokenBucket } from "../src/_util/token_bucket.ts";
import { delay, ROOT, startHttpFixture, startServer } from "./_helpers.ts";

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
  await t.step("attack: a JSON body or an event costly to parse is not passed on", async () => {
    // Attacker 64: one object of 600,000 keys in 6.6 MB held the host's thread 6.7 s.
    const keys = Array.from({ length: 60_000 }, (_, i) => `"k${i}":0`).join(",");
    const wide = `{"jsonrpc":"2.0","id":7,"result":{"content":[],"structuredContent":{${keys}}}}`;
    const costly = /Cannot read the server's reply: it holds more than 50,000 object keys/;
    const split = [wide.slice(0, 1000), wide.slice(1000)];
    await assert.rejects(read(cappedFetch(replying(split, "application/json"))), costly);
    const rows = JSON.stringify({ rows: Array.from({ length: 20_000 }, (_, i) => ({ i })) });
    assert.equal(
      await read(cappedFetch(replying([rows.slice(0, 9), rows.slice(9)], "application/json"))),
      rows,
      "JSON of one shape passes whole",
    );
    const post = {
      method: "POST",
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: {} }),
    };
    const events = [
      'data: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\ndata: ',
      wide.slice(0, 500),
      wide.slice(500) + "\n\ndata: after\n\n",
    ];
    const stream = await cappedFetch(replying(events, "text/event-stream"))("http://x/", post)
      .then((r) => r.text());
    const [before, answer, after] = stream.split("\n\n");
    assert.equal(before, 'data: {"jsonrpc":"2.0","method":"notifications/message","params":{}}');
    const error = JSON.parse(answer!.replace(/^data: /, ""));
    assert.equal(error.id, 7);
    assert.match(error.error.message, costly);
    assert.equal(after, "data: after");
    const whole = ["data: " + wide + "\n\n"];
    const alone = await cappedFetch(replying(whole, "text/event-stream"))("http://x/", post)
      .then((r) => r.text());
    assert.match(JSON.parse(alone.replace(/^data: /, "")).error.message, costly, "in one chunk");
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

for (const mode of ["http", "sse", "stdio"] as const) {
  Deno.test(`a ${mode} upstream's reply past 10 MiB fails the call, and the host lives on`, async () => {
    await using fixture = mode === "stdio" ? null : await startHttpFixture(mode);
    const entry = fixture ? { url: fixture.url, ...(mode === "sse" ? { type: "sse" } : {}) } : {
      command: "deno",
      args: ["run", "-A", `${ROOT}tests/fixtures/dynamic_server.ts`, "stdio"],
    };
    const dir = await Deno.makeTempDir();
    const config = `${dir}/mcp_servers.json`;
    await Deno.writeTextFile(
      config,
      JSON.stringify({
        servers: { remote: entry },
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
    assert.match(String(r.result), /^ToolError: .*larger than 10 MiB/);
    if (mode === "stdio") {
      // Read, but more than a script is given of one result (attacker 59: not in the Limits).
      const read = await server.execute({
        code: "from mcp_tools import remote\ntry:\n" +
          `    remote.big_text(bytes=${9 * MIB})\n    said = 'no error'\n` +
          "except Exception as e:\n    said = f'{type(e).__name__}: {e}'\nsaid",
        timeout_s: 120,
      });
      assert.match(
        String(read.result),
        /^ToolError: .*the tool's result is 9\.0 MiB as JSON, and a script is given at most 8\.0 MiB of one result/,
        read.text,
      );
    }
    // Within the size, but seconds of the host's thread to parse and walk (attacker 64: 6.7 s
    // for one object of 600,000 keys): not parsed.
    const wide = await server.execute({
      code: "from mcp_tools import remote\ntry:\n    remote.wide(keys=600_000)\n" +
        "    said = 'no error'\nexcept Exception as e:\n    said = f'{type(e).__name__}: {e}'\n" +
        "[said, len(remote.wide(keys=1000))]",
      timeout_s: 120,
    });
    assert.deepEqual(wide.result, [
      "ToolError: remote.wide: Cannot read the server's reply: it holds more than " +
      "50,000 object keys that are costly to read (of names, or in an order, not seen " +
      "before in it, or in an object of more than 127 keys)",
      1000,
    ], wide.text);
    const after = await server.execute({
      code: `from mcp_tools import remote\nlen(remote.big_text(bytes=${MIB}))`,
      timeout_s: 120,
    });
    assert.equal(after.result, MIB, after.text);
    // Only that call failed: the server's connection (its process, over stdio) went on.
    assert.doesNotMatch(server.stderr(), /disconnected/, server.stderr());
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
          "a batch of notifications",
          "text/event-stream",
          200,
          post([{ method: "notifications/x" }]),
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

  await t.step("an error body is bounded at 64 KiB", async () => {
    const failing = (bytes: number): typeof fetch => () =>
      Promise.resolve(new Response("e".repeat(bytes), { status: 500 }));
    const read = (bytes: number) => cappedFetch(failing(bytes))("http://x/", request(1));
    assert.equal((await (await read(MAX_ERROR_BODY_BYTES)).text()).length, MAX_ERROR_BODY_BYTES);
    await assert.rejects((await read(MAX_ERROR_BODY_BYTES + 1)).text(), /larger than/);
  });

  await t.step("what answers a notification or a ping answer is not read at all", async () => {
    let cancelled = 0;
    const endless = (status: number): typeof fetch => () =>
      Promise.resolve(
        new Response(
          new ReadableStream({
            start(controller) {
              controller.enqueue(new TextEncoder().encode("x".repeat(1000)));
            },
            cancel() {
              cancelled++;
            },
          }),
          { status, headers: { "content-type": "text/event-stream" } },
        ),
      );
    // Accepted or failed: a server that failed each answer with a body that never ended held a
    // connection a ping.
    for (const status of [200, 500]) {
      const capped = cappedFetch(endless(status), { maxBytes: MAX });
      for (const message of [{ method: "notifications/x" }, { id: "ping-1", result: {} }]) {
        const reply = await capped("http://x/", post({ jsonrpc: "2.0", ...message }));
        assert.equal(reply.status, status);
        assert.equal(await reply.text(), "", "it would never have ended");
      }
    }
    assert.equal(cancelled, 4);
  });

  await t.step("all a server's replies being read hold at most its budget", async () => {
    const budget = new ReplyBudget(100);
    const replying = (text: string, close = false): typeof fetch => () =>
      Promise.resolve(
        new Response(
          new ReadableStream({
            start(controller) {
              const encoder = new TextEncoder();
              for (const part of text.match(/.{1,10}/gs)!) controller.enqueue(encoder.encode(part));
              if (close) controller.close();
            },
          }),
          { headers: { "content-type": "text/event-stream" } },
        ),
      );
    // Two streams, each leaving 60 bytes of an event unfinished: the second's is dropped, and
    // answered with an error once it ends.
    const first = await cappedFetch(replying(`data: ${"a".repeat(54)}`), { budget })(
      "http://x/",
      request(1),
    );
    const firstReader = first.body!.getReader();
    void firstReader.read();
    await delay(10);
    assert.equal(budget.held, 60);
    const second = await cappedFetch(replying(`data: ${"b".repeat(54)}\n\n`, true), { budget })(
      "http://x/",
      request(2),
    );
    const answer = JSON.parse((await second.text()).replace(/^data: /, ""));
    assert.equal(answer.id, 2);
    assert.match(answer.error.message, /replies still being read hold more than/);
    assert.equal(budget.held, 60);
    // A stream its reader gives up on gives back what it held.
    await firstReader.cancel();
    await delay(10);
    assert.equal(budget.held, 0);
    // A body read whole holds its bytes until it ends.
    const whole = await cappedFetch(() => Promise.resolve(new Response("x".repeat(150))), {
      budget,
    })("http://x/", request(3));
    await assert.rejects(whole.text(), /replies still being read hold more than/);
    assert.equal(budget.held, 0);
  });

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
    // A stream whose headers come after its request was cancelled ends at once.
    await capped(
      "http://x/",
      post({ method: "notifications/cancelled", params: { requestId: 7 } }),
    );
    const late = (await capped("http://x/", request(7))).body!.getReader();
    assert.equal((await late.read()).done, true);
    await delay(10);
    assert.equal(cancelled, 3, "its body is cancelled");
  });

  await t.step("streams are resumed 10 at once, then 2 a second", async () => {
    let now = 0;
    const resumptions = new TokenBucket(RESUMPTIONS.burst, RESUMPTIONS.perSecond, () => now);
    let asked = 0;
    const server: typeof fetch = () => {
      asked++;
      return Promise.resolve(new Response(null, { status: 405 }));
    };
    const capped = cappedFetch(server, { resumptions });
    const resume = () =>
      capped("http://x/", { method: "GET", headers: { "last-event-id": "e1" } })
        .then((r) => r.status);
    const statuses = [];
    for (let i = 0; i < 12; i++) statuses.push(await resume());
    assert.deepEqual(statuses, [...Array(10).fill(405), 429, 429]);
    now += 500;
    assert.equal(await resume(), 405);
    assert.equal(await resume(), 429);
    assert.equal(asked, 11);
    // A GET that resumes nothing is not counted.
    assert.equal((await capped("http://x/", { method: "GET" })).status, 405);
  });

  await t.step(
    "an HTTP+SSE server's POST replies are not read, its stream reconnected 2 a second",
    async () => {
      let cancelled = 0;
      let gets = 0;
      const server: typeof fetch = (_input, init) => {
        if ((init?.method ?? "GET") === "GET") {
          gets++;
          return Promise.resolve(
            new Response("retry: 0\n\n", { headers: { "content-type": "text/event-stream" } }),
          );
        }
        // Endless whole events, answering a call whose answer comes on the GET stream.
        const events = new ReadableStream<Uint8Array>({
          pull(controller) {
            controller.enqueue(new TextEncoder().encode(`data: ${"x".repeat(100)}\n\n`));
          },
          cancel() {
            cancelled++;
          },
        });
        return Promise.resolve(
          new Response(events, { headers: { "content-type": "text/event-stream" } }),
        );
      };
      let now = 0;
      const resumptions = new TokenBucket(RESUMPTIONS.burst, RESUMPTIONS.perSecond, () => now);
      const capped = cappedFetch(server, { maxBytes: MAX, resumptions, answersOnTheStream: true });
      assert.equal(await (await capped("http://x/", request(1))).text(), "");
      assert.equal(cancelled, 1);
      const statuses = [];
      for (let i = 0; i < 12; i++) statuses.push((await capped("http://x/")).status);
      assert.deepEqual(statuses, [...Array(10).fill(200), 429, 429]);
      assert.equal(gets, 10);
      now += 500;
      assert.equal((await capped("http://x/")).status, 200);
    },
  );

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

  await t.step(
    "attack: a too-large notification or request on a request's stream is dropped, and its answer read",
    async () => {
      const result = 'data: {"jsonrpc":"2.0","id":9,"result":{}}\n\n';
      for (
        const head of [
          'data: {"method":"notifications/message","params":{"data":"',
          'event: message\ndata: {"jsonrpc":"2.0","id":"s1","method":"roots/list","params":{"x":"',
        ]
      ) {
        const inner = replying([head, "z".repeat(200), '"}}\n\n', result], "text/event-stream");
        const text = await cappedFetch(inner, { maxBytes: MAX })("http://x/", request(9)).then((
          r,
        ) => r.text());
        assert.equal(text, result, head);
      }
    },
  );
});

Deno.test("cappedFetch() gives up on a status that never comes, and bounds answers at once", async (t) => {
  const post = (message: unknown) => ({ method: "POST", body: JSON.stringify(message) });
  /** A server that never sends a status: each fetch waits until its signal aborts. */
  const sent: RequestInit[] = [];
  const mute: typeof fetch = (_input, init) => {
    sent.push(init!);
    return new Promise((_, reject) => {
      init!.signal!.addEventListener("abort", () => reject(init!.signal!.reason), { once: true });
    });
  };

  await t.step("an answer or notification waits for its status at most acknowledgeMs", async () => {
    const fetchCapped = cappedFetch(mute, { acknowledgeMs: 50 });
    for (
      const message of [{ jsonrpc: "2.0", id: "p", result: {} }, { method: "notifications/x" }]
    ) {
      await assert.rejects(
        fetchCapped("http://x/", post(message)),
        /TimeoutError|timed out|signal/i,
      );
    }
  });

  await t.step("a request given up on before its status came is aborted", async () => {
    const streams = new RequestStreams();
    const pending = cappedFetch(mute, { streams })(
      "http://x/",
      post({ jsonrpc: "2.0", id: 7, method: "tools/call", params: {} }),
    );
    assert.equal(streams.size, 1, "its request is noted while it waits");
    streams.end(7); // its notifications/cancelled, or its answer on another stream
    await assert.rejects(pending, /its request is over/);
    assert.equal(streams.size, 0);
  });

  await t.step("answers to the server's requests: a few at once, the rest not sent", async () => {
    sent.length = 0;
    const fetchCapped = cappedFetch(mute, { acknowledgeMs: 500 });
    const replies = Array.from(
      { length: 50 },
      (_, i) => fetchCapped("http://x/", post({ jsonrpc: "2.0", id: `ping-${i}`, result: {} })),
    );
    const settled = await Promise.race([
      Promise.all(replies.slice(ANSWERS_AT_ONCE)),
      delay(200).then(() => "waiting"),
    ]);
    assert.notEqual(settled, "waiting", "answers past the bound waited");
    assert.equal(sent.length, ANSWERS_AT_ONCE, "answers sent to the server");
    for (const reply of settled as Response[]) assert.equal(reply.status, 202);
    // The ones sent are given up on when their status does not come.
    const first = await Promise.allSettled(replies.slice(0, ANSWERS_AT_ONCE));
    assert.deepEqual(first.map((r) => r.status), Array(ANSWERS_AT_ONCE).fill("rejected"));
    // ...which frees their places.
    await fetchCapped("http://x/", post({ jsonrpc: "2.0", id: "late", result: {} })).catch(
      () => {},
    );
    assert.equal(sent.length, ANSWERS_AT_ONCE + 1);
  });
});
