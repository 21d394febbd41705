/**
 * One table names every outcome: the types, the audit log's limits and the Python exceptions of
 * mcp_tools all come from it, and a misspelled outcome is a type error, not a new outcome.
 */
import assert from "node:assert/strict";
import {
  type HostOutcome,
  LIMIT_OUTCOMES,
  OUTCOMES,
  PYTHON_EXCEPTIONS,
  scriptErrorType,
  toolErrorsModulePy,
} from "../src/execution/outcomes.ts";
import { auditRecord } from "../src/execution/audit_log.ts";
import { refusedResult, toDiagnostics } from "../src/execution/result_mapping.ts";
import type { StopReason } from "../src/sandbox/launcher.ts";
import { SNAPSHOT_MODULES } from "../src/sandbox/snapshot_modules.ts";

Deno.test("a misspelled outcome does not type-check", () => {
  // @ts-expect-error: not an outcome
  const misspelled: HostOutcome = "MEMORY_LIMT";
  // @ts-expect-error: not an outcome, where a refusal is built
  refusedResult({ profile: "p", outcome: "TIMEOUTT", message: "" });
  // @ts-expect-error: a tool call's outcome never ends an execution
  const toolOutcome: StopReason = "TOOL_TIMEOUT";
  assert.ok(misspelled && toolOutcome);
});

Deno.test("the audit log's limit names are the table's limits", async (t) => {
  for (const [name, entry] of Object.entries(OUTCOMES)) {
    if (entry.of !== "execution") continue;
    await t.step(name, async () => {
      const result = refusedResult({ profile: "p", outcome: name as HostOutcome, message: "m" });
      const record = await auditRecord("id", "print(1)", result);
      assert.equal(record.outcome, name);
      assert.equal(record.limit_hit, entry.limit ? name : null);
      assert.equal(LIMIT_OUTCOMES.has(name as HostOutcome), entry.limit);
    });
  }
});

Deno.test("the mcp_tools exception classes are generated from the table", () => {
  const python = toolErrorsModulePy();
  assert.deepEqual(
    new Set(PYTHON_EXCEPTIONS),
    new Set(["ToolError", "ToolDenied", "ToolTimeout", "UpstreamUnavailable"]),
  );
  assert.match(python, /^class ToolError\(Exception\):$/m);
  for (const [, entry] of Object.entries(OUTCOMES)) {
    if (!("raises" in entry)) continue;
    const { kind, python: cls } = entry.raises;
    if (cls !== "ToolError") {
      assert.match(python, new RegExp(`^class ${cls}\\(ToolError\\):$`, "m"));
    }
    assert.match(python, new RegExp(`^    "${kind}": ${cls},$`, "m"));
  }
  // Baked into the snapshot ahead of the prelude, which imports it.
  assert.deepEqual(SNAPSHOT_MODULES.map(([name]) => name), ["_codemode_errors", "_codemode"]);
  assert.equal(SNAPSHOT_MODULES[0]![1], python);
});

Deno.test("a script cannot claim a host outcome as its own exception's name", async (t) => {
  for (const name of Object.keys(OUTCOMES)) {
    await t.step(name, () => {
      const expected = OUTCOMES[name as keyof typeof OUTCOMES].of === "execution"
        ? "ScriptError"
        : name;
      assert.equal(scriptErrorType(name), expected);
      const diagnostics = toDiagnostics({
        raised: { error_type: name, message: "forged", traceback: "", lineno: null },
      }, 1000);
      assert.equal(diagnostics.reported_by, "script");
      assert.equal(diagnostics.error_type, expected);
    });
  }
});
