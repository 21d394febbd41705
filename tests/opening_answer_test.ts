/**
 * The opening answer given before the SDK loads (src/host/opening_answer.ts) says exactly what
 * the SDK says to the same message, and says nothing where the SDK would refuse; a real server
 * answers the opening once, and then serves the connection as usual.
 */
import assert from "node:assert/strict";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Client as ClientV2 } from "@modelcontextprotocol/client";
import { SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { openingAnswer } from "../src/host/opening_answer.ts";
import { LEGACY_VERSIONS } from "../src/host/server_identity.ts";
import { createHost } from "../src/host/server.ts";
import { testHostDeps } from "./_host.ts";
import { childPids, delay, spawnServe } from "./_helpers.ts";
import { OPENING_WAIT_MS } from "../src/host/stdio_opening.ts";

const MODERN_META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
};

const initialize = (params: Record<string, unknown>, id: string | number = 1) => ({
  jsonrpc: "2.0",
  id,
  method: "initialize",
  params: {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "client", version: "1.0" },
    ...params,
  },
});

const discover = (meta: Record<string, unknown>, id: string | number = 1) => ({
  jsonrpc: "2.0",
  id,
  method: "server/discover",
  params: { _meta: { ...MODERN_META, ...meta } },
});

/** Openings clients send: answered early, as the SDK answers them. */
const PLAIN = {
  "the newest 2025 revision": initialize({}),
  "an older revision": initialize({ protocolVersion: "2024-11-05" }),
  "a revision the server does not know": initialize({ protocolVersion: "2031-01-01" }),
  "a string id": initialize({}, "opening-1"),
  "the capabilities clients declare": initialize({
    capabilities: {
      roots: { listChanged: true },
      sampling: {},
      elicitation: { form: {}, url: {} },
      experimental: { "x.example/feature": {} },
    },
  }),
  "an empty elicitation capability": initialize({ capabilities: { elicitation: {} } }),
  "client info with a title": initialize({
    clientInfo: { name: "c", version: "2", title: "C", description: "a client" },
  }),
  "server/discover": discover({}),
  "server/discover with client info and capabilities": discover({
    "io.modelcontextprotocol/clientInfo": { name: "c", version: "2" },
    "io.modelcontextprotocol/clientCapabilities": { roots: { listChanged: false } },
  }, "d"),
};

/** Openings the early answer leaves to the SDK: it refuses them, or they are out of the plain. */
const UNUSUAL = {
  "a capability the schema refuses": initialize({
    capabilities: { roots: { listChanged: "yes" } },
  }),
  "a sampling capability that is not an object": initialize({ capabilities: { sampling: true } }),
  "no client info": initialize({ clientInfo: undefined }),
  "client info without a version": initialize({ clientInfo: { name: "c" } }),
  "a numeric protocol version": initialize({ protocolVersion: 20251125 }),
  "a fractional id": initialize({}, 1.5),
  "a modern claim on initialize": initialize({ _meta: MODERN_META }),
  "icons in client info": initialize({
    clientInfo: { name: "c", version: "1", icons: [{ src: "x" }] },
  }),
  "server/discover of another revision": discover({
    "io.modelcontextprotocol/protocolVersion": "2025-11-25",
  }),
  "server/discover without capabilities": discover({
    "io.modelcontextprotocol/clientCapabilities": undefined,
  }),
  "another first request": { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} },
  "a batch": [initialize({})],
  "an extra member": { ...initialize({}), extra: true },
};

/** What the SDK answers to `message` as a connection's first, from a host as serve builds it. */
async function sdkAnswer(message: unknown): Promise<Record<string, unknown>> {
  const { deps, cleanup } = await testHostDeps(
    { execute: () => Promise.reject(new Error("no scripts here")) },
    Promise.resolve(),
  );
  const [clientEnd, serverEnd] = InMemoryTransport.createLinkedPair();
  const answered = Promise.withResolvers<Record<string, unknown>>();
  clientEnd.onmessage = (reply: object) => {
    if ("id" in reply) answered.resolve(reply as unknown as Record<string, unknown>);
  };
  const hosts: { close(): Promise<void> }[] = [];
  const connection = serveStdio(({ era }) => {
    const host = createHost(deps, { era, owner: "test" });
    hosts.push(host);
    return host.server;
  }, { transport: serverEnd as never });
  await clientEnd.start();
  await clientEnd.send(message as never);
  try {
    return await answered.promise;
  } finally {
    await connection.close();
    await Promise.all(hosts.map((h) => h.close()));
    await cleanup();
  }
}

