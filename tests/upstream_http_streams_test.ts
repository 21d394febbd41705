/**
 * Attacks by an HTTP upstream on what the host holds and does for its streams: a stream left
 * open after its answer, with an unfinished event in it (120 calls took the host to 1.6 GB for
 * good), and `retry: 0` on its listen stream (the host reconnected 420 times a second).
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
      settings: { pool_size: 1, permissions_dir: `${ROOT}tests/fixtures/permissions` },
    });
    await using server = await startServer({ args: ["--config", config] });
    const call = async (code: string) => {
      const r = await server.execute({ code: `from mcp_tools import hostile\n${code}` });
      assert.equal(r.success, true, r.text);
      return r.result;
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
  } finally {
    upstream.kill("SIGKILL");
    await upstream.status;
    await Deno.remove(dir, { recursive: true });
  }
});
