/**
 * A tool result nested thousands of levels deep (a JSON text, or structured content) cannot
 * end the sandbox: Python's JSON reader recursed once per level and overflowed the interpreter's
 * stack past any `except`, which lost a session's state (attacker round 16).
 */
import assert from "node:assert/strict";
import { catalogServerEntry, ROOT, startServer, writeConfig } from "./_helpers.ts";

Deno.test("deeply nested tool results are caught by the script, and the session lives on", async () => {
  const dir = Deno.realPathSync(await Deno.makeTempDir());
  const deep = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
  const empty = { type: "object", properties: {} };
  // Written as text: the nesting is beyond what a recursive JSON writer takes.
  await Deno.writeTextFile(
    `${dir}/deep.json`,
    `{"server": "deep", "tools": [${
      ["text", "structured", "shallow", "tricky", "quotes"].map((name) =>
        JSON.stringify({ name, inputSchema: empty })
      ).join(",")
    }], "results": {
      "text": {"content": [{"type": "text", "text": ${JSON.stringify(deep(20000))}}]},
      "structured": {"content": [], "structuredContent": {"v": ${deep(8000)}}},
      "shallow": {"content": [{"type": "text", "text": "[[1], {\\"a\\": [2]}]"}]},
      "quotes": {"content": [{"type": "text", "text": ${
      // An open string of escaped quotes: quadratic for a pattern that tries each quote anew.
      JSON.stringify("[".repeat(501) + '"' + '\\"'.repeat(500_000))}}]},
      "tricky": {"content": [{"type": "text", "text": ${
      JSON.stringify(JSON.stringify({ s: "[".repeat(5000), n: [[1]] }))
    }}]}
    }}`,
  );
  const config = await writeConfig(dir, {
    servers: {
      deep: catalogServerEntry(`${dir}/deep.json`),
    },
    settings: { pool_size: 1, permissions_dir: `${ROOT}tests/fixtures/permissions` },
  });
  await using server = await startServer({ args: ["--config", config] });
  const opened = await server.execute({ code: "kept = 'state'", session_id: "new" } as never);
  assert.equal(opened.success, true, opened.text);
  const session = (opened as unknown as { session_id: string }).session_id;
  const r = await server.execute({
    session_id: session,
    code: [
      "from mcp_tools import deep",
      "said = []",
      "text = deep.text()",
      "said.append(type(text).__name__ + str(len(text)))",
      "try:",
      "    deep.structured()",
      "except Exception as e:",
      "    said.append(f'{type(e).__name__}: {e}')",
      // Brackets inside a string do not count; a shallow text is still parsed.
      "said += [deep.tricky()['n'], deep.shallow(), len(deep.quotes())]",
      "said",
    ].join("\n"),
  } as never);
  assert.equal(r.success, true, r.text);
  const [text, structured, tricky, shallow, quotes] = r.result as unknown[];
  assert.equal(text, "str40000");
  assert.match(String(structured), /^ToolError: .*nested deeper than 500 levels/);
  assert.deepEqual(tricky, [[1]]);
  assert.deepEqual(shallow, [[1], { a: [2] }]);
  assert.equal(quotes, 501 + 1 + 1_000_000);
  const after = await server.execute({ session_id: session, code: "kept" } as never);
  assert.equal(after.result, "state", after.text);
  await Deno.remove(dir, { recursive: true });
});
