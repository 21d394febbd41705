import assert from "node:assert/strict";
import { createRedactor, REDACTED } from "../src/policy/redaction.ts";
import { type AuditRecord, auditRecord } from "../src/execution/audit_log.ts";
import { refusedResult } from "../src/execution/result_mapping.ts";
import { startServer, writeConfig } from "./_helpers.ts";

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
    settings: { pool_size: 1, audit_log: "logs/audit.jsonl" },
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
  ]);
  assert.ok(JSON.stringify(records).length < 10_000, "the script's text stays out of the log");
  assert.equal(records[0]!.profile, "default");
  assert.equal(records[0]!.code_chars, "print('fine')".length);
  assert.match(records[0]!.code_sha256, /^[0-9a-f]{64}$/);
  assert.notEqual(records[0]!.execution_id, records[1]!.execution_id);
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