Deno.test("the opening answer is the SDK's answer, for the openings clients send", async (t) => {
  for (const [name, message] of Object.entries(PLAIN)) {
    await t.step(name, async () => {
      const early = openingAnswer(JSON.stringify(message));
      assert.ok(early, "no early answer");
      assert.equal(early.id, message.id);
      assert.deepEqual(JSON.parse(early.line), await sdkAnswer(message));
    });
  }
});

Deno.test("no opening answer where the SDK refuses or the message is out of the plain", async (t) => {
  for (const [name, message] of Object.entries(UNUSUAL)) {
    await t.step(name, () => {
      assert.equal(openingAnswer(JSON.stringify(message)), null);
    });
  }
  for (const text of ["", "not json", "null", "{}", '"initialize"']) {
    assert.equal(openingAnswer(text), null, text);
  }
  // The SDK does refuse the first two: an early success there would be a lie.
  for (const name of ["a capability the schema refuses", "no client info"] as const) {
    const answer = await sdkAnswer(UNUSUAL[name]);
    assert.ok("error" in answer, `${name}: the SDK accepted it`);
  }
});

Deno.test("the revisions initialize accepts are the SDK's", () => {
  assert.deepEqual([...LEGACY_VERSIONS], SUPPORTED_PROTOCOL_VERSIONS);
});

/**
 * Kills `child` if it still runs after `ms` (30 s): a server that hangs fails its test, not the
 * run. Its descendants first (the server the launcher started holds the test's pipes), so none
 * is left running and no pipe stays open.
 */
function killAfter(child: Deno.ChildProcess, signal: Deno.Signal, ms = 30_000) {
  let fired = false;
  const timer = setTimeout(() => {
    fired = true;
    const tree = (pid: number): number[] => childPids(pid).flatMap((c) => [...tree(c), c]);
    for (const pid of tree(child.pid)) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch {
        // gone already
      }
    }
    child.kill(signal);
  }, ms);
  return { clear: () => clearTimeout(timer), fired: () => fired };
}

/**
 * A real server on raw stdio: sends `lines`, collects what it writes until `until` holds (or
 * 30 s pass).
 */
async function rawSession(
  lines: unknown[],
  until: (messages: Record<string, unknown>[]) => boolean,
  writeAfterMs = 0,
): Promise<Record<string, unknown>[]> {
  const child = spawnServe();
  const deadline = killAfter(child, "SIGTERM"); // before writing: a server may stop reading
  const writer = child.stdin.getWriter();
  await delay(writeAfterMs);
  void writer.write(new TextEncoder().encode(lines.map((l) => JSON.stringify(l) + "\n").join("")))
    .catch(() => {});
  const messages: Record<string, unknown>[] = [];
  let buffered = "";
  const decoder = new TextDecoder();
  try {
    for await (const chunk of child.stdout) {
      buffered += decoder.decode(chunk, { stream: true });
      const complete = buffered.split("\n");
      buffered = complete.pop()!;
      messages.push(...complete.filter((l) => l.trim()).map((l) => JSON.parse(l)));
      if (until(messages)) break;
    }
  } finally {
    deadline.clear();
    await writer.close().catch(() => {});
    await child.status;
  }
  return messages;
}

const answersTo = (messages: Record<string, unknown>[], id: unknown) =>
  messages.filter((m) => m.id === id && !("method" in m));

Deno.test("a server answers a 2025 client's initialize once, then serves the connection", async () => {
  const messages = await rawSession([
    initialize({ protocolVersion: "2025-06-18" }, 7),
    { jsonrpc: "2.0", method: "notifications/initialized" },
    { jsonrpc: "2.0", id: 8, method: "tools/list" },
  ], (m) => answersTo(m, 8).length > 0);
  const opening = answersTo(messages, 7);
  assert.equal(opening.length, 1, `initialize answered ${opening.length} times`);
  assert.equal((opening[0]!.result as { protocolVersion: string }).protocolVersion, "2025-06-18");
  const tools = answersTo(messages, 8)[0]!.result as { tools: { name: string }[] };
  assert.ok(tools.tools.some((tool) => tool.name === "execute_code"), JSON.stringify(tools));
  // No model API key here, but a 2025 client may offer sampling.
  assert.ok(tools.tools.some((tool) => tool.name === "generate_and_execute"));
  assert.equal(messages.indexOf(opening[0]!), 0, "the opening answer was not the first line");
});

