import assert from "node:assert/strict";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { delay, isAlive } from "./_helpers.ts";
import { childPids, sandboxPids, startServer } from "./_helpers.ts";

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

Deno.test("execute_code reports errors with type, traceback and line number", async (t) => {
  await using server = await startServer();
  await t.step("a syntax error names its line", async () => {
    const r = await server.execute({ code: "x = 1\ny = (\nprint(x)" });
    assert.equal(r.isError, true);
    assert.equal(r.diagnostics?.error_type, "SyntaxError");
    assert.equal(typeof r.diagnostics?.lineno, "number");
  });
  await t.step("a runtime error has a traceback without Pyodide internals", async () => {
    const r = await server.execute({ code: "def f():\n    return 1 / 0\n\nf()" });
    assert.equal(r.diagnostics?.error_type, "ZeroDivisionError");
    assert.equal(r.diagnostics?.lineno, 2);
    assert.match(r.diagnostics!.traceback!, /File "<script>", line 4/);
    assert.doesNotMatch(r.diagnostics!.traceback!, /_pyodide|\/lib\/python/);
  });
  await t.step("a chained error's frames are the script's too; no sockets is said", async () => {
    const r = await server.execute({
      code: "import urllib.request\nurllib.request.urlopen('http://192.0.2.1/')",
    });
    assert.equal(r.diagnostics?.error_type, "URLError", r.text);
    assert.match(r.diagnostics!.traceback!, /During handling of the above exception/);
    assert.doesNotMatch(r.diagnostics!.traceback!, /\/lib\/python/);
    const hint = /Host is unreachable> \(a sandbox has no sockets: .*pyodide\.http\.pyfetch/;
    assert.match(r.diagnostics!.message, hint);
    assert.match(r.diagnostics!.traceback!, hint);
  });
  await t.step("any exception is described: empty, circular, raising in __str__", async () => {
    const cases: [string, string][] = [
      [
        "import urllib.request\ntry:\n    urllib.request.urlopen('http://192.0.2.1/')\n" +
        "except Exception:\n    raise RuntimeError()",
        "RuntimeError",
      ],
      ["try:\n    int('x')\nexcept ValueError as e:\n    raise e from e", "ValueError"],
      [
        "class E(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\nraise E()",
        "E",
      ],
      [
        "class O(OSError):\n    @property\n    def errno(self):\n        raise RuntimeError()\n" +
        "raise O()",
        "O",
      ],
      [
        "class S(SyntaxError):\n    @property\n    def filename(self):\n        raise RuntimeError()\n" +
        "raise S('x')",
        "S",
      ],
      ["class E(Exception):\n    def __str__(self):\n        raise SystemExit(3)\nraise E()", "E"],
      [
        "class K(KeyboardInterrupt):\n    def __str__(self):\n        raise K()\nraise K()",
        "K",
      ],
      [
        "class C:\n    def __eq__(self, o):\n        raise RuntimeError()\n    __hash__ = None\n" +
        "raise SystemExit(C())",
        "SystemExit",
      ],
      [
        "class M(type):\n    @property\n    def __name__(cls):\n        raise RuntimeError()\n" +
        "class E(Exception, metaclass=M):\n    pass\nraise E('x')",
        "E",
      ],
      [
        "class E(Exception):\n    @property\n    def __class__(self):\n        raise RuntimeError()\n" +
        "raise E('x')",
        "E",
      ],
      [
        "class E(Exception):\n    @property\n    def __class__(self):\n        raise SystemExit(1)\n" +
        "raise E('x')",
        "E",
      ],
    ];
    for (const [code, type] of cases) {
      const r = await server.execute({ code, timeout_s: 20 });
      assert.equal(r.diagnostics?.error_type, type, r.text);
      assert.equal(r.diagnostics?.reported_by, "script", r.text);
    }
  });
  await t.step("JavaScript's console writes into the script's output", async () => {
    const r = await server.execute({
      code: "import js\njs.console.log('hi %s', 'there', 1)\njs.console.error('bad')\n" +
        "js.console.count('c')\njs.console.time('t')\njs.console.timeEnd('t')\nprint('after')",
    });
    assert.match(r.stdout, /^hi there 1\nc: 1\nt: [\d.]+ms\nafter\n$/, r.text);
    assert.equal(r.stderr, "bad\n");
    assert.equal(r.protocol_violations, 0);
  });
  await t.step("top-level await works", async () => {
    const r = await server.execute({ code: "import asyncio\nawait asyncio.sleep(0.01)\n'done'" });
    assert.equal(r.result, "done", r.text);
  });
  await t.step(
    "an awaited blocking call and an unawaited coroutine say how to fix them",
    async () => {
      // A tool function returns its result; awaiting that fails after the call has run.
      const awaited = await server.execute({ code: "def tool():\n    return {}\nawait tool()" });
      assert.equal(awaited.diagnostics?.error_type, "TypeError");
      assert.match(
        awaited.diagnostics!.message,
        /can't be .*await.*drop the await, or await its _async twin/,
      );
      assert.match(
        awaited.diagnostics!.traceback ?? "",
        /drop the await/,
        "said where the traceback ends",
      );
      // Gathering the results of blocking calls: asyncio says only "unhashable type" (a dict)
      // or that an awaitable is required (a str).
      for (const value of ["{}", "'text'"]) {
        const gathered = await server.execute({
          code: `import asyncio\ndef tool():\n    return ${value}\n` +
            "await asyncio.gather(tool(), tool())",
        });
        assert.equal(gathered.diagnostics?.error_type, "TypeError", gathered.text);
        assert.match(
          gathered.diagnostics!.message,
          /asyncio\.gather takes awaitables.*gather the _async twins/,
        );
      }
      // A coroutine left as the result never ran: not a success that shows its repr.
      const unawaited = await server.execute({
        code: "ran = []\nasync def tool_async():\n    ran.append(1)\ntool_async()",
      });
      assert.equal(unawaited.success, false, unawaited.text);
      assert.equal(unawaited.diagnostics?.error_type, "TypeError");
      assert.match(
        unawaited.diagnostics!.message,
        /coroutine, tool_async\(\), that was never awaited.*write `await`/,
      );
      assert.doesNotMatch(unawaited.stderr, /RuntimeWarning/, "closed, so no warning");
      // An _async twin's coroutine used as its result.
      const indexed = await server.execute({
        code: "async def tool_async():\n    return {'a': 1}\ntool_async()['a']",
      });
      assert.equal(indexed.diagnostics?.error_type, "TypeError");
      assert.match(
        indexed.diagnostics!.message,
        /'coroutine' object is not subscriptable \(.*write `await` before the call/,
      );
    },
  );
  await t.step("a module Pyodide has but the call did not ask for names its package", async () => {
    const yaml = await server.execute({ code: "import yaml" });
    assert.equal(yaml.diagnostics?.error_type, "ModuleNotFoundError");
    assert.match(yaml.diagnostics!.message, /^No module named 'yaml' \(.*packages=\['pyyaml'\]/);
    const unknown = await server.execute({ code: "import no_such_module_zz" });
    assert.equal(unknown.diagnostics?.message, "No module named 'no_such_module_zz'");
  });
  await t.step(
    "an interrupt that comes as a sleep ends is raised once, where it returns",
    async () => {
      // What the host's interrupt does when it finds Python waiting, called by the script itself
      // at the moment the race leaves it: the sleep already over, nothing left to cancel.
      const r = await server.execute({
        code: [
          "import _codemode, time",
          "_codemode.interrupt_waiting_script()",
          "said = []",
          "for _ in range(2):",
          "    try:",
          "        time.sleep(0)",
          "        said.append('slept')",
          "    except KeyboardInterrupt:",
          "        said.append('interrupted')",
          "said",
        ].join("\n"),
      });
      assert.deepEqual(r.result, ["interrupted", "slept"], r.text);
    },
  );
  await t.step("a value that is not JSON comes back as its repr", async () => {
    const r = await server.execute({ code: "{1, 2}" });
    assert.equal(r.result, "{1, 2}");
  });
  await t.step("sys.exit(0) is a success, sys.exit(3) a failure", async () => {
    assert.equal((await server.execute({ code: "import sys\nsys.exit(0)" })).success, true);
    const r = await server.execute({ code: "import sys\nsys.exit(3)" });
    assert.equal(r.diagnostics?.error_type, "SystemExit");
  });
});

Deno.test("the result is the last expression exactly as Pyodide's CodeRunner gives it", async () => {
  // The sandbox compiles a script its own, faster way (compile_script in prelude.py); here both
  // run in one sandbox over scripts that end in every way, and must agree on the result, or on
  // the error and its line.
  const scripts = [
    "1 + 1",
    "1 + 1;",
    "1 + 1 ;  # a comment",
    "1 + 1  # a comment; with a semicolon",
    "x = 5\nx",
    "x = 5",
    "",
    "# only a comment",
    "  a = 2\n  a * 3",
    "s = 'a\fb'\n7 ;",
    "s = 'a\u2028b'\n7 ;",
    "s = 'a\u2028b'\n7",
    "x = 1\r2 ;\r",
    "x = 1\r\n2\r\n",
    "é = 'ü'; é  ;",
    "é = 'ü'; é",
    "(\n  1,\n  2\n)",
    "(\n  1,\n  2\n) ;",
    "(y := 7)",
    "import asyncio\nawait asyncio.sleep(0, 'slept')",
    "import asyncio\nv = await asyncio.sleep(0, 4)\nv * 2",
    "def f():\n    return 1 / 0\nf()",
    "x = 1\nundefined_name + x",
    "if True:\n    9",
    "[i for i in range(3)]",
  ];
  await using server = await startServer();
  const r = await server.execute({
    code: [
      "import _codemode, ast, json, sys, traceback",
      "from pyodide.code import CodeRunner",
      `scripts = json.loads(${JSON.stringify(JSON.stringify(scripts))})`,
      "def line_of(exc):",
      "    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == '<script>']",
      "    return frames[-1].lineno if frames else None",
      "def ours(code):",
      "    out = _codemode.run(code, 10_000)",
      "    if out['ok']:",
      "        return ['ok', out['result']]",
      "    return ['error', out['error']['error_type'], out['error']['lineno']]",
      "async def theirs(code):",
      "    try:",
      "        runner = CodeRunner(code, filename='<script>', flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)",
      "        value = await runner.compile().run_async({'__name__': '__main__'})",
      "        return ['ok', json.loads(json.dumps(value))]",
      "    except Exception as exc:",
      "        return ['error', type(exc).__name__, line_of(exc)]",
      "[[code, ours(code), await theirs(code)] for code in scripts]",
    ].join("\n"),
  });
  assert.equal(r.success, true, r.text);
  const rows = r.result as [string, unknown[], unknown[]][];
  assert.equal(rows.length, scripts.length);
  for (const [code, ours, theirs] of rows) assert.deepEqual(ours, theirs, JSON.stringify(code));
  // The cases cover both answers, and an error's line.
  const results = rows.map(([, ours]) => JSON.stringify(ours));
  assert.ok(results.includes('["ok",2]') && results.includes('["ok",null]'), results.join(" "));
  assert.ok(results.includes('["error","ZeroDivisionError",2]'), results.join(" "));
});

Deno.test("a session script that replaces textwrap.dedent or json.loads does not break its next script", async () => {
  await using server = await startServer();
  const first = await server.execute({
    code: "import json, textwrap\ntextwrap.dedent = None\njson.loads = None\n'broken'",
    session_id: "new",
  });
  assert.equal(first.result, "broken");
  const next = await server.execute({ code: "6 * 7", session_id: first.session_id });
  assert.equal(next.success, true, JSON.stringify(next));
  assert.equal(next.result, 42);
});

Deno.test("execute_code enforces the code-size and profile policy before running", async (t) => {
  await using server = await startServer();
  await t.step("too many characters", async () => {
    const r = await server.execute({ code: "#" + "x".repeat(9000) });
    assert.equal(r.diagnostics?.error_type, "POLICY_VIOLATION");
    assert.match(r.diagnostics!.message, /limit is 8000/);
  });
  await t.step("too many lines", async () => {
    const r = await server.execute({ code: "pass\n".repeat(500) });
    assert.equal(r.diagnostics?.error_type, "POLICY_VIOLATION");
    assert.match(r.diagnostics!.message, /limit is 400/);
  });
  await t.step("a timeout above the profile's maximum", async () => {
    const r = await server.execute({ code: "1", timeout_s: 10_000 });
    assert.equal(r.diagnostics?.error_type, "POLICY_VIOLATION");
  });
  await t.step("bad arguments are a clear protocol-level error, not a crash", async () => {
    const reply = await server.client.callTool({
      name: "execute_code",
      arguments: { code: 42, profile: "no-such-profile" },
    });
    assert.equal(reply.isError, true);
    const text = (reply.content as { text: string }[])[0]!.text;
    assert.match(text, /code/);
    assert.equal((await server.execute({ code: "1 + 1" })).result, 2);
  });
  await t.step("a misspelt argument is refused with the name it meant, not dropped", async () => {
    const reply = await server.client.callTool({
      name: "execute_code",
      arguments: { code: "import time; time.sleep(0.1)", timeout: 300 },
    });
    assert.equal(reply.isError, true);
    const text = (reply.content as { text: string }[])[0]!.text;
    assert.match(text, /Unknown argument "timeout" \(did you mean "timeout_s"\?\)/);
    const nested = await server.client.callTool({
      name: "execute_code",
      arguments: { code: "1", files: { "a.txt": { base64: "aGk=", mode: "0777" } } },
    });
    assert.equal(nested.isError, true, "a file's unknown field is refused too");
    assert.match((nested.content as { text: string }[])[0]!.text, /mode/);
  });
});

Deno.test("a timed-out run is killed and the next run works normally", async () => {
  await using server = await startServer();
  const stuck = await server.execute({
    code: "import time\nwhile True:\n    time.sleep(0.1)",
    timeout_s: 1,
  });
  assert.equal(stuck.diagnostics?.error_type, "TIMEOUT");
  const next = await server.execute({ code: "'alive'" });
  assert.equal(next.result, "alive");
});

Deno.test("cancelling a call kills its sandbox; shutdown leaves no child processes", async () => {
  await using server = await startServer();
  await server.execute({ code: "1" });
  const serverPid = server.pid;
  const sandboxes = async (n: number) => {
    // Exactly n: a sandbox killed a moment ago may not have exited yet.
    for (let i = 0; i < 600 && sandboxPids(serverPid).length !== n; i++) await delay(50);
    return sandboxPids(serverPid);
  };
  const before = await sandboxes(2);
  assert.equal(before.length, 2);
  // Cancel once the script runs (not while it waits for a booting sandbox).
  const started = Promise.withResolvers<void>();
  server.client.setNotificationHandler(LoggingMessageNotificationSchema, () => started.resolve());
  const controller = new AbortController();
  const call = server.client.callTool(
    {
      name: "execute_code",
      arguments: { code: "print('started')\nwhile True:\n    pass", timeout_s: 120 },
    },
    undefined,
    { signal: controller.signal },
  );
  await started.promise;
  controller.abort();
  await assert.rejects(call);
  // The busy sandbox is one of `before`; it must die long before its 120 s timeout.
  let gone: number[] = [];
  for (let i = 0; i < 400 && gone.length === 0; i++) {
    await delay(50);
    const now = sandboxPids(serverPid);
    gone = before.filter((pid) => !now.includes(pid));
  }
  assert.equal(gone.length, 1, "the cancelled sandbox was not killed");
  await sandboxes(2);
  const live = childPids(serverPid); // sandboxes and upstream servers
  assert.ok(live.length >= 4, `expected sandboxes and upstream servers, got ${live.length}`);
  await server.client.close();
  for (let i = 0; i < 200 && live.some(isAlive); i++) await delay(50);
  assert.deepEqual(live.filter(isAlive), [], "child processes outlived the server");
});
