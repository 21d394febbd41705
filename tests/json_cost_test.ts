/**
 * JSON that costs the host's thread far more per byte than text is refused before it is parsed
 * (src/rpc/json_cost.ts), and JSON of a common shape is not: attacker 64's corpus, in process.
 */
import assert from "node:assert/strict";
import {
  JSON_COST_LIMITS,
  jsonCostProblem,
  SCANNED_FROM_CHARS,
  WIDE_OBJECT_KEYS,
} from "../src/rpc/json_cost.ts";

const KEYS = /more than 50,000 object keys that are costly to read/;
const DEEP = /nested deeper than 1,000 levels/;

function objectOf(keys: number, name = (i: number) => `k${i}`): Record<string, number> {
  const o: Record<string, number> = {};
  for (let i = 0; i < keys; i++) o[name(i)] = i;
  return o;
}

Deno.test("attack: one object of 600,000 keys is refused unparsed", () => {
  assert.match(jsonCostProblem(JSON.stringify(objectOf(600_000))) ?? "", KEYS);
});

Deno.test("attack: many small objects of keys each their own are refused (a hidden class per key)", () => {
  const rows = Array.from({ length: 6000 }, (_, j) => objectOf(100, (i) => `k${j}_${i}`));
  assert.match(jsonCostProblem(JSON.stringify(rows)) ?? "", KEYS);
});

Deno.test("attack: objects of the same few keys, each in another order, are refused (a hidden class per order)", () => {
  // Attacker 66: 15,000 objects of the same 92 keys, shuffled, took JSON.parse 0.9 s.
  const names = Array.from({ length: 92 }, (_, i) => `k${i}`);
  let seed = 1;
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  const rows = Array.from({ length: 15_000 }, () => {
    const order = [...names].sort(() => random() - 0.5);
    return Object.fromEntries(order.map((k) => [k, 0]));
  });
  assert.match(jsonCostProblem(JSON.stringify(rows)) ?? "", KEYS);
  // The same rows in one order are one shape: read.
  const fixed = Array.from({ length: 15_000 }, () => Object.fromEntries(names.map((k) => [k, 0])));
  assert.equal(jsonCostProblem(JSON.stringify(fixed)), null);
});

Deno.test("attack: wide objects whose keys repeat are refused (V8 keeps each as a dictionary)", () => {
  const rows = Array.from({ length: 60 }, () => objectOf(WIDE_OBJECT_KEYS + 1000));
  assert.match(jsonCostProblem(JSON.stringify(rows)) ?? "", KEYS);
  // The same keys in objects of up to WIDE_OBJECT_KEYS are one shape: read.
  const narrow = Array.from({ length: 120 }, () => objectOf(WIDE_OBJECT_KEYS));
  assert.equal(jsonCostProblem(JSON.stringify(narrow)), null);
});

Deno.test("attack: 7,000 rows of 140 keys are refused (V8 keeps each as a dictionary); of 127, read", () => {
  // Attacker 67: counted from 1,000 keys, 7.8 MB of such rows held the host 0.5 to 1.5 s.
  const rows = (keys: number) => JSON.stringify(Array.from({ length: 7000 }, () => objectOf(keys)));
  assert.match(jsonCostProblem(rows(140)) ?? "", KEYS);
  assert.equal(jsonCostProblem(rows(127)), null);
});

Deno.test("attack: nesting past the limit is refused, in arrays and objects", () => {
  const n = SCANNED_FROM_CHARS;
  assert.match(jsonCostProblem("[".repeat(n) + "]".repeat(n)) ?? "", DEEP);
  assert.match(jsonCostProblem('{"a":'.repeat(n) + "1" + "}".repeat(n)) ?? "", DEEP);
  const within = JSON_COST_LIMITS.maxDepth;
  const padded = (depth: number) => "[".repeat(depth) + `"${"x".repeat(n)}"` + "]".repeat(depth);
  assert.equal(jsonCostProblem(padded(within)), null);
  assert.match(jsonCostProblem(padded(within + 1)) ?? "", DEEP);
});

Deno.test("attack: a million empty objects or arrays are refused; rows of a table pass", () => {
  const many = /more than 250,000 objects and arrays/;
  assert.match(
    jsonCostProblem(JSON.stringify(Array.from({ length: 1_000_000 }, () => ({})))) ?? "",
    many,
  );
  assert.match(
    jsonCostProblem(JSON.stringify(Array.from({ length: 1_000_000 }, () => []))) ?? "",
    many,
  );
  const rows = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => ({ i })));
  assert.equal(jsonCostProblem(rows(JSON_COST_LIMITS.maxContainers - 1)), null);
  assert.match(jsonCostProblem(rows(JSON_COST_LIMITS.maxContainers)) ?? "", many);
});

Deno.test("attack: an array of millions of numbers is refused; one of 2,000,000 values is read", () => {
  // Attacker 66: 3,900,000 zeros (7.8 MB, no key, no container but one) held the host 0.5 s.
  const zeros = (n: number) => `[${"0,".repeat(n - 1)}0]`;
  assert.match(jsonCostProblem(zeros(3_900_000)) ?? "", /more than 2,000,000 values/);
  assert.equal(jsonCostProblem(zeros(JSON_COST_LIMITS.maxValues)), null);
  assert.match(jsonCostProblem(zeros(JSON_COST_LIMITS.maxValues + 1)) ?? "", /values/);
  // Commas in strings are text.
  assert.equal(jsonCostProblem(JSON.stringify(["a,".repeat(3_000_000)])), null);
});

Deno.test("the limit on costly keys is exact: 50,000 distinct keys pass, one more does not", () => {
  const at = (keys: number) => JSON.stringify({ rows: [objectOf(keys - 1)] });
  assert.equal(jsonCostProblem(at(JSON_COST_LIMITS.maxCostlyKeys)), null);
  assert.match(jsonCostProblem(at(JSON_COST_LIMITS.maxCostlyKeys + 1)) ?? "", KEYS);
});

Deno.test("JSON of common shapes is read: rows of one shape, long text, a dict of 30,000 words", () => {
  const rows = { rows: Array.from({ length: 120_000 }, (_, i) => ({ id: i, name: "x", a: 0 })) };
  assert.equal(jsonCostProblem(JSON.stringify(rows)), null);
  assert.equal(jsonCostProblem(JSON.stringify({ text: "word ".repeat(2_000_000) })), null);
  assert.equal(jsonCostProblem(JSON.stringify(objectOf(30_000, (i) => `word${i}`))), null);
});

Deno.test("brackets, colons and escaped quotes inside strings are text, not structure", () => {
  const tricky = '\\"[{\\\\":'.repeat(SCANNED_FROM_CHARS);
  assert.equal(jsonCostProblem(JSON.stringify({ a: tricky, b: [tricky] })), null);
  // Keys that are strings of those characters are still keys.
  const keys = objectOf(60_000, (i) => `\\"[${i}]{\\\\`);
  assert.match(jsonCostProblem(JSON.stringify(keys)) ?? "", KEYS);
});

Deno.test("a text shorter than the scan's threshold is not scanned, unless asked", () => {
  const deep = "[".repeat(2000) + "]".repeat(2000);
  assert.ok(deep.length < SCANNED_FROM_CHARS);
  assert.equal(jsonCostProblem(deep), null);
  assert.match(jsonCostProblem(deep, JSON_COST_LIMITS, 0) ?? "", DEEP);
});
