/**
 * The JSON-RPC channel between the host and a sandbox, in process: two channels wired to each
 * other over in-memory streams, or one channel facing a raw peer that writes whatever lines it
 * likes (the sandbox's script can). Also the validators through which the host reads every
 * sandbox message, and the worker's command line.
 */
import assert from "node:assert/strict";
import {
  type ChannelViolation,
  JsonRpcChannel,
  type MessageSet,
  QUOTED_ID_CHARS,
  RemoteError,
  RPC_INTERNAL_ERROR,
  RPC_INVALID_PARAMS,
} from "../src/rpc/channel.ts";
import {
  parseBootParams,
  parseCallToolParams,
  parseExecuteReply,
  parseOutput,
  parseProgress,
  parseWorkerArgs,
  workerArgs,
  type WorkerLaunch,
} from "../src/rpc/sandbox_protocol.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** One direction of a connection: what one side writes, the other reads. */
function pipe() {
  const stream = new TransformStream<Uint8Array, Uint8Array>();
  const writer = stream.writable.getWriter();
  return {
    readable: stream.readable,
    write: (line: string) => writer.write(encoder.encode(line)),
    end: () => writer.close(),
  };
}

interface Recorded {
  notifications: [string, unknown][];
  violations: ChannelViolation[];
}

function recordingChannel(
  readable: ReadableStream<Uint8Array>,
  write: (line: string) => Promise<void>,
  onRequest: (method: string, params: unknown) => Promise<unknown> = () =>
    Promise.reject(new RemoteError({ code: -32601, message: "no requests here" })),
  maxLineBytes = 1024,
) {
  const seen: Recorded = { notifications: [], violations: [] };
  const channel = new JsonRpcChannel<MessageSet>({
    readable,
    write,
    maxLineBytes,
    handlers: {
      onRequest: (method, params) => onRequest(method, params),
      onNotification: (method, params) => seen.notifications.push([method, params]),
      onViolation: (violation) => seen.violations.push(violation),
    },
  });
  return { channel, seen };
}

/** Two channels talking to each other; `close` ends both directions and waits for both. */
function connectedPair(onRequest: (method: string, params: unknown) => Promise<unknown>) {
  const toB = pipe();
  const toA = pipe();
  const a = recordingChannel(toA.readable, toB.write);
  const b = recordingChannel(toB.readable, toA.write, onRequest);
  return {
    a,
    b,
    close: async () => {
      await Promise.all([toA.end(), toB.end()]);
      await Promise.all([a.channel.done, b.channel.done]);
    },
  };
}

/**
 * One channel facing a raw peer: `send` writes lines to the channel, `next` reads the next line
 * the channel wrote (each write is one whole line).
 */
function rawPeer(maxLineBytes = 1024) {
  const toChannel = pipe();
  const fromChannel = pipe();
  const { channel, seen } = recordingChannel(
    toChannel.readable,
    fromChannel.write,
    undefined,
    maxLineBytes,
  );
  const reader = fromChannel.readable.getReader();
  return {
    channel,
    seen,
    send: (line: string) => toChannel.write(line),
    next: async (): Promise<Record<string, unknown>> => {
      const { value } = await reader.read();
      return JSON.parse(decoder.decode(value));
    },
    /** Ends the peer's stream and waits until the channel has read it all. */
    end: async () => {
      await toChannel.end();
      await channel.done;
      reader.releaseLock();
      await fromChannel.end();
    },
  };
}

Deno.test("request() resolves with the peer's result, matched by id even out of order", async () => {
  const slowFirst = Promise.withResolvers<void>();
  const pair = connectedPair(async (method, params) => {
    const { n } = params as { n: number };
    if (n === 1) await slowFirst.promise; // the first request is answered last
    return { method, doubled: n * 2 };
  });
  const first = pair.a.channel.request("double", { n: 1 });
  const second = await pair.a.channel.request("double", { n: 2 });
  assert.deepEqual(second, { method: "double", doubled: 4 });
  slowFirst.resolve();
  assert.deepEqual(await first, { method: "double", doubled: 2 });
  assert.deepEqual(pair.a.seen.violations, []);
  assert.deepEqual(pair.b.seen.violations, []);
  await pair.close();
});

