import assert from "node:assert/strict";
import { BoundedCache } from "../src/_util/bounded_cache.ts";

Deno.test("BoundedCache keeps within its size, dropping the least recently used first", () => {
  const cache = new BoundedCache<string, string>(10);
  cache.set("a", "aaaa", 4);
  cache.set("b", "bbbb", 4);
  assert.equal(cache.get("a"), "aaaa"); // a is now the most recently used
  cache.set("c", "cccc", 4); // 12 > 10: b goes
  assert.equal(cache.get("b"), undefined);
  assert.equal(cache.get("a"), "aaaa");
  assert.equal(cache.get("c"), "cccc");
  assert.equal(cache.size, 8);
  cache.set("a", "a", 1); // replacing counts the new size only
  assert.equal(cache.size, 5);
  cache.set("huge", "x".repeat(11), 11); // larger than the whole cache: not kept, nothing lost
  assert.equal(cache.get("huge"), undefined);
  assert.equal(cache.size, 5);
});