Deno.test("a server answers a 2026-07-28 client's server/discover once, then serves it", async () => {
  const messages = await rawSession([
    discover({}, "open"),
    { jsonrpc: "2.0", id: "list", method: "tools/list", params: { _meta: MODERN_META } },
  ], (m) => answersTo(m, "list").length > 0);
  const opening = answersTo(messages, "open");
  assert.equal(opening.length, 1, `server/discover answered ${opening.length} times`);
  assert.deepEqual((opening[0]!.result as { supportedVersions: string[] }).supportedVersions, [
    "2026-07-28",
  ]);
  const tools = answersTo(messages, "list")[0]!.result as { tools: { name: string }[] };
  assert.ok(tools.tools.some((tool) => tool.name === "execute_code"), JSON.stringify(tools));
  // No model API key, and 2026-07-28 has no sampling: a tool that could only fail is not listed.
  assert.ok(!tools.tools.some((tool) => tool.name === "generate_and_execute"));
});

Deno.test("a server started with nothing on stdin starts up all the same", async () => {
  // As in a terminal, where the README has a newcomer start it first.
  const child = spawnServe({ stdout: "null", stderr: "piped" });
  const deadline = killAfter(child, "SIGTERM");
  let log = "";
  try {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      log += chunk;
      if (log.includes("serving MCP over stdio")) break;
    }
  } finally {
    deadline.clear();
    await child.stdin.close();
    await child.status;
  }
  assert.match(log, /serving MCP over stdio/);
});

Deno.test("a server whose stdin closes while it waits for the opening stops", async (t) => {
  for (const [name, bytes] of [["nothing", ""], ["half a line", '{"jsonrpc":"2.0","id":1,"me']]) {
    await t.step(`after ${name}`, async () => {
      const child = spawnServe({ stdout: "null" });
      const writer = child.stdin.getWriter();
      await writer.write(new TextEncoder().encode(bytes));
      await writer.close();
      const deadline = killAfter(child, "SIGKILL");
      const status = await child.status;
      deadline.clear();
      assert.equal(deadline.fired(), false, "still running 30 s after stdin closed");
      assert.equal(status.code, 0);
    });
  }
});

Deno.test("attack: a line that is JSON but no JSON-RPC message is answered, not left waiting", async () => {
  // The SDK's transport dropped these with a log line, and the client waited until its timeout.
  const invalid = [
    [{ jsonrpc: "2.0", id: 3, method: "ping" }, { jsonrpc: "2.0", id: 4, method: "ping" }],
    { jsonrpc: "2.0", id: null, method: "ping" },
    { jsonrpc: "2.0", id: { a: 1 }, method: "ping" },
    { jsonrpc: "2.0", id: 2 ** 60, method: "ping" },
    { jsonrpc: "2.0", id: 1.5, method: "ping" },
    { jsonrpc: "2.0", id: true, method: "ping" },
    { id: "no-version", method: "ping" },
    { jsonrpc: "2.0", id: null, result: {} }, // looks like an answer: not answered
  ];
  const messages = await rawSession(
    [initialize({}, 1), ...invalid, { jsonrpc: "2.0", id: 9, method: "ping" }],
    (m) => answersTo(m, 9).length > 0 && m.filter((a) => "error" in a).length >= 7,
  );
  const errors = messages.filter((m) => "error" in m);
  assert.deepEqual(errors.map((m) => m.id), [null, null, null, 2 ** 60, 1.5, null, "no-version"]);
  for (const m of errors) assert.equal((m.error as { code: number }).code, -32600);
  assert.match((errors[0]!.error as { message: string }).message, /batches are not supported/);
  assert.deepEqual(answersTo(messages, 9)[0]!.result, {}, "the connection goes on");
});

