/**
 * Attacks on `serve --http` below the MCP layer: connections that send nothing, and request
 * bodies that stall. Both came before any token check or cap could apply (attacker round 44).
 */
import assert from "node:assert/strict";
import {
  connect,
  execute,
  INITIALIZE,
  NO_SERVERS,
  openRawSession,
  post,
  serveHttpInProcess,
  startHttp,
} from "./_http.ts";
import { delay } from "./_helpers.ts";
import { startApp } from "../src/app.ts";
import { createLogger } from "../src/_util/log.ts";

async function until(what: string, holds: () => boolean, log = () => "", ms = 30_000) {
  const end = Date.now() + ms;
  while (!holds()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}:\n${log().slice(-3000)}`);
    await delay(50);
  }
}

Deno.test("attack: connections that send nothing, past the host's descriptors, do not stop it", async () => {
  await using server = await startHttp();
  const client = await connect(server.url);
  const before = await execute(client, "x = 41", {}, { session_id: "new" });
  assert.equal(before.success, true, before.stderr);

  // The serving host may now hold 300 descriptors. With 1,024, about as many idle connections
  // took it down: Deno's accept loop failed (EMFILE) and its rejection went unhandled.
  const limit = await new Deno.Command("prlimit", {
    args: ["--pid", String(server.pid), "--nofile=300:300"],
  }).output();
  assert.equal(limit.code, 0, new TextDecoder().decode(limit.stderr));
  const { hostname, port } = new URL(server.url);
  const idle: Deno.Conn[] = [];
  try {
    for (let i = 0; i < 400; i++) idle.push(await Deno.connect({ hostname, port: Number(port) }));
  } catch {
    // Refused: the failed listener was shut down.
  }
  await until(
    "the listener to fail",
    () => server.stderr().includes("http listener failed"),
    server.stderr,
  );
  for (const conn of idle) {
    try {
      conn.close();
    } catch { /* closed by the server */ }
  }
  await until(
    "the listener to come back",
    () => server.stderr().includes("http listening again"),
    server.stderr,
  );

  // The host is up: the same MCP session goes on, and its code session kept its state.
  const after = await execute(client, "x + 1", {}, { session_id: before.session_id });
  assert.equal(after.success, true, after.stderr);
  assert.equal(after.result, 42);
  const fresh = await connect(server.url);
  assert.equal((await execute(fresh, "print(1)")).stdout, "1\n");
  await fresh.close();
  await client.close();
});

/** Sends raw HTTP/1.1 and returns the status line. */
async function rawStatus(port: string, head: string, body = ""): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(port) });
  try {
    await conn.write(new TextEncoder().encode(head + body));
    const answer = new Uint8Array(4096);
    const n = await conn.read(answer);
    return new TextDecoder().decode(answer.subarray(0, n ?? 0)).split("\r\n")[0]!;
  } finally {
    conn.close();
  }
}

Deno.test("attack: request bodies that stall hold at most their budget, for at most their time", async () => {
  const app = await startApp({ configPath: NO_SERVERS, log: createLogger("error"), poolSize: 0 });
  // Room for three bodies of a megabyte (the defaults: 16 of 4 MiB), each for 1.5 s (30 s).
  const http = await serveHttpInProcess(app, {
    bodyLimits: { maxBodiesBytes: 3_000_100, readMs: 1500 },
    log: createLogger("error"),
  });
  const { port } = new URL(http.url);
  const stalled: Deno.Conn[] = [];
  try {
    // Each sends its headers and 1,000,000 of the 1,000,010 bytes it announced, then nothing.
    const head = new TextEncoder().encode(
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\n` +
        "accept: application/json, text/event-stream\r\ncontent-length: 1000010\r\n\r\n",
    );
    for (let i = 0; i < 3; i++) {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(port) });
      await conn.write(head);
      let sent = 0;
      while (sent < 1_000_000) sent += await conn.write(new Uint8Array(1_000_000 - sent));
      stalled.push(conn);
    }
    await delay(300);
    const refused = await post(http.url, INITIALIZE);
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get("retry-after"), "1");
    assert.match(await refused.text(), /other requests' bodies, 3000100 bytes in all/);

    // Past their time, each stalled body is answered 408, and its share is free again.
    for (const conn of stalled) {
      const answer = new Uint8Array(4096);
      const n = await conn.read(answer);
      assert.match(new TextDecoder().decode(answer.subarray(0, n ?? 0)), /^HTTP\/1\.1 408 /);
    }
    const welcomed = await post(http.url, INITIALIZE);
    assert.equal(welcomed.status, 200);
    await welcomed.body?.cancel();
    const session = welcomed.headers.get("mcp-session-id");
    assert.ok(session);

    // A method written otherwise (`post`) was read by the SDK itself, past the budget and the
    // time: it is no method of /mcp. A GET or DELETE with a body is not read either.
    const other = (method: string, extra: string) =>
      rawStatus(
        port,
        `${method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\n` +
          `accept: application/json, text/event-stream\r\n${extra}\r\n`,
        "{}",
      );
    assert.equal(
      await other("post", "content-length: 2000000\r\n"),
      "HTTP/1.1 405 Method Not Allowed",
    );
    assert.equal(await other("PUT", "content-length: 2\r\n"), "HTTP/1.1 405 Method Not Allowed");
    const inSession = `mcp-session-id: ${session}\r\nmcp-protocol-version: 2025-11-25\r\n`;
    assert.equal(
      await other("GET", `${inSession}content-length: 2000000\r\n`),
      "HTTP/1.1 400 Bad Request",
    );
    assert.equal(
      await other("DELETE", `${inSession}transfer-encoding: chunked\r\n`),
      "HTTP/1.1 400 Bad Request",
    );
  } finally {
    for (const conn of stalled) {
      try {
        conn.close();
      } catch { /* closed by the server */ }
    }
    await http.shutdown();
    await app.close();
  }
});

Deno.test("a request id a session is still answering is refused, and the first is answered", async () => {
  await using server = await startHttp();
  const { session } = await openRawSession(server.url);
  const initialized = await post(server.url, {
    jsonrpc: "2.0",
    method: "notifications/initialized",
  }, session!);
  await initialized.body?.cancel();
  const call = (code: string) =>
    post(server.url, {
      jsonrpc: "2.0",
      id: 5,
      method: "tools/call",
      params: { name: "execute_code", arguments: { code } },
    }, session!);
  const first = call("import time\ntime.sleep(1.5)\n'first'");
  await delay(500);
  // Both went unanswered: the SDK keeps one response stream per id.
  const second = await call("'second'");
  assert.equal(second.status, 400);
  assert.match(await second.text(), /"code":-32600.*id 5 is that of a request of this session/);
  const answered = await (await first).text();
  assert.match(answered, /"id":5/);
  assert.match(answered, /"result":"first"/);
  // Twice in one batch: one answer was lost.
  const batch = await post(
    server.url,
    [5, 5].map((id) => ({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "execute_code", arguments: { code: "1" } },
    })),
    session!,
  );
  assert.equal(batch.status, 400);
  assert.match(await batch.text(), /id 5 is that of a request .* or given twice/);
  // The id is free again once answered.
  const again = await call("'again'");
  assert.match(await again.text(), /"result":"again"/);
});
