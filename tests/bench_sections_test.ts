/** BENCHMARKS.md after a partial bench run: fresh sections replace theirs and say when. */
import assert from "node:assert/strict";
import { mergeSections } from "../bench/main.ts";

Deno.test("a partial bench run replaces its own sections, dated, and keeps the others", () => {
  const old = [
    "# Benchmarks",
    "",
    "Written on 2026-11-22.",
    "",
    "## Sandbox execution (issue 2)",
    "",
    "| old sandbox |",
    "",
    "## Soak: 1000 runs",
    "",
    "| old soak |",
  ].join("\n");
  const fresh = [
    "# Benchmarks",
    "",
    "Written on 2026-11-24.",
    "",
    "## Sandbox execution (issue 2)",
    "",
    "| new sandbox |",
  ].join("\n");
  const merged = mergeSections(old, fresh, "2026-11-24 (`--only sandbox`)");
  assert.equal(
    merged,
    [
      "# Benchmarks",
      "",
      "Written on 2026-11-22.",
      "",
      "## Sandbox execution (issue 2)",
      "",
      "_Measured again on 2026-11-24 (`--only sandbox`); the header's date is the last full run's._",
      "",
      "| new sandbox |",
      "",
      "## Soak: 1000 runs",
      "",
      "| old soak |",
      "",
    ].join("\n"),
  );
});