Deno.test("a RemoteError thrown by the peer's handler rejects the request with its code and message", async () => {
  const pair = connectedPair((method) => {
    if (method === "remote") {
      return Promise.reject(
        new RemoteError({ code: RPC_INVALID_PARAMS, message: "bad n", data: { n: 0 } }),
      );
    }
    return Promise.reject(new TypeError("handler broke"));
  });
  await assert.rejects(pair.a.channel.request("remote", {}), (error: unknown) => {
    assert.ok(error instanceof RemoteError);
    assert.deepEqual(error.error, { code: RPC_INVALID_PARAMS, message: "bad n", data: { n: 0 } });
    return true;
  });
  await assert.rejects(pair.a.channel.request("other", {}), (error: unknown) => {
    assert.ok(error instanceof RemoteError);
    assert.deepEqual(error.error, { code: RPC_INTERNAL_ERROR, message: "handler broke" });
    return true;
  });
  await pair.close();
});

Deno.test("notify() reaches the peer's onNotification with its params", async () => {
  const pair = connectedPair(() => Promise.resolve(null));
  await pair.a.channel.notify("output", { stream: "stdout", text: "hi\n" });
  await pair.close();
  assert.deepEqual(pair.b.seen.notifications, [["output", { stream: "stdout", text: "hi\n" }]]);
});

Deno.test("a line that breaks JSON-RPC is reported as a violation of its kind and ignored", async (t) => {
  const table: [string, string, ChannelViolation["kind"]][] = [
    ["a non-JSON line", "{not json", "not_json"],
    ["a JSON array", "[1, 2]", "not_an_object"],
    ["a JSON string", '"hello"', "not_an_object"],
    ["null", "null", "not_an_object"],
    ["a message without jsonrpc", '{"method":"ready"}', "not_jsonrpc_2"],
    ['jsonrpc "1.0"', '{"jsonrpc":"1.0","method":"ready"}', "not_jsonrpc_2"],
    ["a request with a null id", '{"jsonrpc":"2.0","id":null,"method":"x"}', "invalid_request_id"],
    ["a reply without an id", '{"jsonrpc":"2.0","result":1}', "reply_without_id"],
    [
      "a reply to an id never sent",
      '{"jsonrpc":"2.0","id":0,"result":"forged"}',
      "reply_to_nothing",
    ],
  ];
  for (const [what, line, kind] of table) {
    await t.step(`${what} -> ${kind}`, async () => {
      const peer = rawPeer();
      await peer.send(line + "\n");
      // The channel goes on reading after a bad line.
      await peer.send('{"jsonrpc":"2.0","method":"ready"}\n');
      await peer.end();
      assert.deepEqual(peer.seen.violations.map((v) => v.kind), [kind]);
      assert.ok(peer.seen.violations[0]!.detail.length > 0, "a readable detail for the log");
      assert.deepEqual(peer.seen.notifications, [["ready", undefined]]);
    });
  }
  await t.step("a blank line is no violation", async () => {
    const peer = rawPeer();
    await peer.send("\n   \n");
    await peer.end();
    assert.deepEqual(peer.seen.violations, []);
  });
  await t.step(
    "attack: blank lines past the first 100, or past 1 KiB, are violations",
    async () => {
      const many = rawPeer();
      await many.send("\n".repeat(103));
      await many.end();
      assert.deepEqual(many.seen.violations.map((v) => v.kind), Array(3).fill("blank_lines"));
      const long = rawPeer(4096);
      await long.send(" ".repeat(2000) + "\n");
      await long.end();
      assert.deepEqual(long.seen.violations.map((v) => v.kind), ["blank_lines"]);
    },
  );
  await t.step("attack: a message with fields JSON-RPC does not have is a violation", async () => {
    const peer = rawPeer(1 << 20);
    const junk = JSON.stringify({ jsonrpc: "2.0", method: "ready", j: "a".repeat(100_000) });
    await peer.send(junk + "\n" + JSON.stringify({ jsonrpc: "2.0", method: "ready" }) + "\n");
    await peer.end();
    assert.deepEqual(peer.seen.violations.map((v) => v.kind), ["unknown_fields"]);
    assert.deepEqual(peer.seen.notifications.map(([method]) => method), ["ready"]);
  });
  await t.step("attack: a message padded with blank space is a violation, not read", async () => {
    const peer = rawPeer(1 << 20);
    const padded = `{"jsonrpc":"2.0","method":"output","params":{"text":"a"${
      " ".repeat(100_000)
    }}}`;
    // Escapes lengthen a message too: control characters, as JSON.stringify writes them.
    const escaped = JSON.stringify({
      jsonrpc: "2.0",
      method: "ready",
      params: "\u0001".repeat(5000),
    });
    await peer.send(padded + "\n" + escaped + "\n");
    await peer.end();
    assert.deepEqual(peer.seen.violations.map((v) => v.kind), ["padded_line"]);
    assert.deepEqual(peer.seen.notifications.map(([method]) => method), ["ready"]);
  });
});

