/**
 * The upstream side on the SDK v2 client, against an upstream server that speaks only MCP
 * 2026-07-28 (tests/fixtures/modern_server.ts): pinned to that revision, and found by `auto`'s
 * probe. A script calls its tool as a plain function.
 */
import assert from "node:assert/strict";
import { ROOT, startServer, writeConfig } from "./_helpers.ts";

for (const protocol of ["2026-07-28", "auto"]) {
  Deno.test(`an upstream server speaking only 2026-07-28, with "protocol": "${protocol}"`, async () => {
    const dir = await Deno.makeTempDir();
    const config = await writeConfig(dir, {
      servers: {
        modern: {
          command: "deno",
          args: ["run", "--no-prompt", "--allow-env", `${ROOT}tests/fixtures/modern_server.ts`],
          protocol,
        },
      },
      settings: { pool_size: 1, permissions_dir: `${ROOT}permissions` },
    });
    await using server = await startServer({ args: ["--config", config] });
    const r = await server.execute({
      code: "from mcp_tools import modern\nmodern.echo(text='hello')",
    });
    assert.equal(r.success, true, r.text);
    assert.deepEqual(r.result, { text: "hello", era: "modern" });
    await Deno.remove(dir, { recursive: true });
  });
}
