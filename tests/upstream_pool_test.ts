/**
 * UpstreamPool in process: real MCP servers built with the SDK, reached over its in-memory
 * transport through the pool's injected transport factory (tests/upstream_test.ts and
 * tests/upstream_dynamic_test.ts run servers over stdio and HTTP).
 */
import assert from "node:assert/strict";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { z } from "zod";
import { createLogger, silentLogger } from "../src/_util/log.ts";
import type { ServerConfig } from "../src/config/config.ts";
import { lastWords, UpstreamPool } from "../src/upstream/pool.ts";
import type { TransportFactory } from "../src/upstream/transport.ts";
import { countProcesses, delay } from "./_helpers.ts";

function serverConfig(name: string): ServerConfig {
  return {
    kind: "stdio",
    name,
    protocol: "2025-11-25",
    command: "unused",
    args: [],
    env: {},
    cwd: "/",
    description: `${name} server`,
  };
}

/** A real MCP server with one tool, "greet"; `servers` holds every one started. */
function serverFactory() {
  const servers: McpServer[] = [];
  const start = (): Transport => {
    const server = new McpServer({ name: "notes", version: "1.0.0" });
    server.registerTool(
      "greet",
      { description: "Greets someone.", inputSchema: { name: z.string() } },
      (args: { name: string }) => ({
        content: [{ type: "text" as const, text: `hi ${args.name}` }],
      }),
    );
    const [clientEnd, serverEnd] = InMemoryTransport.createLinkedPair();
    void server.connect(serverEnd);
    servers.push(server);
    return clientEnd;
  };
  return { servers, start };
}

