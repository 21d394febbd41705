import { ROOT, startServer, writeConfig } from "./_helpers.ts";
Deno.test("sleep probe", async () => {
  const dir = await Deno.makeTempDir();
  const config = await writeConfig(dir, {
    settings: { pool_size: 1, max_sessions: 3, permissions_dir: `${ROOT}permissions` },
  });
  await using server = await startServer({ args: ["--config", config] });
  const first = await server.execute({ code: "x = 1", session_id: "new" });
  const sid = first.session_id!;
  for (
    const code of [
      "import time\ntime.sleep(10)",
      "import asyncio\nawait asyncio.sleep(10)",
      "import time\nwhile True:\n    time.sleep(0.1)",
      "x",
    ]
  ) {
    const t0 = performance.now();
    const r = await server.execute({ code, session_id: sid, timeout_s: 1 });
    console.log(
      JSON.stringify(code),
      (performance.now() - t0).toFixed(0),
      r.diagnostics?.error_type,
      r.diagnostics?.message?.slice(0, 300),
      r.result,
    );
    if (!r.session_id) break;
  }
});