Deno.test("attack: a message over the size limit is answered and skipped; the connection goes on", async () => {
  // 17 MiB: past the limit (a request with 8 MiB of files as base64 is within it). Clients
  // write the id last (the TypeScript SDK) or first (the Python SDK): found either way.
  const big = "A".repeat(17 * 1024 * 1024);
  const call = (id: number) => ({
    method: "tools/call",
    params: { name: "execute_code", arguments: { code: "1", files: { "a.txt": big } } },
    jsonrpc: "2.0",
    id,
  });
  const { method, params, ...head } = call(78);
  const messages = await rawSession(
    [
      initialize({}, 1),
      { jsonrpc: "2.0", method: "notifications/initialized" },
      call(77),
      { ...head, method, params },
      { jsonrpc: "2.0", id: 79, method: "ping" },
    ],
    (m) => answersTo(m, 79).length > 0,
  );
  for (const id of [77, 78]) {
    const [answer] = answersTo(messages, id);
    assert.equal((answer?.error as { code: number } | undefined)?.code, -32600, `id ${id}`);
    assert.match((answer!.error as { message: string }).message, /over 16777216 bytes/);
  }
  assert.deepEqual(answersTo(messages, 79)[0]!.result, {}, "the connection goes on");
});

Deno.test("attack: half a surrogate pair reaches no client, in answers or notifications", async () => {
  const messages = await rawSession(
    [
      initialize({}, 1),
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: "ping \ud800", method: "ping" },
      {
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: {
          name: "execute_code",
          arguments: {
            code: "import mcp_tools\nmcp_tools.report_progress(1, 2, 'half \\ud800 here')",
          },
          _meta: { progressToken: "p" },
        },
      },
    ],
    (m) => answersTo(m, 2).length > 0,
  );
  assert.deepEqual(answersTo(messages, "ping \uFFFD")[0]?.result, {}, "the id, well-formed");
  const progress = messages.find((m) => m.method === "notifications/progress");
  assert.equal((progress?.params as { message?: string })?.message, "half \uFFFD here");
  for (const m of messages) assert.ok(JSON.stringify(m).isWellFormed(), JSON.stringify(m));
});

Deno.test("a client that waits before its initialize is answered by the SDK, once", async () => {
  const messages = await rawSession(
    [
      initialize({}, 1),
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 2, method: "tools/list" },
    ],
    (m) => answersTo(m, 2).length > 0,
    OPENING_WAIT_MS + 2000,
  );
  assert.equal(answersTo(messages, 1).length, 1);
  const tools = answersTo(messages, 2)[0]!.result as { tools: { name: string }[] };
  assert.ok(tools.tools.some((tool) => tool.name === "execute_code"), JSON.stringify(tools));
});