Deno.test("a line longer than maxLineBytes is dropped as overlong_line, up to its newline", async () => {
  const peer = rawPeer(64);
  // Sent in two chunks, so the cap is counted across reads.
  await peer.send('{"jsonrpc":"2.0","method":"output","params":{"text":"' + "x".repeat(40));
  await peer.send("y".repeat(40) + '"}}\n{"jsonrpc":"2.0","method":"ready"}\n');
  await peer.end();
  assert.equal(peer.seen.violations.length, 1);
  assert.equal(peer.seen.violations[0]!.kind, "overlong_line");
  assert.match(peer.seen.violations[0]!.detail, /longer than 64 bytes/);
  assert.deepEqual(peer.seen.notifications, [["ready", undefined]], "nothing of the long line");
});

Deno.test("a violation quotes a bounded start of the peer's id, however long the id", async (t) => {
  // Attacker 37: a sandbox's replies to ids never sent, each id 8 MB, were kept quoted whole
  // (99 of them took the host to 1.35 GB in one execution).
  const long = "A".repeat(200_000);
  const table: [string, unknown, RegExp][] = [
    [
      "a long string id",
      long,
      new RegExp(`^a reply to id "A{${QUOTED_ID_CHARS}}"\\.\\.\\. \\(200000 characters\\)`),
    ],
    ["a short string id", "abc", /^a reply to id "abc", which is not pending$/],
    ["a number id", 7, /^a reply to id 7, which is not pending$/],
  ];
  for (const [what, id, shown] of table) {
    await t.step(what, async () => {
      const peer = rawPeer(1024 * 1024);
      await peer.send(JSON.stringify({ jsonrpc: "2.0", id, result: 1 }) + "\n");
      await peer.end();
      assert.deepEqual(peer.seen.violations.map((v) => v.kind), ["reply_to_nothing"]);
      const detail = peer.seen.violations[0]!.detail;
      assert.match(detail, shown);
      assert.ok(detail.length < 200, `a detail of ${detail.length} characters`);
    });
  }
});

Deno.test("a reply to a pending id with both result and error rejects it as malformed_reply", async () => {
  const peer = rawPeer();
  const asked = peer.channel.request("execute", {});
  const sent = await peer.next();
  assert.equal(typeof sent.id, "string", "request ids are unguessable strings");
  await peer.send(
    JSON.stringify({
      jsonrpc: "2.0",
      id: sent.id,
      result: 1,
      error: { code: 1, message: "x" },
    }) + "\n",
  );
  await assert.rejects(asked, /neither a result nor a valid error/);
  assert.deepEqual(peer.seen.violations.map((v) => v.kind), ["malformed_reply"]);
  await peer.end();
});

Deno.test("a pending id is answered once: a second reply to it is reply_to_nothing", async () => {
  const peer = rawPeer();
  const asked = peer.channel.request("execute", {});
  const { id } = await peer.next();
  await peer.send(JSON.stringify({ jsonrpc: "2.0", id, result: "first" }) + "\n");
  assert.equal(await asked, "first");
  await peer.send(JSON.stringify({ jsonrpc: "2.0", id, result: "second" }) + "\n");
  await peer.end();
  assert.deepEqual(peer.seen.violations.map((v) => v.kind), ["reply_to_nothing"]);
});

Deno.test("pending requests reject when the peer's stream ends, and later requests fail at once", async () => {
  const peer = rawPeer();
  const asked = peer.channel.request("execute", {});
  await peer.next(); // the request went out; the peer never answers
  await peer.end();
  await assert.rejects(asked, /the peer closed the channel/);
  await assert.rejects(
    peer.channel.request("execute", {}),
    /Cannot send "execute": the channel is closed/,
  );
});

