import assert from "node:assert/strict";
import { createRedactor, REDACTED } from "../src/policy/redaction.ts";
import { auditLine, type AuditRecord, auditRecord } from "../src/execution/audit_log.ts";
import { refusedResult } from "../src/execution/result_mapping.ts";
import { dynamicServer, ROOT, startServer, writeConfig } from "./_helpers.ts";

Deno.test("createRedactor() replaces secrets in text and in JSON values", () => {
  const r = createRedactor(["hunter22", "abc", "sk-long-secret-value"]);
  assert.equal(
    r.text("pw=hunter22 and sk-long-secret-value; abc stays"),
    `pw=${REDACTED} and ${REDACTED}; abc stays`,
  );
  assert.deepEqual(r.json({ a: ["x hunter22"], hunter22: 1, n: 5 }), {
    a: [`x ${REDACTED}`],
    [REDACTED]: 1,
    n: 5,
  });
  assert.equal(createRedactor([]).text("unchanged"), "unchanged");
});

Deno.test("every execution writes one audit line, never to stdout", async () => {
  const dir = await Deno.makeTempDir();
  const auditFile = `${dir}/logs/audit.jsonl`;
  const config = await writeConfig(dir, {
    settings: { pool_size: 1, audit_log: "logs/audit.jsonl", skills_dir: "skills" },
  });
  {
    await using server = await startServer({ args: ["--config", config] });
    await server.execute({ code: "print('fine')" });
    await server.execute({ code: "while True:\n    pass", timeout_s: 1 });
    await server.execute({ code: "1/0" });
    // A script cannot make a failure look like success, nor a limit, nor flood the log.
    await server.execute({ code: "raise type('ok', (Exception,), {})('failed')" });
    await server.execute({ code: "raise type('TIMEOUT', (Exception,), {})('failed')" });
    await server.execute({ code: "raise type('A' * 4_000_000, (Exception,), {})('x')" });
    // The host checking a skill's code in a sandbox: a line, marked as the host's own.
    const saved = await server.client.callTool({
      name: "save_skill",
      arguments: {
        name: "twice",
        description: "Doubles.",
        code: "def twice(x):\n    return 2 * x",
      },
    });
    assert.equal(saved.isError ?? false, false, JSON.stringify(saved));
  }
  const records = (await Deno.readTextFile(auditFile)).trim().split("\n").map((l) =>
    JSON.parse(l) as AuditRecord
  );
  assert.deepEqual(records.map((r) => [r.outcome, r.script_error ?? null, r.limit_hit]), [
    ["ok", null, null],
    ["TIMEOUT", null, "TIMEOUT"],
    ["error", "ZeroDivisionError", null],
    ["error", "ok", null],
    ["error", "ScriptError", null],
    ["error", "Error", null],
    ["ok", null, null],
  ]);
  assert.deepEqual(records.map((r) => r.purpose ?? null), [...Array(6).fill(null), "analysis"]);
  assert.ok(JSON.stringify(records).length < 10_000, "the script's text stays out of the log");
  assert.equal(records[0]!.profile, "default");
  assert.equal(records[0]!.code_chars, "print('fine')".length);
  assert.match(records[0]!.code_sha256, /^[0-9a-f]{64}$/);
  assert.notEqual(records[0]!.execution_id, records[1]!.execution_id);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a result nested thousands of levels deep still gets its audit line and a small reply", async () => {
  // An attacker's corpus: with a secret configured, scrubbing walked the result level by level
  // and overflowed the stack after the tool call had run: no audit line, no tool_calls. Without
  // one, the indented text of 6 KB of result was 18 MB, past what an SDK client reads.
  const dir = await Deno.makeTempDir();
  const config = await writeConfig(dir, {
    servers: { dynamic: dynamicServer({ UNUSED_KEY: "${DEEP_TEST_SECRET}" }) },
    settings: { pool_size: 1, audit_log: "audit.jsonl", permissions_dir: `${ROOT}permissions` },
  });
  {
    await using server = await startServer({
      args: ["--config", config],
      env: { DEEP_TEST_SECRET: "deep-secret-0123456789" },
    });
    const r = await server.execute({
      code: [
        "from mcp_tools import dynamic",
        "dynamic.greet(name='deep')",
        "import sys",
        "sys.setrecursionlimit(20000)",
        "x = []",
        "for i in range(3500):",
        "    x = [x]",
        "x",
      ].join("\n"),
    });
    assert.equal(r.success, true, r.text.slice(0, 500));
    assert.equal(r.tool_calls.count, 1);
    assert.match(
      String(r.result),
      /^\[\[\[.*result given as its JSON text: nested deeper than 100 levels\]$/s,
    );
    assert.ok(r.text.length < 20_000, `the text is ${r.text.length} characters`);
  }
  const records = (await Deno.readTextFile(`${dir}/audit.jsonl`)).trim().split("\n").map((l) =>
    JSON.parse(l) as AuditRecord
  );
  assert.equal(records.length, 1);
  assert.equal(records[0]!.outcome, "ok");
  assert.deepEqual(records[0]!.tool_calls.map((c) => c.tool), ["greet"]);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("an audit line carries each call's approval, when a person was asked", async () => {
  const result = refusedResult({ profile: "p", outcome: "TIMEOUT", message: "m" });
  result.tool_calls = {
    count: 2,
    calls: [
      { server: "s", tool: "asked", outcome: "denied", duration_ms: 0, approval: "declined" },
      { server: "s", tool: "free", outcome: "ok", duration_ms: 3, error: "not logged" },
    ],
  };
  const record = await auditRecord("id", "print(1)", result);
  assert.deepEqual(record.tool_calls, [
    { server: "s", tool: "asked", outcome: "denied", duration_ms: 0, approval: "declined" },
    { server: "s", tool: "free", outcome: "ok", duration_ms: 3 },
  ]);
});

Deno.test("an audit line stays one line for every reader, whatever names a script sends", async () => {
  const result = refusedResult({ profile: "p", outcome: "TIMEOUT", message: "m" });
  const tool = 'x\u2028{"forged": 1}\u2029\u0085\r\n\u000b\u001c';
  result.tool_calls = {
    count: 1,
    calls: [{ server: "s", tool, outcome: "denied", duration_ms: 0 }],
  };
  const line = auditLine(await auditRecord("id", "print(1)", result));
  // Python's str.splitlines() breaks at each of these.
  const breaks = ["\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\u0085", "\u2028", "\u2029"];
  assert.ok(!breaks.some((b) => line.slice(0, -1).includes(b)), line);
  assert.equal(JSON.parse(line).tool_calls[0].tool, tool);
});
