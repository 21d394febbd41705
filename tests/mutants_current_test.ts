/**
 * The mutations `deno task mutants` applies stay current: each one's text occurs exactly once in
 * its file, and the tests it names exist. A change that rewrites a guarded line otherwise leaves
 * its mutation stale, and the line unguarded, until someone runs the (slow) mutants again.
 */
import assert from "node:assert/strict";
import { MUTATIONS, occurrences } from "./mutants.ts";

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