Deno.test("a channel that closes while a request is still being written leaves no rejection unheard", async () => {
  // The write of a large request is still pending when the peer goes away (a sandbox killed
  // while its modules are sent): the caller hears the send fail, nothing else is left over.
  const incoming = pipe();
  const written = Promise.withResolvers<void>();
  const { channel } = recordingChannel(incoming.readable, () => written.promise);
  const asked = channel.request("prepare", {});
  await incoming.end(); // the peer's stream ends: the channel closes
  await channel.done;
  written.reject(new Error("Broken pipe"));
  await assert.rejects(asked, /Cannot send "prepare": the peer is gone/);
  // An unheard rejection would fail this test as an uncaught error.
  await new Promise((resolve) => setTimeout(resolve, 10));
});

// --- The validators through which the host reads a sandbox's messages -------------------------

Deno.test("parseOutput() accepts only a stdout/stderr stream with text", async (t) => {
  const table: [string, unknown, unknown][] = [
    ["stdout text", { stream: "stdout", text: "hi" }, { stream: "stdout", text: "hi" }],
    ["stderr text", { stream: "stderr", text: "e" }, { stream: "stderr", text: "e" }],
    ["a field the runtime never writes (padding)", { stream: "stderr", text: "e", x: 1 }, null],
    ["another stream", { stream: "stdin", text: "hi" }, null],
    ["text not a string", { stream: "stdout", text: 5 }, null],
    ["no text", { stream: "stdout" }, null],
    ["an array", ["stdout", "hi"], null],
    ["null", null, null],
  ];
  for (const [what, params, expected] of table) {
    await t.step(what, () => assert.deepEqual(parseOutput(params), expected));
  }
});

Deno.test("parseProgress() keeps finite numbers and cuts the message to 500 characters", async (t) => {
  const table: [string, unknown, unknown][] = [
    ["progress only", { progress: 1 }, { progress: 1 }],
    ["with total and message", { progress: 1, total: 4, message: "one" }, {
      progress: 1,
      total: 4,
      message: "one",
    }],
    ["a long message is cut", { progress: 0, message: "m".repeat(900) }, {
      progress: 0,
      message: "m".repeat(500),
    }],
    ["an infinite total is dropped", { progress: 2, total: Infinity }, { progress: 2 }],
    ["a field the runtime never writes (padding)", { progress: 2, x: "a" }, null],
    ["a non-string message is dropped", { progress: 2, message: 7 }, { progress: 2 }],
    ["NaN progress", { progress: NaN }, null],
    ["string progress", { progress: "1" }, null],
    ["no progress", { total: 3 }, null],
    ["not an object", 5, null],
  ];
  for (const [what, params, expected] of table) {
    await t.step(what, () => assert.deepEqual(parseProgress(params), expected));
  }
});

Deno.test("parseCallToolParams() needs a server, a tool and an arguments object", async (t) => {
  const table: [string, unknown, unknown][] = [
    ["a call", { server: "fs", tool: "read", arguments: { path: "a" } }, {
      server: "fs",
      tool: "read",
      arguments: { path: "a" },
    }],
    ["a field the runtime never writes (padding)", {
      server: "fs",
      tool: "read",
      arguments: {},
      id: 9,
    }, null],
    ["arguments an array", { server: "fs", tool: "read", arguments: [] }, null],
    ["arguments missing", { server: "fs", tool: "read" }, null],
    ["server not a string", { server: 1, tool: "read", arguments: {} }, null],
    ["tool missing", { server: "fs", arguments: {} }, null],
    ["null", null, null],
  ];
  for (const [what, params, expected] of table) {
    await t.step(what, () => assert.deepEqual(parseCallToolParams(params), expected));
  }
});

