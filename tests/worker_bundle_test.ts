/**
 * Sandboxes run `worker_bundle.js`, generated from worker.ts and its imports; a stale bundle
 * would run old code. `deno task bundle` regenerates it.
 */
import assert from "node:assert/strict";
import { buildWorkerBundle, BUNDLE_PATH } from "../src/sandbox/bundle_worker.ts";

Deno.test("the committed worker bundle matches its sources (run `deno task bundle`)", async () => {
  const committed = await Deno.readTextFile(BUNDLE_PATH);
  assert.ok(committed === await buildWorkerBundle(), "worker_bundle.js is stale: deno task bundle");
});
