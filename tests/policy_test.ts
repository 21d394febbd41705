/**
 * Host-side policy on tool calls, and a sandbox that attacks the JSON-RPC channel directly.
 */
import assert from "node:assert/strict";
import { decideToolCall, isToolAllowed } from "../src/policy/tool_policy.ts";
import { ROOT, startServer } from "./_helpers.ts";

Deno.test("isToolAllowed() matches server.tool globs", async (t) => {
  const table: [string, string, string[], boolean][] = [
    ["filesystem", "read_file", ["*"], true],
    ["filesystem", "read_file", ["filesystem.read_*"], true],
    ["filesystem", "write_file", ["filesystem.read_*"], false],
    ["filesystem", "read_file", ["memory.*"], false],
    ["everything", "get-sum", ["everything.get-*"], true],
    ["a", "b.c", ["a.b.c"], true],
    ["a", "bxc", ["a.b.c"], false],
    ["fs", "x", [], false],
    ["myfs", "read", ["fs.read"], false],
    ["fs", "read_secrets", ["fs.read"], false],
    ["fs", "read", ["fs.*", "nothing"], true],
    ["fs", "line\nbreak", ["*"], true],
    ["fs", "line\u2028break", ["fs.*"], true],
    ["x", "abab", ["x.a*b*b"], true],
    ["x", "ab", ["x.a*b*b"], false],
    ["x", "aa", ["x.a*a"], true],
    ["x", "a", ["x.a*a"], false],
    ["x", "read_all_files", ["*.read_*_*"], true],
    ["x", "read_all", ["*.read_*_*"], false],
  ];
  for (const [server, tool, globs, expected] of table) {
    await t.step(`${server}.${tool} with ${JSON.stringify(globs)} -> ${expected}`, () => {
      assert.equal(isToolAllowed(server, tool, globs), expected);
    });
  }
  await t.step("attack: a name a sandbox chose against a glob of many stars", () => {
    // As a regular expression, *a*a*a*b took 12.7 s against these 401 characters.
    const started = performance.now();
    assert.equal(isToolAllowed("a".repeat(200), "a".repeat(200), ["*a*a*a*b"]), false);
    const ms = performance.now() - started;
    assert.ok(ms < 5000, `${ms} ms`);
  });
  await t.step("the call limit is checked before the allowlist", () => {
    const policy = { name: "p", allowed_tools: ["*"], approve: [], tool_calls: 2 };
    assert.deepEqual(decideToolCall("a", "b", policy, 1), { allowed: true, needsApproval: false });
    const denied = decideToolCall("a", "b", policy, 2);
    assert.equal(denied.allowed, false);
  });
  await t.step("an allowed call the approve globs name needs approval; others do not", () => {
    const policy = { name: "p", allowed_tools: ["fs.*"], approve: ["fs.write_*"], tool_calls: 9 };
    assert.deepEqual(decideToolCall("fs", "write_file", policy, 0), {
      allowed: true,
      needsApproval: true,
    });
    assert.deepEqual(decideToolCall("fs", "read_file", policy, 0), {
      allowed: true,
      needsApproval: false,
    });
  });
});

