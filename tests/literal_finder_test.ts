import assert from "node:assert/strict";
import { createLiteralFinder } from "../src/policy/literal_finder.ts";

/** The answer without an automaton: each literal looked for on its own. */
function naive(literals: string[], text: string): number[] {
  const lower = text.replace(/[A-Z]/g, (c) => c.toLowerCase());
  return literals.flatMap((l, i) => lower.includes(l.toLowerCase()) ? [i] : []);
}

/** A small deterministic generator, so a failure is repeatable. */
function random(seed: number): () => number {
  return () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
}

Deno.test("createLiteralFinder() finds exactly the literals a text holds, in either case", () => {
  const next = random(7);
  // A small alphabet makes overlaps, prefixes and suffixes of one another common.
  const pick = (chars: string, length: number) =>
    Array.from({ length }, () => chars[Math.floor(next() * chars.length)]).join("");
  for (let round = 0; round < 400; round++) {
    const literals = Array.from(
      { length: 1 + Math.floor(next() * 8) },
      () => pick("abAB%", 1 + Math.floor(next() * 5)),
    );
    const text = pick("abABc%é\u212a", Math.floor(next() * 40));
    const found = [...createLiteralFinder(literals).found(text)].sort((a, b) => a - b);
    assert.deepEqual(found, naive(literals, text), `${JSON.stringify(literals)} in ${text}`);
  }
});

Deno.test("createLiteralFinder() reports a literal that ends inside a longer one", () => {
  const finder = createLiteralFinder(["abcde", "bcd", "cdx"]);
  assert.deepEqual([...finder.found("xxabcdexx")].sort(), [0, 1]);
  assert.deepEqual([...finder.found("abcdx")], [1, 2]);
  assert.deepEqual([...finder.found("ABCDE")].sort(), [0, 1]);
  assert.deepEqual([...finder.found("a\u00e9bcde")], [1]);
});

Deno.test("createLiteralFinder() refuses a literal it could not find", () => {
  assert.throws(() => createLiteralFinder([""]), /non-empty ASCII/);
  assert.throws(() => createLiteralFinder(["wörd"]), /non-empty ASCII/);
});