Deno.test("a line that is not JSON is warned of; a client that stops reading ends the server cleanly", async () => {
  const child = spawnServe({ stderr: "piped" });
  // Armed first: a server that loses the opening answers nothing, and the read would wait.
  const deadline = killAfter(child, "SIGKILL");
  const stderr = new Response(child.stderr).text();
  const writer = child.stdin.getWriter();
  const send = (text: string) => writer.write(new TextEncoder().encode(text));
  await send(`hello\n${JSON.stringify(initialize({}, 1))}\n`);
  const reader = child.stdout.getReader();
  const answer = await reader.read(); // the answer to initialize
  assert.ok(!answer.done, "stdout closed before initialize was answered");
  await reader.cancel(); // the client stops reading: the next write fails
  await send(`${JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" })}\n`);
  const status = await child.status;
  deadline.clear();
  await writer.close().catch(() => {});
  const log = await stderr;
  assert.equal(deadline.fired(), false, "still running 30 s after it started");
  assert.equal(status.code, 0, log);
  assert.match(log, /a line that is not JSON was ignored .*"line":"hello"/);
  assert.match(log, /shutting down \(stdout closed/);
  assert.doesNotMatch(log, /Uncaught/);
});

Deno.test("attack: a client that stops reading cannot hold the host still, nor a sandbox's limits", async () => {
  const child = spawnServe();
  // Armed first: a host that does block stops reading its stdin too, and a write could wait.
  const deadline = killAfter(child, "SIGKILL");
  const writer = child.stdin.getWriter();
  const line = (message: unknown) => JSON.stringify(message) + "\n";
  const requests = [
    initialize({}, 1),
    { jsonrpc: "2.0", method: "notifications/initialized" },
    { jsonrpc: "2.0", id: 2, method: "logging/setLevel", params: { level: "debug" } },
    {
      jsonrpc: "2.0",
      id: 99,
      method: "tools/call",
      params: {
        name: "execute_code",
        arguments: {
          code: "for i in range(60): print('o' * 1000)\nwhile True: pass",
          timeout_s: 2,
        },
      },
    },
  ];
  try {
    await writer.write(new TextEncoder().encode(requests.map(line).join("")));
    await delay(1500); // the script runs, its time limit counting
    // More answers than a pipe holds, none of them read: the host's writes cannot finish.
    const lists = Array.from({ length: 60 }, (_, i) => ({
      jsonrpc: "2.0",
      id: 10 + i,
      method: "tools/list",
    }));
    await writer.write(new TextEncoder().encode(lists.map(line).join("")));
    await delay(10_000); // nothing read meanwhile
    let buffered = "";
    const decoder = new TextDecoder();
    let result:
      | { structuredContent?: { duration_ms: number; diagnostics: { error_type: string } } }
      | undefined;
    for await (const chunk of child.stdout) {
      buffered += decoder.decode(chunk, { stream: true });
      const found = buffered.split("\n").filter((l) => l.includes('"id":99'));
      if (found.length > 0) {
        result = JSON.parse(found[0]!).result;
        break;
      }
    }
    assert.equal(result?.structuredContent?.diagnostics.error_type, "TIMEOUT");
    // Stopped at its limit (2 s, and the 2 s an interrupt may take), not when the client read.
    assert.ok(
      result!.structuredContent!.duration_ms < 8000,
      `${result!.structuredContent!.duration_ms} ms`,
    );
  } finally {
    deadline.clear();
    await writer.close().catch(() => {});
    await child.status;
  }
});

/** A stdio transport over a spawned server whose reading the test can stop (pipe kept open). */
class PausableStdio {
  onmessage?: (message: unknown) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  reading = true;
  readonly child = spawnServe({ stderr: "piped" });
  readonly #writer = this.child.stdin.getWriter();
  start(): Promise<void> {
    void (async () => {
      const reader = this.child.stdout.pipeThrough(new TextDecoderStream()).getReader();
      let buffered = "";
      while (this.reading) {
        const { value, done } = await reader.read();
        if (done) {
          this.onclose?.(); // a connect that waits gives up
          break;
        }
        buffered += value;
        const lines = buffered.split("\n");
        buffered = lines.pop()!;
        for (const line of lines) if (line.trim()) this.onmessage?.(JSON.parse(line));
      }
    })();
    return Promise.resolve();
  }
  send(message: unknown): Promise<void> {
    return this.#writer.write(new TextEncoder().encode(JSON.stringify(message) + "\n"));
  }
  close(): Promise<void> {
    return this.#writer.close().catch(() => {});
  }
}

/**
 * A 2026-07-28 client that opens a listen stream, stops reading (the pipe kept open), then asks
 * for `calls` answers it will never read.
 */
async function listenThenStopReading(calls: number) {
  const transport = new PausableStdio();
  // Armed first: a server that loses the opening never answers the client's connect.
  const deadline = killAfter(transport.child, "SIGKILL", 60_000);
  const stderr = new Response(transport.child.stderr).text();
  const client = new ClientV2({ name: "stalled", version: "1" }, {
    versionNegotiation: { mode: { pin: "2026-07-28" } },
  });
  await client.connect(transport as never);
  await client.listen({ toolsListChanged: true });
  transport.reading = false;
  for (let i = 0; i < calls; i++) {
    void client.callTool({ name: "get_tool_docs", arguments: { names: ["filesystem", "memory"] } })
      .catch(() => {});
  }
  return { transport, stderr, deadline };
}

Deno.test("attack: a 2026-07-28 client that listens, then stops reading, does not keep the server", async () => {
  // Answers past the 64 MiB the server keeps for a client (whole modules' stubs, many times).
  const { transport, stderr, deadline } = await listenThenStopReading(5000);
  const status = await transport.child.status;
  deadline.clear();
  await transport.close();
  const log = await stderr;
  assert.equal(deadline.fired(), false, "still running 60 s after it started");
  assert.equal(status.code, 0, log.slice(-2000));
  assert.match(log, /shutting down \(stdout: the client left \d+ MiB unread\)/);
});

Deno.test("attack: a server whose listening client stops reading, is stopped by a signal all the same", async () => {
  // Enough to fill the pipe, far below what makes the server give the client up.
  const { transport, stderr, deadline } = await listenThenStopReading(100);
  await delay(2000);
  // SIGTERM reaches the launcher, which passes it on to the server it started.
  transport.child.kill("SIGTERM");
  const status = await transport.child.status;
  deadline.clear();
  await transport.close();
  const log = await stderr;
  assert.equal(deadline.fired(), false, "still running 60 s after it started");
  assert.match(log, /shutting down \(SIGTERM\)/);
  assert.ok(status.code === 0 || status.signal === "SIGTERM", JSON.stringify(status));
});
