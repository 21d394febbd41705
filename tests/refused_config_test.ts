/**
 * A config the server refuses, with a client (not a person at a terminal) on stdio: the client
 * completes its handshake and is told why by the one tool it is offered, whatever the protocol
 * revision, from the launching process (the config refused before the restricted relaunch) and
 * from the server process (`--no-restrict`, after the opening was answered early).
 */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { childEnv, MAIN, ROOT, SERVE_FLAGS, writeConfig } from "./_helpers.ts";
import { rawStdio } from "./_modern.ts";

const WHY =
  /Code mode cannot start: Cannot load config .*settings\.pool_sise: unknown setting; did you mean "pool_size"\?/;

Deno.test("a refused config is said to a stdio client through the protocol", async (t) => {
  const dir = await Deno.makeTempDir();
  const config = await writeConfig(dir, { settings: { pool_sise: 2 } });
  for (const extra of [[], ["--no-restrict"]]) {
    await t.step(`2025-11-25 client${extra.length ? " " + extra.join(" ") : ""}`, async () => {
      const transport = new StdioClientTransport({
        command: Deno.execPath(),
        args: ["run", ...SERVE_FLAGS, MAIN, "serve", "--config", config, ...extra],
        env: childEnv(),
        stderr: "pipe",
        cwd: ROOT,
      });
      let stderr = "";
      transport.stderr?.on(
        "data",
        (chunk: Uint8Array) => stderr += new TextDecoder().decode(chunk),
      );
      const client = new Client({ name: "test", version: "0" });
      await client.connect(transport);
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((tool: { name: string }) => tool.name), ["execute_code"]);
      assert.match(tools[0]!.description ?? "", WHY);
      const r = await client.callTool({ name: "execute_code", arguments: { code: "print(1)" } });
      assert.equal(r.isError, true);
      assert.match((r.content as { text: string }[])[0]!.text, WHY);
      await client.close();
      assert.match(stderr, /pool_sise/, "and on stderr, as before");
    });
  }
  await t.step("2026-07-28 client", async () => {
    await using server = rawStdio(config, {});
    const reply = await server.request("tools/call", {
      name: "execute_code",
      arguments: { code: "1" },
    }) as { result?: { isError?: boolean; content: { text: string }[] } };
    assert.equal(reply.result?.isError, true, JSON.stringify(reply));
    assert.match(reply.result!.content[0]!.text, WHY);
  });
  await Deno.remove(dir, { recursive: true });
});
