/**
 * HTTP sessions over time: the cap on open sessions, idle expiry, the per-connection share of
 * persistent code sessions, and nothing left behind by closed sessions or refused requests.
 */
import assert from "node:assert/strict";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startApp } from "../src/app.ts";
import { createLogger } from "../src/_util/log.ts";
import { delay, isAlive, ROOT, sandboxPids, writeConfig } from "./_helpers.ts";
import {
  closeRawSession,
  connect,
  DISCOVER,
  execute,
  initializeRequest,
  openRawSession,
  post,
  serveHttpInProcess,
  startHttp,
} from "./_http.ts";

async function sessionsConfig(settings: Record<string, unknown> = {}) {
  const dir = await Deno.makeTempDir();
  const path = await writeConfig(dir, {
    settings: { pool_size: 1, permissions_dir: `${ROOT}permissions`, ...settings },
  });
  return {
    path,
    async [Symbol.asyncDispose]() {
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("a session over --max-http-sessions gets HTTP 503 and a JSON-RPC error naming the limit", async () => {
  await using server = await startHttp(["--max-http-sessions", "2"]);
  const a = await openRawSession(server.url);
  const b = await openRawSession(server.url);
  assert.deepEqual([a.status, b.status], [200, 200]);
  const over = await post(server.url, initializeRequest(9));
  assert.equal(over.status, 503);
  assert.equal(over.headers.get("mcp-session-id"), null);
  assert.deepEqual(await over.json(), {
    jsonrpc: "2.0",
    error: {
      code: -32000,
      message:
        "Cannot open an HTTP session: 2 sessions are open (the limit, --max-http-sessions); close one (HTTP DELETE with its Mcp-Session-Id) or retry when idle sessions expire (after 600 s)",
    },
    id: 9,
  });
  // Closing one makes room again.
  assert.equal(await closeRawSession(server.url, a.session!), 200);
  const again = await openRawSession(server.url);
  assert.equal(again.status, 200);
  assert.ok(again.session);
});

Deno.test("an idle HTTP session expires and its persistent code sessions are closed", async () => {
  await using config = await sessionsConfig();
  await using server = await startHttp(["--http-idle-s", "1"], {}, config.path);
  const client = await connect(server.url);
  const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId!;
  const opened = await execute(client, "import js\njs.Deno.pid", {}, { session_id: "new" });
  assert.equal(opened.success, true, JSON.stringify(opened));
  const pid = opened.result as number;
  assert.ok(sandboxPids(server.pid).includes(pid), "the session's sandbox is the server's child");
  // A connected client's event stream (GET) is activity: a quiet client keeps its session.
  await delay(2500);
  const later = await execute(client, "'still here'", {}, { session_id: opened.session_id });
  assert.equal(later.result, "still here");
  // The client goes away without DELETE (its event stream closes).
  await client.close();
  for (let i = 0; i < 100 && isAlive(pid); i++) await delay(100);
  assert.equal(isAlive(pid), false, "the expired session's sandbox is still running");
  assert.match(server.stderr(), /http session expired .*"idle_s":1/);
  const stale = await post(server.url, { jsonrpc: "2.0", id: 3, method: "tools/list" }, sessionId);
  assert.equal(stale.status, 404);
  assert.equal((await stale.json()).error.message, "Unknown or expired session");
  // Any other path says where the endpoint is.
  const elsewhere = await fetch(new URL("/", server.url));
  assert.equal(elsewhere.status, 404);
  assert.match(await elsewhere.text(), /the MCP endpoint is \/mcp/);
});

Deno.test("one connection holds at most its share of persistent sessions; another can still open one", async () => {
  // 3 sessions on the server; 2 per connection by default (half, rounded up).
  await using config = await sessionsConfig({ max_sessions: 3 });
  await using server = await startHttp([], {}, config.path);
  const a = await connect(server.url);
  const b = await connect(server.url);
  const run = (client: Client, session_id = "new") => execute(client, "1", {}, { session_id });
  try {
    const a1 = (await run(a)).session_id!;
    assert.ok(a1, "a session was opened");
    assert.ok((await run(a)).success);
    const third = await run(a);
    assert.equal(third.diagnostics?.error_type, "POLICY_VIOLATION");
    assert.equal(
      third.diagnostics?.message,
      "Cannot open a session: this connection has 2 sessions open (the limit per connection, settings.max_sessions_per_connection); close one with close_session",
    );

    // Another HTTP session that learns the id can neither use nor close it.
    assert.match((await run(b, a1)).diagnostics!.message, /^No open session/);
    const stolen = await b.callTool({ name: "close_session", arguments: { session_id: a1 } });
    assert.equal(stolen.isError, true);
    assert.equal((await run(a, a1)).success, true, "still a's");

    assert.equal((await run(b)).success, true, "the second connection got none");
    const full = await run(b);
    assert.equal(full.diagnostics?.error_type, "POLICY_VIOLATION");
    assert.equal(
      full.diagnostics?.message,
      "Cannot open a session: 3 sessions are open on this server (the limit, settings.max_sessions); close one of yours with close_session, or retry when idle ones expire",
    );

    const closed = await a.callTool({ name: "close_session", arguments: { session_id: a1 } });
    assert.equal(closed.isError, false);
    assert.equal((await run(b)).success, true);
  } finally {
    await a.close();
    await b.close();
  }
});

Deno.test("closed HTTP sessions and refused requests leave no catalog listener behind", async () => {
  await using config = await sessionsConfig({ pool_size: 0 });
  const lines: string[] = [];
  const log = createLogger("info", (line) => lines.push(line));
  const app = await startApp({ configPath: config.path, log, poolSize: 0 });
  // Count the hosts' subscriptions to catalog changes: each must end when its host closes.
  const subscribe = app.tools.onChange.bind(app.tools);
  let subscribed = 0;
  let live = 0;
  app.tools.onChange = (listener) => {
    subscribed++;
    live++;
    const unsubscribe = subscribe(listener);
    return () => {
      live--;
      unsubscribe();
    };
  };
  const http = await serveHttpInProcess(app, {
    log,
  });
  // The HTTP server itself listens once (to tell 2026-07-28 subscribers of changes).
  const baseline = live;
  try {
    const open = await openRawSession(http.url);
    assert.equal(live - baseline, 1, "an open session's host listens to catalog changes");
    assert.equal(await closeRawSession(http.url, open.session!), 200);
    for (let i = 0; i < 50; i++) {
      const { session } = await openRawSession(http.url);
      const list = await post(http.url, { jsonrpc: "2.0", id: 2, method: "tools/list" }, session!);
      assert.match(await list.text(), /execute_code/);
      assert.equal(await closeRawSession(http.url, session!), 200);
    }
    const settle = async () => {
      for (let i = 0; i < 50 && live > baseline; i++) await delay(20); // closing is asynchronous
    };
    await settle();
    assert.equal(
      live - baseline,
      0,
      `${live - baseline} closed sessions' hosts still listen to catalog changes`,
    );

    const before = subscribed;
    const replies: unknown[] = [];
    for (let i = 0; i < 50; i++) {
      const probe = await post(http.url, DISCOVER);
      assert.equal(probe.status, 400);
      replies.push(await probe.json());
    }
    await settle();
    assert.equal(live, baseline, "refused probes' hosts still listen to catalog changes");
    assert.equal(subscribed, before, "refused probes built MCP servers");
    assert.deepEqual(replies[0], {
      jsonrpc: "2.0",
      error: {
        code: -32000,
        message:
          "Bad Request: Mcp-Session-Id header is required (a session starts with an initialize request)",
      },
      id: 7,
    });

    // An initialize the transport refuses (no text/event-stream in Accept) is not a session.
    const refused = await fetch(http.url, {
      method: "POST",
      body: JSON.stringify(initializeRequest(1)),
      headers: { "content-type": "application/json", accept: "application/json" },
    });
    assert.equal(refused.status, 406);
    await refused.body?.cancel();
    await settle();
    assert.equal(live, baseline, "the refused initialize's host still listens to catalog changes");
    assert.equal(http.sessions, 0);
  } finally {
    await http.shutdown();
    await app.close();
  }
});
