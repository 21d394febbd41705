/**
 * Generated files run in production (the sandbox's bundle, the embedded Python): a stale one
 * would run old code. `deno task generate` rewrites them from their sources.
 */
import assert from "node:assert/strict";
import { absolutePath, GENERATED_FILES } from "../src/_build/generate.ts";

Deno.test("every generated file matches its sources (run `deno task generate`)", async (t) => {
  for (const file of GENERATED_FILES) {
    await t.step(file.path, async () => {
      const committed = await Deno.readTextFile(absolutePath(file));
      assert.ok(committed === await file.build(), `${file.path} is stale: deno task generate`);
    });
  }
});
