/**
 * Every sandbox is sent every server's tool module, so what an upstream lists is bounded: a
 * server whose module is too large has its tools withheld, one whose list is too large does not
 * connect, and the others, and scripts that do not use them, go on. An upstream's 60 MB of tool
 * descriptions used to put every sandbox past its memory limit at boot (attacker round 16).
 */
import assert from "node:assert/strict";
import { catalogServerEntry, ROOT, startServer, writeConfig } from "./_helpers.ts";

Deno.test("an upstream's too-large tool list fails that server only", async (t) => {
  const dir = Deno.realPathSync(await Deno.makeTempDir());
  const fixture = async (name: string, descriptionChars: number) => {
    const path = `${dir}/${name}.json`;
    await Deno.writeTextFile(
      path,
      JSON.stringify({
        server: name,
        tools: [{
          name: "describe",
          description: "word ".repeat(descriptionChars / 5),
          inputSchema: { type: "object", properties: {} },
        }],
      }),
    );
    return catalogServerEntry(path);
  };
  // A tool name longer than a call may give (MAX_CALL_NAME_LENGTH) beside a callable one.
  const longName = `t${"x".repeat(250)}`;
  await Deno.writeTextFile(
    `${dir}/named.json`,
    JSON.stringify({
      server: "named",
      tools: [longName, "short"].map((name) => ({
        name,
        description: "A tool.",
        inputSchema: { type: "object", properties: {} },
      })),
    }),
  );
  const config = await writeConfig(dir, {
    servers: {
      named: catalogServerEntry(`${dir}/named.json`),
      small: await fixture("small", 1000),
      wide: await fixture("wide", 3 * 1024 * 1024),
      endless: await fixture("endless", 9 * 1024 * 1024),
    },
    settings: { pool_size: 1, permissions_dir: `${ROOT}tests/fixtures/permissions` },
  });
  await using server = await startServer({ args: ["--config", config] });

  await t.step("the index says why each is missing", async () => {
    const { tools } = await server.client.listTools();
    const description = (tools as { name: string; description?: string }[])
      .find((tool) => tool.name === "execute_code")!.description!;
    assert.match(description, /wide: unavailable: its tools are withheld: their Python module/);
    assert.match(description, /endless: unavailable: .*more than 8 MiB of JSON/);
  });

  await t.step("scripts run, the small server answers, the others raise why", async () => {
    const r = await server.execute({
      code: [
        "from mcp_tools import small, wide, endless",
        "said = [small.describe()]",
        "for module in (wide, endless):",
        "    try:",
        "        module.describe()",
        "    except Exception as e:",
        "        said.append(f'{type(e).__name__}: {e}')",
        "said",
      ].join("\n"),
    });
    assert.equal(r.success, true, r.text);
    const [small, wide, endless] = r.result as string[];
    assert.equal(small, "small.describe called");
    assert.match(wide!, /^UpstreamUnavailable: .*its tools are withheld/);
    assert.match(endless!, /^UpstreamUnavailable: .*more than 8 MiB/);
  });

  await t.step("a tool named past what a call may give is left out, and logged", async () => {
    const r = await server.execute({
      code:
        "from mcp_tools import named\n[named.short(), [n for n in dir(named) if n.startswith('t')]]",
    });
    assert.equal(r.success, true, r.text);
    assert.deepEqual(r.result, ["named.short called", []]);
    assert.match(server.stderr(), /upstream tools left out: their names are too long to call/);
  });
  await Deno.remove(dir, { recursive: true });
});