Deno.test("parseExecuteReply() keeps the shape the host trusts and refuses any other", async (t) => {
  const error = { error_type: "ValueError", message: "bad", traceback: "tb", lineno: 3 };
  const table: [string, unknown, unknown][] = [
    ["success", { ok: true, result: [1] }, { ok: true, result: [1], outputs: [] }],
    ["success without result is null", { ok: true }, { ok: true, result: null, outputs: [] }],
    ["a script error", { ok: false, error }, { ok: false, error, outputs: [] }],
    ["a fatal error stays fatal", { ok: false, error, fatal: true }, {
      ok: false,
      error,
      outputs: [],
      fatal: true,
    }],
    ["fatal other than true is dropped", { ok: false, error, fatal: "yes" }, {
      ok: false,
      error,
      outputs: [],
    }],
    [
      "an error type that is not a Python name becomes Error",
      { ok: false, error: { ...error, error_type: "TIMEOUT\n<b>x</b>" } },
      { ok: false, error: { ...error, error_type: "Error" }, outputs: [] },
    ],
    [
      "missing error fields get safe defaults",
      { ok: false, error: {} },
      {
        ok: false,
        error: { error_type: "Error", message: "", traceback: "", lineno: null },
        outputs: [],
      },
    ],
    [
      "outputs with bad names are dropped",
      { ok: true, result: 1, outputs: [{ name: "../x", size: 1 }, { name: "a.txt", size: 2 }] },
      { ok: true, result: 1, outputs: [{ name: "a.txt", size: 2, omitted: true }] },
    ],
    ["ok is not a boolean", { ok: "true", result: 1 }, null],
    ["a failure without an error object", { ok: false, error: "bad" }, null],
    ["not an object", [true], null],
  ];
  for (const [what, value, expected] of table) {
    await t.step(what, () => assert.deepEqual(parseExecuteReply(value, 1024, undefined), expected));
  }
});

Deno.test("parseBootParams() accepts only a complete boot message", async (t) => {
  const good = {
    pyodide_module_url: "file:///p/pyodide.mjs",
    snapshot_path: "/s/snap.bin",
    mounts: [{ host: "/h", mount: "/workspace" }],
    interruptible: false,
    drop_permissions: true,
    compilation_hints: false,
  };
  await t.step("a complete message, extra fields dropped", () => {
    assert.deepEqual(
      parseBootParams({ ...good, extra: 1, mounts: [{ host: "/h", mount: "/workspace", x: 1 }] }),
      good,
    );
  });
  const broken: [string, unknown][] = [
    ["no snapshot path", { ...good, snapshot_path: undefined }],
    ["module url not a string", { ...good, pyodide_module_url: 1 }],
    ["mounts not an array", { ...good, mounts: {} }],
    ["a mount without a host", { ...good, mounts: [{ mount: "/w" }] }],
    ["a null mount", { ...good, mounts: [null] }],
    ["interruptible not a boolean", { ...good, interruptible: "no" }],
    ["drop_permissions missing", { ...good, drop_permissions: undefined }],
    ["compilation_hints not a boolean", { ...good, compilation_hints: "yes" }],
    ["null", null],
  ];
  for (const [what, value] of broken) {
    await t.step(`${what} -> null`, () => assert.equal(parseBootParams(value), null));
  }
});

Deno.test("parseWorkerArgs() reads back exactly what workerArgs() writes", async (t) => {
  const launches: WorkerLaunch[] = [
    { mode: "serve" },
    { mode: "build-snapshot", pyodideModuleUrl: "file:///p/pyodide.mjs", outputPath: "/s/x.bin" },
    {
      mode: "build-snapshot",
      pyodideModuleUrl: "file:///p/pyodide.mjs",
      outputPath: "/s/x.bin",
      preloadSpecPath: "/s/spec.json",
    },
  ];
  for (const launch of launches) {
    await t.step(`${launch.mode} round trips`, () => {
      assert.deepEqual(parseWorkerArgs(workerArgs(launch)), launch);
    });
  }
  const refused: string[][] = [
    [],
    ["serve", "extra"],
    ["build-snapshot"],
    ["build-snapshot", "file:///p/pyodide.mjs"],
    ["build-snapshot", "", "/s/x.bin"],
    ["build-snapshot", "file:///p/pyodide.mjs", "/s/x.bin", "/s/spec.json", "extra"],
    ["boot"],
  ];
  for (const args of refused) {
    await t.step(
      `${JSON.stringify(args)} -> null`,
      () => assert.equal(parseWorkerArgs(args), null),
    );
  }
});
