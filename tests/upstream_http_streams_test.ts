/**
 * Attacks by an HTTP upstream on what the host holds and does for its streams: a stream left
 * open after its answer, with an unfinished event in it (120 calls took the host to 1.6 GB for
 * good), `retry: 0` on its listen stream (the host reconnected 420 times a second), replies
 * that never end or never start (a connection each, for good, after their calls timed out), and
 * a flood of its own requests whose answers it never acknowledges (20,000 open files, then the
 * host crashed).
 */
import assert from "node:assert/strict";
import { delay, ROOT, startServer, writeConfig } from "./_helpers.ts";

Deno.test("an HTTP upstream's streams: closed once answered, reconnected at most once a second", async (t) => {
  const upstream = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", "--allow-net=127.0.0.1", "hostile_http_server.ts"],
    cwd: `${ROOT}tests/fixtures`,
    stdout: "piped",
  }).spawn();
  const reader = upstream.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const port = Number((await reader.read()).value?.trim());
  reader.releaseLock();
  void upstream.stdout.cancel().catch(() => {});
  const dir = await Deno.makeTempDir();
  try {
    const config = await writeConfig(dir, {
      servers: { hostile: { url: `http://127.0.0.1:${port}/mcp` } },
      settings: {
        pool_size: 1,
        tool_timeout_s: 2,
        permissions_dir: `${ROOT}tests/fixtures/permissions`,
      },
    });
    await using server = await startServer({ args: ["--config", config] });
    const call = async (code: string) => {
      const r = await server.execute({ code: `from mcp_tools import hostile\n${code}` });
      assert.equal(r.success, true, r.text);
      return r.result;
    };
    const openUpstream = async () => {
      let open = "";
      for (let i = 0; i < 50 && open !== "0"; i++) {
        open = String(await call("hostile.open_streams()"));
        if (open !== "0") await delay(100);
      }
      return open;
    };

    await t.step("a stream the server leaves open after its answer is closed", async () => {
      const answers = await call("[hostile.leak(mib=2) for _ in range(12)]");
      assert.deepEqual(answers, Array(12).fill("leaked"));
      let open = "";
      for (let i = 0; i < 50 && open !== "0"; i++) {
        open = String(await call("hostile.open_streams()"));
        if (open !== "0") await delay(100);
      }
      assert.equal(open, "0", "streams still open upstream after their answers");
    });

    await t.step("a failed reply typed as an event stream is bounded whole, and cut", async () => {
      const said = await call([
        "def failure(kib):",
        "    try:",
        "        hostile.fail(kib=kib)",
        "    except Exception as e:",
        "        return [type(e).__name__, len(str(e))]",
        "[failure(50), failure(30 * 1024)]",
      ].join("\n"));
      // 50 KiB of error text: its start; 30 MiB: not read past 64 KiB (it was read whole, and
      // at 60 MiB the script's sandbox ran out of memory).
      const [small, large] = said as [string, number][];
      assert.equal(small![0], "ToolError");
      assert.ok(small![1] <= 4200, `${small![1]} characters`);
      assert.equal(large![0], "ToolError");
      assert.ok(large![1] <= 4200, `${large![1]} characters`);
    });

    await t.step(
      "retry: 0 on the listen stream does not make the host reconnect at once",
      async () => {
        const before = Number(await call("hostile.gets()"));
        await delay(3000);
        const after = Number(await call("hostile.gets()"));
        // A reconnection a second at most (the SDK's own delay): without the floor, hundreds.
        assert.ok(after - before <= 5, `${after - before} GETs in 3 s`);
      },
    );
    await t.step(
      "replies that never end or never start are closed when their calls time out",
      async () => {
        for (const tool of ["dribble", "silent"]) {
          const said = await call([
            "import asyncio",
            "async def given_up():",
            "    try:",
            `        await hostile.${tool}_async()`,
            "    except mcp_tools.ToolTimeout:",
            "        return 'timed out'",
            "import mcp_tools",
            "await asyncio.gather(*[given_up() for _ in range(6)])",
          ].join("\n"));
          assert.deepEqual(said, Array(6).fill("timed out"));
          assert.equal(await openUpstream(), "0", `${tool}: replies still open upstream`);
        }
      },
    );

    await t.step("a server's own requests get at most 4 answers waiting on it", async () => {
      const answers = async (done: RegExp) => {
        let said = "";
        for (let i = 0; i < 50; i++) {
          said = String(await call("hostile.answers()"));
          if (done.test(said)) break;
          await delay(100);
        }
        return said.split(" ").map(Number);
      };
      // Failed at once, with a body that never ends: not read, so no connection is kept.
      assert.equal(await call("hostile.pings(n=50, failing=True)"), "pinged");
      const [failedSent, failedOpen] = await answers(/ 0$/);
      assert.ok(failedSent! > 0, "its pings are answered");
      assert.equal(failedOpen, 0, "failed answers' bodies still open");
      // Never given a status: 4 wait, the others are not sent.
      assert.equal(await call("hostile.pings(n=200)"), "pinged");
      const [sent, waiting] = await answers(/^4 /);
      assert.ok(sent! > 0, "its pings are answered");
      assert.ok(sent! <= 4 && waiting! <= 4, `${sent} answers sent, ${waiting} waiting`);
    });
  } finally {
    upstream.kill("SIGKILL");
    await upstream.status;
    await Deno.remove(dir, { recursive: true });
  }
});
