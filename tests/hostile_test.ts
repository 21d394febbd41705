/**
 * The hostile-input suite, grouped by what it attacks. Each case is followed by a normal run
 * that must succeed (see also isolation_test.ts and policy_test.ts).
 */
import assert from "node:assert/strict";
import { spawnServe, startServer, type TestServer } from "./_helpers.ts";
import { sessionSandbox } from "./_sandbox.ts";

async function stillWorks(server: TestServer): Promise<void> {
  const r = await server.execute({
    code: "import sys\n'ok' if 'leftover' not in globals() else 'dirty'",
  });
  assert.equal(r.result, "ok", r.text);
}

Deno.test("escaping the sandbox through Pyodide's own doors", async (t) => {
  await using server = await startServer();
  const cases: [string, string, RegExp][] = [
    [
      "run_js",
      "from pyodide.code import run_js\nrun_js(\"Deno.readTextFileSync('/etc/passwd')\")",
      /NotCapable|read access/,
    ],
    [
      "pyodide_js",
      "import pyodide_js\npyodide_js.runPython('1')\nimport js\njs.Deno.readDirSync('/')",
      /NotCapable|read access/,
    ],
    [
      "mounting the host root through the Emscripten FS",
      "import pyodide_js\npyodide_js.FS.mkdirTree('/host')\npyodide_js.mountNodeFS('/host', '/')\nopen('/host/etc/passwd').read()",
      /NotCapable|read access|Permission|No such file|does not exist/,
    ],
    [
      "spawning through node:child_process",
      "import js\nm = await js.eval(\"import('node:child_process')\")\nm.execSync('id')",
      /NotCapable|run access|not allowed/,
    ],
    [
      "reading env through node:process",
      "import js\nm = await js.eval(\"import('node:process')\")\nm.default.env.HOME",
      /NotCapable|env access/,
    ],
  ];
  for (const [name, code, message] of cases) {
    await t.step(name, async () => {
      const r = await server.execute({ code: code + "\nleftover = 1" });
      assert.equal(r.success, false, r.text);
      assert.match(`${r.diagnostics!.message}\n${r.diagnostics!.traceback ?? ""}`, message);
      assert.doesNotMatch(r.text, /root:x:0/);
      await stillWorks(server);
    });
  }
  await t.step("replacing the runtime's modules only fools the script itself", async () => {
    const r = await server.execute({
      code: [
        "import sys, types, _codemode",
        "fake = types.ModuleType('_codemode_host')",
        "sys.modules['_codemode_host'] = fake",
        "_codemode.run = None",
        "sys.modules['json'] = None",
        "'survived'",
      ].join("\n"),
    });
    assert.equal(r.result, "survived", r.text);
    await stillWorks(server);
  });
});

Deno.test("exhausting resources stays inside the sandbox", async (t) => {
  await using server = await startServer();
  await t.step("file descriptors", async () => {
    const r = await server.execute({
      code:
        "files = []\ntry:\n    for i in range(100000):\n        files.append(open(f'/tmp/f{i}', 'w'))\nexcept OSError as e:\n    print(type(e).__name__)\nlen(files) < 100000",
    });
    assert.equal(r.success, true, r.text);
    assert.equal(r.result, true);
    await stillWorks(server);
  });
  await t.step("threads are not available to multiply CPU", async () => {
    const r = await server.execute({
      code: "import threading\nthreading.Thread(target=lambda: None).start()",
    });
    assert.equal(r.success, false);
    await stillWorks(server);
  });
  await t.step("a huge result is capped once, and says its real size", async () => {
    const cases: [string, number][] = [["'x' * 1_000_000", 1_000_002], [
      "'\\n' * 200_000",
      400_002,
    ]];
    for (const [code, size] of cases) {
      const r = await server.execute({ code });
      assert.equal(r.success, true);
      const result = String(r.result);
      assert.ok(JSON.stringify(result).length <= 65_536, `${JSON.stringify(result).length}`);
      assert.match(
        result,
        new RegExp(`^'.*\\.\\.\\. \\[result truncated: ${size} chars, limit 65536\\]$`, "s"),
      );
      assert.ok(result.length > 20_000, "as much as fits is kept");
      assert.deepEqual(r.truncated, ["result"], "flagged for a client to check");
    }
    // Non-ASCII text counts as the host counts it (one unit a letter, not the six of \u00e9): a
    // newcomer's 24 KB string came back cut to 6,900 characters, and a longer one to nothing.
    const accented = await server.execute({ code: "'é' * 40000" });
    assert.equal(accented.result, "é".repeat(40000));
    assert.equal(accented.truncated, undefined);
    const chinese = await server.execute({ code: "{'text': '中文' * 6000}" });
    assert.deepEqual(chinese.result, { text: "中文".repeat(6000) });
    const control = await server.execute({ code: "'\\x01' * 100000" });
    const cut = String(control.result);
    assert.ok(JSON.stringify(cut).length <= 65_536 && cut.length > 5_000, `${cut.length}`);
    await stillWorks(server);
  });
});