async function startRestricted() {
  const fsDir = Deno.realPathSync(await Deno.makeTempDir());
  const memoryDir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${fsDir}/a.txt`, "alpha");
  const server = await startServer({
    args: ["--config", `${ROOT}tests/fixtures/servers.json`],
    env: { TEST_FS_DIR: fsDir, TEST_MEMORY_DIR: memoryDir, TEST_SECRET: "not-used-here" },
  });
  return { server, fsDir };
}

Deno.test("the profile's allowed_tools and call limit are enforced on the host", async (t) => {
  const { server, fsDir } = await startRestricted();
  await using _ = server;
  const file = JSON.stringify(`${fsDir}/a.txt`);

  await t.step(
    "an allowed call works, a denied one raises ToolDenied and is recorded",
    async () => {
      const r = await server.execute({
        profile: "restricted",
        code: [
          "from mcp_tools import filesystem, ToolDenied",
          `print(filesystem.read_text_file(path=${file})['content'])`,
          "try:",
          `    filesystem.write_file(path=${file}, content='overwritten')`,
          "except ToolDenied as e:",
          "    print('denied:', e)",
        ].join("\n"),
      });
      assert.equal(r.success, true, r.text);
      assert.match(
        r.stdout,
        /^alpha\ndenied: filesystem\.write_file: denied: the profile "\w+" does not allow filesystem\.write_file \(its allowed_tools: /,
      );
      assert.deepEqual(r.tool_calls.calls.map((c) => c.outcome), ["ok", "denied"]);
      assert.equal(await Deno.readTextFile(`${fsDir}/a.txt`), "alpha");
    },
  );

  await t.step("an uncaught denial fails the run with TOOL_DENIED", async () => {
    const r = await server.execute({
      profile: "restricted",
      code: "from mcp_tools import memory\nmemory.read_graph()",
    });
    assert.equal(r.diagnostics?.error_type, "TOOL_DENIED");
  });

  await t.step("the tool-call limit per execution", async () => {
    const r = await server.execute({
      profile: "restricted",
      code:
        "from mcp_tools import everything\nfor i in range(5):\n    everything.echo(message=str(i))",
    });
    assert.equal(r.diagnostics?.error_type, "TOOL_DENIED");
    assert.match(r.diagnostics!.message, /limit of 3 tool calls/);
    assert.equal(r.tool_calls.count, 4);
  });

  await t.step("the default profile may call everything", async () => {
    const r = await server.execute({ code: "from mcp_tools import memory\nmemory.read_graph()" });
    assert.equal(r.success, true, r.text);
  });
});

Deno.test("a sandbox that forges protocol messages cannot harm the host", async (t) => {
  const { server, fsDir } = await startRestricted();
  await using _ = server;
  const send = (lines: unknown[]) =>
    [
      "import js, json",
      "enc = js.TextEncoder.new()",
      ...lines.map((l) =>
        `js.Deno.stdout.writeSync(enc.encode(${
          JSON.stringify(typeof l === "string" ? l : JSON.stringify(l))
        } + '\\n'))`
      ),
    ].join("\n");

  await t.step(
    "garbage, unknown methods, forged ids and replies to nothing are ignored",
    async () => {
      const r = await server.execute({
        code: send([
          "this is not json",
          "[1, 2, 3]",
          { jsonrpc: "1.0", method: "output" },
          { jsonrpc: "2.0", id: 7777, method: "shutdown_host", params: {} },
          { jsonrpc: "2.0", id: 424242, result: { ok: true } },
          { jsonrpc: "2.0", method: "output", params: { stream: "stdin", text: 1 } },
          { jsonrpc: "2.0", id: { forged: true }, method: "call_tool" },
        ]) + "\nprint('after the noise')\n'finished'",
      });
      assert.equal(r.success, true, r.text);
      assert.equal(r.result, "finished");
      assert.equal(r.stdout, "after the noise\n");
      assert.equal(r.protocol_violations, 7);
    },
  );

  await t.step("raw call_tool requests still pass the host's policy", async () => {
    const r = await server.execute({
      profile: "restricted",
      code: send([
        {
          jsonrpc: "2.0",
          id: 9001,
          method: "call_tool",
          params: {
            server: "filesystem",
            tool: "write_file",
            arguments: { path: `${fsDir}/a.txt`, content: "x" },
          },
        },
        { jsonrpc: "2.0", id: 9002, method: "call_tool", params: { server: "filesystem" } },
      ]) + "\nimport asyncio\nawait asyncio.sleep(0.3)\n'done'",
    });
    assert.equal(r.success, true, r.text);
    assert.equal(await Deno.readTextFile(`${fsDir}/a.txt`), "alpha");
    assert.equal(r.tool_calls.calls[0]?.outcome, "denied");
  });

  await t.step(
    "a call naming megabytes of tool is refused, and the reply stays small",
    async () => {
      // An attacker's corpus: 3 denied calls of 2 MB names made a 12 MB reply; 4 scripts of 120
      // calls of 4 MB ran the host out of memory.
      const r = await server.execute({
        profile: "restricted",
        code: [
          "from _codemode import call_tool",
          "errors = []",
          "for i in range(3):",
          "    try:",
          "        call_tool('filesystem', 'x' * 2_000_000, {})",
          "    except Exception as e:",
          "        errors.append(type(e).__name__)",
          "call_tool('filesystem', 'x' * 200, {})",
        ].join("\n"),
      });
      assert.ok(
        JSON.stringify(r).length < 20_000,
        `a reply of ${JSON.stringify(r).length} characters`,
      );
      assert.equal(r.protocol_violations, 3, r.text);
      assert.equal(r.tool_calls.count, 1, "the long names never reached the gate");
      assert.equal(r.tool_calls.calls[0]?.outcome, "denied");
    },
  );

  await t.step(
    "empty output and a 'started' outside a session count, and a flood of them is stopped",
    async () => {
      // An attacker's corpus: 68 million empty outputs took the host to 1.67 GB, uncounted.
      const counted = await server.execute({
        code: send([
          { jsonrpc: "2.0", method: "output", params: { stream: "stdout", text: "" } },
          { jsonrpc: "2.0", method: "started", params: {} },
        ]) + "\n'finished'",
      });
      assert.equal(counted.result, "finished", counted.text);
      assert.equal(counted.protocol_violations, 2);
      const flood = await server.execute({
        code: "import js\nline = js.TextEncoder.new().encode(" +
          `'${
            JSON.stringify({
              jsonrpc: "2.0",
              method: "output",
              params: { stream: "stdout", text: "" },
            })
          }\\n' * 1000)` +
          "\njs.Deno.stdout.writeSync(line)\nimport time\ntime.sleep(2)",
      });
      assert.equal(flood.diagnostics?.error_type, "POLICY_VIOLATION", flood.text);
    },
  );

  await t.step("a flood of invalid messages stops the sandbox", async () => {
    const r = await server.execute({
      code:
        "import js\nenc = js.TextEncoder.new()\nfor i in range(1000):\n    js.Deno.stdout.writeSync(enc.encode('junk\\n'))\nimport time\ntime.sleep(2)",
    });
    assert.equal(r.diagnostics?.error_type, "POLICY_VIOLATION");
    assert.match(r.diagnostics!.message, /broke the protocol more than 100 times/);
  });

  await t.step("the server and upstream sessions still work", async () => {
    const r = await server.execute({
      code: `from mcp_tools import filesystem\nfilesystem.read_text_file(path=${
        JSON.stringify(fsDir + "/a.txt")
      })['content']`,
    });
    assert.equal(r.result, "alpha", r.text);
  });
});
