import assert from "node:assert/strict";
import { startServer } from "./_helpers.ts";

Deno.test("execute_code runs Python and returns stdout, stderr and the last expression", async () => {
  await using server = await startServer();
  const r = await server.execute({
    code: "import sys\nprint('hello')\nprint('oops', file=sys.stderr)\n{'n': 6 * 7}",
  });
  assert.equal(r.isError, false, r.text);
  assert.equal(r.success, true);
  assert.equal(r.stdout, "hello\n");
  assert.equal(r.stderr, "oops\n");
  assert.deepEqual(r.result, { n: 42 });
  assert.equal(r.diagnostics, null);
  assert.match(r.text, /hello/);
});
