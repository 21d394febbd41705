/**
 * The mutations `deno task mutants` applies stay current: each one's text occurs exactly once in
 * its file, and the tests it names exist. A change that rewrites a guarded line otherwise leaves
 * its mutation stale, and the line unguarded, until someone runs the (slow) mutants again.
 */
import assert from "node:assert/strict";
import { MUTATIONS, occurrences, shardOf, sliceBounds } from "./mutants.ts";

const ROOT = new URL("..", import.meta.url).pathname;

Deno.test("every mutation still finds its text once, and names tests that exist", async () => {
  const stale: string[] = [];
  for (const mutation of MUTATIONS) {
    const count = await occurrences(mutation, ROOT);
    if (count !== 1) {
      stale.push(`${mutation.name}: its text occurs ${count} times in ${mutation.file}`);
    }
    for (const test of mutation.tests) {
      const exists = await Deno.stat(ROOT + test).then(() => true, () => false);
      if (!exists) stale.push(`${mutation.name}: no test file ${test}`);
    }
    if (mutation.from === mutation.to) stale.push(`${mutation.name}: changes nothing`);
  }
  assert.deepEqual(stale, []);
});

Deno.test("mutation names are distinct, so --only can pick each one", () => {
  const names = MUTATIONS.map((m) => m.name);
  assert.deepEqual(names.filter((n, i) => names.indexOf(n) !== i), []);
});

Deno.test("--shard K/N slices cover every mutation once", () => {
  assert.deepEqual(shardOf("2/4"), { k: 2, n: 4 });
  for (const bad of ["0/4", "5/4", "1/0", "a/b", "1/2/3", " 1/2"]) assert.equal(shardOf(bad), null);
  for (const [length, n] of [[593, 4], [3, 5], [10, 1]] as const) {
    const covered = Array.from({ length: n }, (_, i) => sliceBounds(length, { k: i + 1, n }));
    assert.equal(covered[0]![0], 0);
    assert.equal(covered.at(-1)![1], length);
    for (let i = 1; i < n; i++) assert.equal(covered[i]![0], covered[i - 1]![1]);
  }
});
