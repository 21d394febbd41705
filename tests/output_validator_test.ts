/**
 * Upstream results are checked against their tools' output schemas without running the
 * upstream's regular expressions on the host's thread.
 */
import assert from "node:assert/strict";
import { outputValidator, withoutCostlyKeywords } from "../src/upstream/output_validator.ts";

Deno.test("an output schema's pattern is not run, its other rules still are", () => {
  // An attacker's corpus: this pattern on 27 a's and a "!" held the host for 17 s; 20 here.
  const validate = outputValidator().getValidator({
    type: "object",
    properties: { v: { type: "string", pattern: "^(a|a)*$" } },
    patternProperties: { "^(b|b)*$": { type: "string" } },
    required: ["v"],
  });
  assert.equal(validate({ v: "a".repeat(20) + "!" }).valid, true);
  assert.equal(validate({ v: 1 }).valid, false, "a number is still not a string");
  assert.equal(validate({}).valid, false, "a required key is still required");
  assert.deepEqual(withoutCostlyKeywords({ allOf: [{ pattern: "x", type: "string" }] }), {
    allOf: [{ type: "string" }],
  });
});

Deno.test("an output schema's uniqueItems is not checked: pairs of items are not compared", () => {
  // Attacker 39: 60,000 one-item arrays under `uniqueItems` held the host for 50 s.
  const validate = outputValidator().getValidator({
    type: "object",
    properties: { v: { type: "array", uniqueItems: true, items: { type: "array" } } },
  });
  const items = Array.from({ length: 20_000 }, (_, i) => [i]);
  assert.equal(validate({ v: items }).valid, true);
  assert.equal(validate({ v: [[1], [1]] }).valid, true, "duplicates are not looked for");
  assert.equal(validate({ v: [1] }).valid, false, "items are still checked for their type");
});
