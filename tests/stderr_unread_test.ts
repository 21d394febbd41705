/**
 * Attack: a client that keeps the server's stderr open and never reads it. A pipe holds 64 KiB;
 * a host that wrote its logs synchronously would stop, inside a write, at the first line past
 * that, and answer nothing more (nor stop any sandbox at its limits).
 */
import assert from "node:assert/strict";
import { spawnHttp } from "./_http.ts";
import { hostPid } from "./_helpers.ts";
import { queuedLines } from "../src/_util/queued_lines.ts";

const MODERN = "2026-07-28";

Deno.test("a client that never reads stderr does not hold the host up", async () => {
  // Two log lines for each call below.
  const child = spawnHttp(["--log-level", "debug"]);
  void child.stdout.cancel();
  let host: number | undefined;
  try {
    // Read stderr up to the line that gives the address, then never again (the pipe stays open).
    const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
    let seen = "";
    let url: string | undefined;
    while (url === undefined) {
      const { value, done } = await reader.read();
      assert.equal(done, false, `the server exited:\n${seen}`);
      seen += value;
      url = /"url":"(http:[^"]+)"/.exec(seen)?.[1];
    }
    host = hostPid(child.pid);
    // About 100 bytes of log a call: 1,400 calls write twice what the pipe holds (two at a
    // time, to leave the other tests running beside this one their share of the CPU).
    const call = async (id: number) => {
      const reply = await fetch(url, {
        method: "POST",
        signal: AbortSignal.timeout(20_000),
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-method": "tools/call",
          "mcp-name": "no_such_tool",
          "mcp-protocol-version": MODERN,
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id,
          method: "tools/call",
          params: {
            name: "no_such_tool",
            arguments: {},
            _meta: {
              "io.modelcontextprotocol/protocolVersion": MODERN,
              "io.modelcontextprotocol/clientCapabilities": {},
            },
          },
        }),
      });
      assert.match(await reply.text(), /Unknown tool \\"no_such_tool\\"\. This server/);
    };
    let next = 0;
    const worker = async () => {
      while (next < 1400) await call(next++);
    };
    await Promise.all(Array.from({ length: 2 }, worker));
  } finally {
    // The serving host is the launcher's child: a host stuck in a write heeds no forwarded
    // SIGTERM, and SIGKILL on the launcher alone would leave it running.
    if (host !== undefined) Deno.kill(host, "SIGKILL");
    child.kill("SIGKILL");
    await child.status;
    await child.stderr.cancel().catch(() => {});
  }
});

Deno.test("log lines past the queue's bound are dropped, counted, and said so once read", async () => {
  const written: string[] = [];
  const open = Promise.withResolvers<void>();
  // A reader that has stopped: no write completes until `open` resolves.
  const stuck = {
    async write(bytes: Uint8Array) {
      await open.promise;
      written.push(new TextDecoder().decode(bytes));
      return bytes.length;
    },
  };
  const lines = queuedLines(stuck, 1000);
  for (let i = 0; i < 10_000; i++) lines.write(`line ${String(i).padStart(4, "0")}\n`);
  await lines.flush(50);
  assert.deepEqual(written, [], "nothing is written while the reader is stuck");
  open.resolve();
  await lines.flush(5000);
  // 1000 bytes hold the first 100 lines of 10 bytes; the other 9,900 are counted.
  assert.equal(written.length, 101);
  assert.equal(written[99], "line 0099\n");
  assert.equal(
    written[100],
    "[code-mode] warn: 9900 log lines dropped (more than 1000 bytes were waiting to be written)\n",
  );
  lines.write("after\n");
  await lines.flush(5000);
  assert.equal(written.at(-1), "after\n");
});

Deno.test("a log line past a sixteenth of the queue's bound is cut, not dropped", async () => {
  const written: string[] = [];
  const reader = {
    write(bytes: Uint8Array) {
      written.push(new TextDecoder().decode(bytes));
      return Promise.resolve(bytes.length);
    },
  };
  const lines = queuedLines(reader, 1600);
  lines.write(`refused ${"r".repeat(5000)}\n`);
  await lines.flush(1000);
  assert.deepEqual(written, [`refused ${"r".repeat(92)}… [cut at 100 characters]\n`]);
});

Deno.test("a stderr that is closed is written to no more", async () => {
  let writes = 0;
  const closed = {
    write(): Promise<number> {
      writes++;
      return Promise.reject(new Error("Broken pipe"));
    },
  };
  const lines = queuedLines(closed);
  lines.write("one\n");
  await lines.flush(1000);
  lines.write("two\n");
  await lines.flush(1000);
  assert.equal(writes, 1);
});
