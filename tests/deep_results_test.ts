/**
 * Values nested far deeper than any honest result: the host bounds what it does with them
 * (walking, scrubbing, indenting) instead of overflowing its stack or its client's buffer.
 */
import assert from "node:assert/strict";
import { capResult, depthOver, MAX_RESULT_DEPTH } from "../src/execution/result_mapping.ts";
import { type ExecutionResult, formatResultText } from "../src/execution/execution_result.ts";
import { createRedactor, REDACTED } from "../src/policy/redaction.ts";

/** `leaf` inside `depth` one-item lists. */
function nested(depth: number, leaf: unknown): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

Deno.test("depthOver() counts levels of arrays and objects, without recursion", () => {
  assert.equal(depthOver(nested(3, 1), 3), false);
  assert.equal(depthOver(nested(4, 1), 3), true);
  assert.equal(depthOver({ a: { b: [] } }, 3), false);
  assert.equal(depthOver({ a: { b: [{}] } }, 3), true);
  assert.equal(depthOver("text", 0), false);
  assert.equal(depthOver(nested(200_000, 1), MAX_RESULT_DEPTH), true);
});

Deno.test("capResult() gives a result nested too deep as its JSON text", () => {
  assert.deepEqual(capResult(nested(MAX_RESULT_DEPTH, 1), 65_536), {
    value: nested(MAX_RESULT_DEPTH, 1),
    cut: false,
  });
  const deep = capResult(nested(3_500, 1), 65_536);
  assert.equal(deep.cut, false, "given whole, as text");
  assert.match(
    deep.value as string,
    /^\[{3500}1\]{3500} \[result given as its JSON text: nested deeper/,
  );
  const deepAndLong = capResult(nested(40_000, 1), 65_536);
  assert.equal(deepAndLong.cut, true);
  assert.match(
    deepAndLong.value as string,
    /\[result truncated: nested deeper than 100 levels; 80001 chars/,
  );
});

Deno.test("scrubbing a value nested thousands deep finds its secret and does not overflow", () => {
  const redact = createRedactor(["deep-secret-0123456789"]);
  const scrubbed = redact.json(nested(10_000, "key deep-secret-0123456789"));
  assert.ok(!JSON.stringify(scrubbed).includes("deep-secret"));
  assert.ok(JSON.stringify(scrubbed).includes(REDACTED));
});

Deno.test("the text of a deeply nested result stays near its size", () => {
  // 90 levels of 50 numbers each: 14 KB of JSON, which indented would be over 400 KB.
  let value: unknown = 0;
  for (let i = 0; i < 90; i++) value = [Array.from({ length: 50 }, (_, n) => n), value];
  const result: ExecutionResult = {
    success: true,
    stdout: "",
    stderr: "",
    result: value,
    duration_ms: 1,
    profile: "default",
    tool_calls: { count: 0, calls: [] },
    protocol_violations: 0,
    outputs: [],
    diagnostics: null,
  };
  const compact = JSON.stringify(value).length;
  assert.ok(JSON.stringify(value, null, 2).length > 400_000);
  assert.ok(formatResultText(result).length < compact + 1000);
  // A small, shallow result is still shown indented.
  assert.match(formatResultText({ ...result, result: { answer: [1, 2] } }), /\{\n {2}"answer"/);
});
