/**
 * Attacks on `serve --http` below the MCP layer: connections that send nothing, and request
 * bodies that stall. Both came before any token check or cap could apply (attacker round 44).
 */
import assert from "node:assert/strict";
import { connect, execute, startHttp } from "./_http.ts";
import { delay } from "./_helpers.ts";

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
