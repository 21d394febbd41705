/**
 * Upstream behaviour with a test server of our own: tools that appear at run time, a server
 * reached over Streamable HTTP, and a server that cannot start.
 */
import assert from "node:assert/strict";
import { delay, ROOT, startHttpFixture, startServer } from "./_helpers.ts";

Deno.test("upstream servers: list_changed, Streamable HTTP, and a broken server", async (t) => {
  await using http = await startHttpFixture();
  await using server = await startServer({
    args: ["--config", `${ROOT}tests/fixtures/dynamic_servers.json`],
    env: { DYNAMIC_HTTP_URL: http.url },
  });

  await t.step("a server that cannot start is reported; the others work", async () => {
    const r = await server.execute({
      code:
        "from mcp_tools import dynamic, remote\n[dynamic.greet(name='a'), remote.greet(name='b')]",
    });
    assert.equal(r.success, true, r.text);
    assert.deepEqual(r.result, ["hello a", "hello b"]);
    const tools = await server.client.listTools();
    const description = (tools.tools as { name: string; description?: string }[])
      .find((tool) => tool.name === "execute_code")!.description!;
    assert.match(description, /broken: unavailable: /);
    const broken = await server.execute({
      code: "import _codemode\n_codemode.call_tool('broken', 'anything', {})",
    });
    assert.equal(broken.success, false);
    assert.match(broken.diagnostics!.message, /broken.*not connected/);
  });

  await t.step("a tool added upstream at run time becomes callable (list_changed)", async () => {
    const add = await server.execute({
      code: "from mcp_tools import dynamic\ndynamic.add_tool(name='late-comer')",
    });
    assert.equal(add.success, true, add.text);
    let r;
    for (let i = 0; i < 50; i++) {
      r = await server.execute({ code: "from mcp_tools import dynamic\ndynamic.late_comer()" });
      if (r.success) break;
      await delay(100);
    }
    assert.equal(r?.result, "I am late-comer", r?.text);
    const docs = await server.client.callTool({
      name: "get_tool_docs",
      arguments: { names: ["dynamic.late_comer"] },
    });
    assert.match(
      (docs.content as { text: string }[])[0]!.text,
      /def late_comer\(\) -> str:[\s\S]*observed in \d+ calls?/,
    );
  });
});