/** `promise`, or a failure naming what did not happen in time (rather than a hung test). */
async function within<T>(promise: Promise<T>, what: string, ms = 5000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A transport whose start fails, as a server that cannot be spawned. */
function failingTransport(message: string): Transport {
  return {
    start: () => Promise.reject(new Error(message)),
    send: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
}

Deno.test("UpstreamPool.start() connects every server and snapshot() lists their tools", async () => {
  const notes = serverFactory();
  const pool = new UpstreamPool({
    servers: [serverConfig("notes")],
    transports: () => ({ transport: notes.start() }),
    log: silentLogger,
  });
  await pool.start();
  assert.equal(pool.state("notes"), "connected");
  const [entry, ...rest] = pool.snapshot();
  assert.deepEqual(rest, []);
  assert.equal(entry!.server, "notes");
  assert.equal(entry!.description, "notes server");
  assert.equal(entry!.error, undefined);
  assert.deepEqual(entry!.tools.map((t) => [t.server, t.name, t.description]), [
    ["notes", "greet", "Greets someone."],
  ]);
  assert.deepEqual(Object.keys(entry!.tools[0]!.inputSchema.properties as object), ["name"]);
  await pool.close();
});

Deno.test("UpstreamPool.session() gives the live client, or says why there is none", async () => {
  const notes = serverFactory();
  const pool = new UpstreamPool({
    servers: [serverConfig("notes")],
    transports: () => ({ transport: notes.start() }),
    log: silentLogger,
  });
  const before = pool.session("notes");
  assert.deepEqual(before, { unavailable: 'server "notes" is not connected (connecting)' });
  await pool.start();
  const session = pool.session("notes");
  assert.ok(session && "client" in session, "a live client once connected");
  const reply = await session.client.callTool({ name: "greet", arguments: { name: "Ada" } });
  assert.deepEqual(reply.content, [{ type: "text", text: "hi Ada" }]);
  assert.equal(pool.session("nowhere"), undefined, "no server of that name");
  await pool.close();
  assert.deepEqual(pool.session("notes"), {
    unavailable: 'server "notes" is not connected (closed)',
  });
});

Deno.test("UpstreamPool reports a server that cannot connect, without holding up the others", async () => {
  const notes = serverFactory();
  let changes = 0;
  const transports: TransportFactory = (server) => ({
    transport: server.name === "broken"
      ? failingTransport("Cannot spawn: no such command")
      : notes.start(),
  });
  const pool = new UpstreamPool({
    servers: [serverConfig("broken"), serverConfig("notes")],
    transports,
    log: silentLogger,
    onChange: () => changes++,
  });
  await pool.start();
  assert.equal(pool.state("broken"), "reconnecting");
  assert.equal(pool.state("notes"), "connected");
  const [broken, good] = pool.snapshot();
  assert.deepEqual(broken, {
    server: "broken",
    description: "broken server",
    tools: [],
    error: "Cannot spawn: no such command",
  });
  assert.equal(good!.error, undefined);
  assert.deepEqual(pool.session("broken"), {
    unavailable: 'server "broken" is not connected (reconnecting): Cannot spawn: no such command',
  });
  assert.ok(changes >= 2, "a change for the failure and for the connect");
  await pool.close(); // also cancels the scheduled reconnect
});

Deno.test("UpstreamPool scrubs a secret from a connection error before it is shown", async () => {
  const pool = new UpstreamPool({
    servers: [serverConfig("broken")],
    transports: () => ({ transport: failingTransport("bad token sk-live-123456789") }),
    log: silentLogger,
    redact: (text) => text.replaceAll("sk-live-123456789", "[REDACTED]"),
  });
  await pool.start();
  assert.equal(pool.snapshot()[0]!.error, "bad token [REDACTED]");
  assert.doesNotMatch(JSON.stringify(pool.session("broken")), /sk-live/);
  await pool.close();
});

Deno.test("attack: a server's refusal of any length is cut before it is shown", async () => {
  // An HTTP server refused with 9 MiB of text: each call raised it whole, 200 times.
  const pool = new UpstreamPool({
    servers: [serverConfig("broken")],
    transports: () => ({ transport: failingTransport(`refused ${"r".repeat(9 * 2 ** 20)}`) }),
    log: silentLogger,
  });
  await pool.start();
  const error = pool.snapshot()[0]!.error!;
  assert.ok(error.startsWith("refused rrr") && error.length <= 2001, `${error.length} characters`);
  const unavailable = (pool.session("broken") as { unavailable: string }).unavailable;
  assert.ok(unavailable.length < 2100, `${unavailable.length} characters`);
  await pool.close();
});

Deno.test("UpstreamPool picks up a tool the server adds (tools/list_changed) and calls onChange", async () => {
  const notes = serverFactory();
  const changed = Promise.withResolvers<void>();
  let connected = false;
  const pool = new UpstreamPool({
    servers: [serverConfig("notes")],
    transports: () => ({ transport: notes.start() }),
    log: silentLogger,
    onChange: () => {
      if (connected) changed.resolve();
    },
  });
  await pool.start();
  connected = true;
  notes.servers[0]!.registerTool(
    "farewell",
    { description: "Says goodbye." },
    () => ({ content: [{ type: "text" as const, text: "bye" }] }),
  );
  await within(changed.promise, "onChange after tools/list_changed");
  assert.deepEqual(pool.snapshot()[0]!.tools.map((t) => t.name).sort(), ["farewell", "greet"]);
  await pool.close();
});

Deno.test("UpstreamPool says a dropped server is unavailable, then reconnects it", async () => {
  const notes = serverFactory();
  const reconnected = Promise.withResolvers<void>();
  const pool = new UpstreamPool({
    servers: [serverConfig("notes")],
    transports: () => ({ transport: notes.start() }),
    log: silentLogger,
    onChange: () => {
      if (notes.servers.length === 2 && pool.state("notes") === "connected") reconnected.resolve();
    },
  });
  await pool.start();
  await notes.servers[0]!.close(); // the server side goes away
  assert.equal(pool.state("notes"), "reconnecting");
  assert.deepEqual(pool.session("notes"), {
    unavailable: 'server "notes" is not connected (reconnecting): the session closed',
  });
  assert.deepEqual(
    pool.snapshot()[0]!.tools.map((t) => t.name),
    ["greet"],
    "its last known tools are kept",
  );
  await within(reconnected.promise, "the reconnect"); // the first retry comes after 250 ms
  assert.ok("client" in pool.session("notes")!);
  await pool.close();
});

Deno.test("attack: a server that drops each time it has connected is reconnected ever more slowly", async () => {
  // Each connection rebuilds the catalog: a server that exited 300 ms after every tool list,
  // reconnected after 250 ms each time, held 80 % of the host's CPU.
  const notes = serverFactory();
  const pool = new UpstreamPool({
    servers: [serverConfig("notes")],
    transports: () => ({ transport: notes.start() }),
    log: silentLogger,
    onChange: () => {
      if (pool.state("notes") === "connected") void notes.servers.at(-1)!.close();
    },
  });
  await pool.start();
  await delay(3500);
  await pool.close();
  // Delays of 250, 500, 1000 and 2000 ms: 4 connections in 3.5 s (14 at 250 ms each).
  assert.ok(notes.servers.length <= 5, `${notes.servers.length} connections in 3.5 s`);
  assert.ok(notes.servers.length >= 3, `${notes.servers.length} connections in 3.5 s`);
});

Deno.test("UpstreamPool.close() stops a server still connecting, and the SDK's probe of it", async (t) => {
  const { defaultTransportFactory } = await import("../src/upstream/transport.ts");
  for (const [protocol, seconds] of [["auto", "9871"], ["2025-11-25", "9872"]] as const) {
    await t.step(`protocol ${protocol}`, async () => {
      // A server that never answers: `auto` is still probing with server/discover on a second
      // process when the pool closes; 2025-11-25 is waiting for its initialize answer.
      const logged: string[] = [];
      const pool = new UpstreamPool({
        servers: [{
          kind: "stdio",
          name: "hang",
          protocol,
          command: "sleep",
          args: [seconds],
          env: {},
          cwd: "/",
          description: "",
        }],
        transports: defaultTransportFactory,
        log: createLogger("warn", (line) => void logged.push(line)),
      });
      const started = pool.start();
      const running = () => sleepers(seconds);
      for (let i = 0; i < 100 && running() === 0; i++) await delay(50);
      assert.ok(running() > 0, "the server started");
      await pool.close();
      await started;
      assert.equal(running(), 0, `sleep ${seconds} outlived the pool`);
      // A connect that closing stopped did not fail: a server shutting down says nothing of it.
      assert.deepEqual(logged, []);
    });
  }
});

Deno.test("UpstreamPool.close() right after a failed connect waits for that server to exit", async () => {
  const { defaultTransportFactory } = await import("../src/upstream/transport.ts");
  const pool = new UpstreamPool({
    servers: [{
      kind: "stdio",
      name: "hang",
      protocol: "2025-11-25",
      command: "sleep",
      args: ["9873"],
      env: {},
      cwd: "/",
      description: "",
    }],
    transports: defaultTransportFactory,
    log: silentLogger,
    connectTimeoutMs: 500,
  });
  await pool.start();
  assert.equal(pool.state("hang"), "reconnecting");
  // The SDK stops the failed server 2 s after closing its stdin; closing now must not leave it.
  await pool.close();
  assert.equal(sleepers("9873"), 0, "sleep 9873 outlived the pool");
});

/** Running `sleep` processes with `seconds` as their argument. */
function sleepers(seconds: string): number {
  return countProcesses((argv) =>
    (argv.includes("sleep") || argv[0]!.endsWith("/sleep")) && argv.includes(seconds)
  );
}

Deno.test("UpstreamPool.start({ waitMs }) does not wait for a slow server; a call to it waits for its connect", async () => {
  const { start } = serverFactory();
  // The slow server's end of the pipe never answers `initialize`.
  const silent = (): Transport => InMemoryTransport.createLinkedPair()[0];
  const transports: TransportFactory = (server) => ({
    transport: server.name === "slow" ? silent() : start(),
  });
  const pool = new UpstreamPool({
    servers: [serverConfig("quick"), serverConfig("slow")],
    transports,
    log: silentLogger,
    connectTimeoutMs: 1500,
  });
  await within(pool.start({ waitMs: 300 }), "start with a 300 ms wait");
  assert.equal(pool.state("quick"), "connected");
  // Still in its first connect: had start waited for it to end (1.5 s), it would be
  // "reconnecting". (No wall-clock bound: a loaded machine may be slow, never early.)
  assert.equal(pool.state("slow"), "connecting");
  // Now, a call waits for the slow server's first connect to end, then says why it failed.
  const session = await within(pool.settledSession("slow"), "the slow server's first connect");
  assert.ok(session !== undefined && "unavailable" in session, JSON.stringify(session));
  assert.match(session.unavailable, /not connected \(reconnecting\)/);
  assert.ok("client" in (await pool.settledSession("quick"))!);
  assert.equal(await pool.settledSession("nobody"), undefined);
  await pool.close();
});

Deno.test("errorText() says an error's causes too (fetch failed: why)", async () => {
  const { errorText } = await import("../src/upstream/pool.ts");
  const refused = new TypeError("fetch failed", {
    cause: new Error("error sending request for url (http://h/mcp): connection refused"),
  });
  assert.equal(
    errorText(new Error("probe failed: fetch failed", { cause: refused })),
    "probe failed: fetch failed: error sending request for url (http://h/mcp): connection refused",
  );
  assert.equal(errorText("plain"), "plain");
});

Deno.test("lastWords() gives a failed server's last lines that say something", () => {
  const esc = String.fromCharCode(27);
  const stderr = [
    `${esc}[0m${esc}[32mDownload${esc}[0m https://registry.example/pkg`,
    `${esc}[1m${esc}[31merror${esc}[0m: Uncaught (in promise) NotCapable: Requires env access`,
    "    at denoEnvGet (ext:deno_node/_process/process.ts:1:1)",
    "    at Object.get (ext:deno_node/_process/process.ts:2:2)",
    "",
  ].join("\n");
  assert.equal(
    lastWords(stderr, 2, 500),
    "Download https://registry.example/pkg | error: Uncaught (in promise) NotCapable: Requires env access",
  );
  assert.equal(lastWords("a\nb\nc", 2, 3), "b |");
  // Each retry of a server that cannot start says the same: once is enough.
  const retries = "Download x\nerror: Module not found\n".repeat(3);
  assert.equal(lastWords(retries, 3, 500), "Download x | error: Module not found");
});