Deno.test("a sandbox's replies to ids never sent cost the host a bounded record each", async () => {
  // Attacker 37: each such reply's id was kept quoted whole until the execution ended; 99 ids of
  // 8 MB took the host to 1.35 GB for one execution, and four executions at once to 4.67 GB.
  await using sandbox = await sessionSandbox();
  const outcome = await sandbox.execute({
    timeoutMs: 30_000,
    memoryBytes: 512 * 1024 * 1024,
    outputBytes: 65536,
    code: [
      "import js, json",
      "for i in range(5):",
      "    line = json.dumps({'jsonrpc': '2.0', 'id': str(i) * 1_000_000, 'result': 1}) + '\\n'",
      "    js.Deno.stdout.writeSync(js.TextEncoder.new().encode(line))",
      "'real'",
    ].join("\n"),
  }, { callTool: () => Promise.reject(new Error("no calls here")) });
  assert.equal(outcome.stop, null, outcome.stop?.message);
  assert.equal(outcome.reply?.ok && outcome.reply.result, "real");
  assert.equal(outcome.violations.length, 5);
  for (const detail of outcome.violations) {
    assert.match(detail, /^a reply to id "\d+"\.\.\. \(1000000 characters\)/);
    assert.ok(detail.length < 200, `a record of ${detail.length} characters`);
  }
});

Deno.test("bad requests from the MCP client get clear errors, never a crash", async (t) => {
  await using server = await startServer();
  const call = (args: Record<string, unknown>) =>
    server.client.callTool({ name: "execute_code", arguments: args }, undefined, {
      timeout: 60_000,
    });
  await t.step("missing code", async () => {
    const reply = await call({});
    assert.equal(reply.isError, true);
    assert.match((reply.content as { text: string }[])[0]!.text, /code/);
  });
  await t.step("wrong types", async () => {
    const reply = await call({ code: ["print(1)"], timeout_s: "soon" });
    assert.equal(reply.isError, true);
  });
  await t.step("an unknown profile", async () => {
    const reply = await call({ code: "1", profile: "root" });
    assert.equal(reply.isError, true);
  });
  await t.step(
    "five megabytes of code (the SDK closes stdio sessions at 10 MiB per message)",
    async () => {
      const reply = await call({ code: "#" + "x".repeat(5 * 1024 * 1024) });
      assert.equal(reply.isError, true);
      assert.equal(
        (reply.structuredContent as { diagnostics: { error_type: string } }).diagnostics.error_type,
        "POLICY_VIOLATION",
      );
    },
  );
  await t.step("an unknown tool: an invalid-params error naming it", async () => {
    await assert.rejects(
      () => server.client.callTool({ name: "rm_rf", arguments: {} }),
      (error: Error & { code?: number }) => {
        assert.equal(error.code, -32602);
        assert.match(error.message, /Unknown tool "rm_rf"/);
        return true;
      },
    );
  });
  await t.step("the server still answers", async () => {
    await stillWorks(server);
  });
});

Deno.test("malformed bytes on the server's stdin do not bring it down", async () => {
  const child = spawnServe({ args: ["--log-level", "error"], clearEnv: true });
  const writer = child.stdin.getWriter();
  const send = (text: string | Uint8Array) =>
    writer.write(typeof text === "string" ? new TextEncoder().encode(text) : text);
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  const nextMessage = async (id: number) => {
    while (true) {
      const nl = buffer.indexOf("\n");
      if (nl >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        const message = JSON.parse(line);
        if (message.id === id) return message;
        continue;
      }
      const { value, done } = await lines.read();
      if (done) throw new Error("the server closed stdout");
      buffer += value;
    }
  };
  await send(
    JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "raw", version: "0" },
      },
    }) + "\n",
  );
  await nextMessage(1);
  await send('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
  await send("this is not json\n");
  await send(
    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_code","arguments":{"code":"print(\'',
  );
  await send(new Uint8Array([0xff, 0xfe, 0xc3, 0x28]));
  await send("')\"}}}\n");
  const invalid = await nextMessage(2);
  assert.ok(invalid.result || invalid.error, JSON.stringify(invalid));
  // Attacker 64: a line nested a million deep held the host's thread 1.7 s; not parsed.
  const depth = 1_000_000;
  await send(
    '{"jsonrpc":"2.0","id":4,"method":"ping","params":{"_meta":{"x":' + "[".repeat(depth) +
      "]".repeat(depth) + "}}}\n",
  );
  const deep = await nextMessage(4);
  assert.equal(
    deep.error?.message,
    "Invalid Request: the message was not read: it is nested deeper than 1,000 levels",
  );
  await send(
    JSON.stringify({
      jsonrpc: "2.0",
      id: 3,
      method: "tools/call",
      params: { name: "execute_code", arguments: { code: "6 * 7" } },
    }) + "\n",
  );
  const ok = await nextMessage(3);
  assert.equal(ok.result.structuredContent.result, 42);
  await writer.close();
  lines.releaseLock();
  await child.stdout.cancel().catch(() => {});
  assert.equal((await child.status).success, true);
});
