/**
 * Start-up in the background: the server answers the MCP handshake before its snapshot exists
 * (a client that allows a server a few seconds for the handshake is not kept waiting by a
 * first-ever start), a script sent meanwhile waits and runs, a client may cancel while it waits,
 * and a start-up that fails is told on every call instead of a server that never answers.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { delay, isAlive, ROOT, startServer, writeConfig } from "./_helpers.ts";
import { StartingExecutor } from "../src/execution/starting_executor.ts";
import type { Executor } from "../src/execution/executor.ts";
import type { ExecutionResult } from "../src/execution/execution_result.ts";

const snapshotFiles = (dir: string) =>
  [...Deno.readDirSync(dir)].filter((e) => /^snapshot-.*\.bin$/.test(e.name));

Deno.test("serve answers the handshake before its first snapshot is built, and a call made then waits and runs", async () => {
  const cacheDir = await Deno.makeTempDir();
  // No upstream servers: nothing but the snapshot could hold `tools/list` back.
  const config = await writeConfig(cacheDir, {
    settings: { permissions_dir: `${ROOT}permissions` },
  });
  try {
    await using server = await startServer({
      args: ["--config", config],
      env: { CODEMODE_CACHE_DIR: cacheDir },
    });
    // The build takes seconds; neither the handshake nor the tool list waited for it.
    assert.deepEqual(snapshotFiles(cacheDir), [], "the handshake waited for the snapshot build");
    const tools = await server.client.listTools();
    assert.ok(tools.tools.some((t: { name: string }) => t.name === "execute_code"));
    assert.deepEqual(snapshotFiles(cacheDir), [], "tools/list waited for the snapshot build");
    const result = await server.execute({ code: "print(6 * 7)" });
    assert.equal(result.success, true, result.text);
    assert.equal(result.stdout, "42\n");
    assert.equal(snapshotFiles(cacheDir).length, 1);
  } finally {
    await Deno.remove(cacheDir, { recursive: true });
  }
});

Deno.test("a server whose start-up failed still answers, and every call says why", async () => {
  const blocker = await Deno.makeTempFile();
  try {
    // The cache folder cannot be made: its parent is a file.
    await using server = await startServer({
      env: { CODEMODE_CACHE_DIR: join(blocker, "cache") },
    });
    const result = await server.execute({ code: "print(1)" });
    assert.equal(result.success, false);
    assert.equal(result.isError, true);
    assert.equal(result.diagnostics?.error_type, "SANDBOX_CRASHED");
    assert.match(result.diagnostics?.message ?? "", /failed to start.*Not a directory/);
    // The tools are still listed (the upstream servers started): the client can see the server.
    const tools = await server.client.listTools();
    assert.ok(tools.tools.some((t: { name: string }) => t.name === "execute_code"));
  } finally {
    await Deno.remove(blocker);
  }
});

Deno.test("attack: a profile callers may not use cannot stop the start with its preload", async () => {
  // Its packages cannot be had (no folder, mirror or index holds them): loaded, it stopped the
  // start, and every call failed for a profile no caller could pick.
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(join(dir, "permissions"));
  await Deno.writeTextFile(join(dir, "permissions", "default.json"), "{}");
  await Deno.writeTextFile(
    join(dir, "permissions", "data.json"),
    JSON.stringify({ preload: ["not-anywhere"] }),
  );
  const config = await writeConfig(dir, {
    settings: { permissions_dir: "permissions", allowed_profiles: ["default"] },
  });
  try {
    await using server = await startServer({ args: ["--config", config] });
    const result = await server.execute({ code: "print(1)" });
    assert.equal(result.success, true, result.text);
    const refused = await server.execute({ code: "print(1)", profile: "data" });
    assert.equal(refused.isError, true);
    assert.match(refused.text, /profile: expected one of "default"/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("StartingExecutor: a call waits for the start-up, and one cancelled meanwhile is CANCELLED", async () => {
  const ready = Promise.withResolvers<Executor>();
  const ran: string[] = [];
  const inner: Executor = {
    execute: (request) => {
      ran.push(request.code);
      return Promise.resolve({ success: true } as ExecutionResult);
    },
  };
  const executor = new StartingExecutor(ready.promise, "default");
  const waiting = executor.execute({ code: "first" });
  const abort = new AbortController();
  const cancelled = executor.execute({ code: "cancelled" }, { signal: abort.signal });
  abort.abort();
  const refused = await cancelled;
  assert.equal(refused.diagnostics?.error_type, "CANCELLED");
  assert.deepEqual(ran, [], "a call ran before the start-up finished");
  ready.resolve(inner);
  assert.equal((await waiting).success, true);
  assert.deepEqual(ran, ["first"]);
});

Deno.test("a server closed while it builds its first snapshot leaves no builder running", async () => {
  const cacheDir = await Deno.makeTempDir();
  const builders = () =>
    [...Deno.readDirSync("/proc")].filter((e) => /^\d+$/.test(e.name)).filter((e) => {
      try {
        return Deno.readTextFileSync(`/proc/${e.name}/cmdline`).includes(cacheDir);
      } catch {
        return false;
      }
    });
  try {
    const server = await startServer({ env: { CODEMODE_CACHE_DIR: cacheDir } });
    for (let i = 0; i < 100 && builders().length === 0; i++) await delay(50);
    assert.ok(builders().length > 0, "no snapshot builder was started");
    await server.client.close();
    // Once the server is gone its builder must be too (a build takes seconds more than this).
    for (let i = 0; i < 200 && isAlive(server.pid); i++) await delay(50);
    await delay(300);
    assert.deepEqual(builders().map((e) => e.name), [], "the builder outlived the server");
  } finally {
    await Deno.remove(cacheDir, { recursive: true });
  }
});

Deno.test("attack: a call held for the start-up is answered when the server stops", async () => {
  // Tool requests wait (up to 10 s) for the upstream servers to be listed; one held when the
  // server stopped was closed unanswered, and its client waited out its timeout (attacker 58).
  const dir = await Deno.makeTempDir();
  const config = await writeConfig(dir, {
    servers: {
      mute: { command: "deno", args: ["eval", "setInterval(() => {}, 1000)"] },
    },
  });
  await using server = await startServer({ args: ["--config", config] });
  const held = server.client.listTools().then(() => "listed", (error: Error) => error.message);
  await delay(1000);
  Deno.kill(server.pid, "SIGTERM");
  assert.match(await held, /the server is shutting down/);
  await Deno.remove(dir, { recursive: true });
});
