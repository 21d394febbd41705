/**
 * Smaller promises an attacker broke: the line limit, input file names, exact integers, the
 * session id's stated shape, unknown resources, and deep recursion.
 */
import assert from "node:assert/strict";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { delay, startServer } from "./_helpers.ts";

/**
 * A script that sends the entity `big` (made by `setup`) to memory.create_entities, catching
 * ToolDenied, then makes a call that is sent: its result is [what the first call said, the
 * second's result type].
 */
function deniedThenSent(setup: string): string {
  return [
    "from mcp_tools import memory, ToolDenied",
    setup,
    "try:",
    "    memory.create_entities(entities=[big])",
    "    said = 'sent'",
    "except ToolDenied as e:",
    "    said = str(e)",
    "[said, type(memory.read_graph()).__name__]",
  ].join("\n");
}

Deno.test("requests, results and errors keep their stated shapes", async (t) => {
  await using server = await startServer();

  await t.step("the line limit counts lone \\r line breaks (Python does)", async () => {
    const r = await server.execute({ code: "x = 1\r".repeat(401) + "x" });
    assert.equal(r.diagnostics?.error_type, "POLICY_VIOLATION");
    assert.match(r.diagnostics!.message, /402 lines; the limit is 400/);
    // 400 lines as an editor saves them, a line break after the last: within the limit.
    const saved = await server.execute({ code: "x = 1\n".repeat(399) + "x\r\n" });
    assert.equal(saved.result, 1, saved.text);
  });

  await t.step(
    "attack: one call with more arguments than a sandbox's line holds raises ToolDenied there",
    async () => {
      // The host reads at most MAX_SANDBOX_LINE_BYTES of a sandbox's line, and ends the run as a
      // protocol violation past it: an honest script's oversized call must not end its run.
      const code = deniedThenSent(
        "big = {'name': 'x', 'entityType': 't', 'observations': ['é' * (5 * 1024 * 1024)]}",
      );
      const r = await server.execute({ code });
      assert.equal(r.diagnostics, null, r.text);
      const [said, graph] = r.result as [string, string];
      assert.match(said, /the call's arguments are 10\.0 MiB as JSON, .* at most 8\.0 MiB/);
      assert.equal(graph, "dict", "the next call is sent");
      assert.equal(r.tool_calls.count, 1, "the refused call never reached the host");
    },
  );

  await t.step(
    "attack: a call whose arguments are costly to parse raises ToolDenied there; a raw line ends the run",
    async () => {
      // 600,000 keys in 6.6 MB of arguments held the host's thread 2 to 3 s a call (attacker 64).
      const code = deniedThenSent(
        "wide = {f'k{i}': 0 for i in range(60_000)}\n" +
          "big = {'name': 'x', 'entityType': 't', 'observations': [], 'x': wide}",
      );
      const r = await server.execute({ code });
      assert.equal(r.diagnostics, null, r.text);
      const [said, graph] = r.result as [string, string];
      assert.match(
        said,
        /the host does not read arguments like these: it holds more than 49,992 object keys that are costly to read/,
      );
      assert.equal(graph, "dict", "the next call is sent");
      assert.equal(r.tool_calls.count, 1, "the refused call never reached the host");
      // Written to the protocol channel past the worker's check: the host does not parse it.
      const raw = await server.execute({
        code: "import js, json\nwide = {f'k{i}': 0 for i in range(60_000)}\n" +
          "line = json.dumps({'jsonrpc': '2.0', 'method': 'output', 'params': wide}) + '\\n'\n" +
          "js.Deno.stdout.writeSync(js.TextEncoder.new().encode(line))\n" +
          "import time\ntime.sleep(5)",
      });
      assert.equal(raw.diagnostics?.error_type, "POLICY_VIOLATION", raw.text);
      assert.match(
        raw.diagnostics!.message,
        /protocol message too costly for the host to read: it holds more than 50,000 object keys .*write it to a file in outputs\//,
      );
    },
  );

  await t.step("an input file named outputs is refused before anything runs", async () => {
    for (const name of ["outputs", "outputs/x.txt"]) {
      const r = await server.execute({ code: "1", files: { [name]: "x" } } as never);
      assert.equal(r.diagnostics?.error_type, "POLICY_VIOLATION", r.text);
      assert.match(r.diagnostics!.message, /not under outputs/);
    }
  });

  await t.step(
    "results and errors are well-formed Unicode: half a character becomes U+FFFD",
    async () => {
      // JSON escapes a lone surrogate, but a client decoding to UTF-8 (the Python SDK) cannot
      // read the message, and waits for it until its timeout.
      const r = await server.execute({ code: "{'\\ud800key': ['\\ud800x', 'ok \\U0001F600']}" });
      assert.deepEqual(r.result, { "\uFFFDkey": ["\uFFFDx", "ok \u{1F600}"] });
      assert.ok(r.text.isWellFormed(), r.text);
      const failed = await server.execute({ code: "raise ValueError('bad \\udc00 half')" });
      assert.match(failed.diagnostics!.message, /bad \uFFFD half/);
      assert.ok(failed.text.isWellFormed());
    },
  );

  await t.step("integers beyond 2**53 come back exactly, as digit strings", async () => {
    const r = await server.execute({ code: "[2**100, -(2**60), 2**53 - 1, True]" });
    assert.deepEqual(r.result, [
      "1267650600228229401496703205376",
      "-1152921504606846976",
      9007199254740991,
      true,
    ]);
  });

  await t.step("the input schema states the session_id pattern it enforces", async () => {
    const { tools } = await server.client.listTools();
    const schema = tools.find((tool: { name: string }) => tool.name === "execute_code")!
      .inputSchema as {
        properties: { session_id: { pattern?: string } };
      };
    assert.equal(schema.properties.session_id.pattern, "^[A-Za-z0-9_-]{1,64}$");
  });

  await t.step("an unknown resource is invalid params (-32602)", async () => {
    await assert.rejects(
      server.client.readResource({ uri: "codemode://stubs/no_such_server.pyi" }),
      (error: Error) => {
        assert.ok(error instanceof McpError);
        assert.equal((error as McpError).code, -32602);
        return true;
      },
    );
  });

  await t.step("deep recursion in C code is a RecursionError, not a crash", async () => {
    for (
      const code of [
        "a = []\nfor _ in range(200000):\n    a = [a]\nrepr(a)",
        "import json\na = []\nfor _ in range(200000):\n    a = [a]\njson.dumps(a)",
        "import sys\nsys.setrecursionlimit(100000)\ndef f(n):\n    return f(n + 1)\nf(0)",
        "def f(n):\n    return f(n + 1)\nf(0)",
      ]
    ) {
      const r = await server.execute({ code });
      assert.equal(r.diagnostics?.error_type, "RecursionError", r.text);
      assert.equal(r.diagnostics?.reported_by, "script");
    }
  });

  await t.step("a session whose interpreter overflowed is closed, and says so", async () => {
    const opened = await server.execute({ code: "kept = 1\nkept", session_id: "new" } as never);
    assert.equal(opened.result, 1);
    const id = opened.session_id!;
    const call = (code: string) => server.execute({ code, session_id: id } as never);
    const r = await call("a = []\nfor _ in range(200000):\n    a = [a]\nrepr(a)");
    assert.equal(r.diagnostics?.error_type, "RecursionError");
    assert.match(
      r.diagnostics!.message,
      new RegExp(`session "${id}" was closed and its state is lost`),
    );
    assert.match((await call("'kept' in globals()")).diagnostics!.message, /^No open session/);
  });

  await t.step("SIGTERM answers a running call CANCELLED before the server stops", async () => {
    const running = server.execute({
      code: "import time\nprint('up', flush=True)\ntime.sleep(60)",
    });
    await delay(1000);
    Deno.kill(server.pid, "SIGTERM");
    const r = await running;
    assert.equal(r.diagnostics?.error_type, "CANCELLED", r.text);
    assert.match(r.diagnostics!.message, /the server is shutting down/);
  });
});
