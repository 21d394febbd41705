/**
 * A persistent session does nothing between its executions: JavaScript work its script
 * scheduled (a timer that spins and allocates) must not run on, outside every limit, while the
 * session sits idle, not even when a person's answer about one of its calls comes after the
 * script ended.
 */
import assert from "node:assert/strict";
import { delay, ROOT, sandboxPids, startServer, writeConfig } from "./_helpers.ts";
import { sessionSandbox } from "./_sandbox.ts";

/** CPU time (clock ticks) and resident memory (kB) of a process. */
function usage(pid: number): { ticks: number; rssKb: number; state: string } {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return {
    state: fields[0]!,
    ticks: Number(fields[11]) + Number(fields[12]),
    rssKb: Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0),
  };
}

Deno.test("a session's sandbox neither runs nor grows between its executions", async () => {
  const dir = await Deno.makeTempDir();
  const config = await writeConfig(dir, {
    settings: { pool_size: 0, max_sessions: 2, permissions_dir: `${ROOT}permissions` },
  });
  await using server = await startServer({ args: ["--config", config] });
  const scheduled = await server.client.callTool({
    name: "execute_code",
    arguments: {
      session_id: "new",
      code: [
        "import js",
        "from pyodide.ffi import create_proxy",
        "hold = []",
        "def spin():",
        "    total = 0",
        "    for i in range(300_000):",
        "        total += i",
        "    hold.append(bytearray(8_000_000))",
        "js.setInterval(create_proxy(spin), 5)",
        "'scheduled'",
      ].join("\n"),
    },
  });
  assert.equal((scheduled.structuredContent as { result: unknown }).result, "scheduled");
  const [pid] = sandboxPids(server.pid);
  assert.ok(pid, "the session's sandbox is running");
  const before = usage(pid);
  await delay(1500);
  const after = usage(pid);
  assert.ok(
    after.ticks - before.ticks <= 5,
    `idle session used ${after.ticks - before.ticks} ticks`,
  );
  assert.ok(
    after.rssKb - before.rssKb < 16_000,
    `idle session grew ${after.rssKb - before.rssKb} kB`,
  );

  const next = await server.client.callTool({
    name: "execute_code",
    arguments: {
      session_id: (scheduled.structuredContent as { session_id: string }).session_id,
      code: "isinstance(hold, list)",
    },
  });
  assert.equal((next.structuredContent as { result: unknown }).result, true);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("an answer that comes after its script ended does not wake the session", async () => {
  await using sandbox = await sessionSandbox();
  const run = { timeoutMs: 30_000, memoryBytes: 512 * 1024 * 1024, outputBytes: 65536 };
  // The script starts a call it does not wait for, and a timer that would spin. The call's
  // clock is held (as while a person decides) only once the script has ended: holding it
  // earlier would freeze the script before it could end.
  let clock: { pause(): () => void } | undefined;
  const outcome = await sandbox.execute({
    ...run,
    code: [
      "import _codemode_host, js",
      "from pyodide.ffi import create_proxy",
      "def spin():",
      "    total = 0",
      "    for i in range(300_000):",
      "        total += i",
      "js.setInterval(create_proxy(spin), 5)",
      "pending = _codemode_host.call_tool('s', 't', '{}')",
      "'ended'",
    ].join("\n"),
  }, {
    callTool: (_, held) => {
      clock = held;
      return new Promise(() => {});
    },
  });
  assert.equal(outcome.reply?.ok && outcome.reply.result, "ended");
  assert.ok(clock, "the call reached the host while the script ran");
  // The person answers now, after the script ended.
  clock.pause()();
  const before = usage(sandbox.pid);
  await delay(1000);
  const after = usage(sandbox.pid);
  assert.equal(after.state, "T", "the idle session was woken");
  assert.ok(
    after.ticks - before.ticks <= 2,
    `idle session used ${after.ticks - before.ticks} ticks`,
  );
});
