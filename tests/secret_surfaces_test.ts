/**
 * End to end: a real upstream server puts a secret it was given into its tool docs, its replies
 * and its stderr; no surface of the host shows it, in any encoding.
 */
import assert from "node:assert/strict";
import { assertNoSecret, startWithLeakyServer } from "./_secret_fixture.ts";
import {
  childEnv,
  dynamicServer,
  MAIN,
  ROOT,
  SERVE_FLAGS,
  startServer,
  writeConfig,
} from "./_helpers.ts";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

Deno.test("a secret in an upstream server's docs, replies and stderr reaches no surface", async (t) => {
  await using server = await startWithLeakyServer();

  await t.step("the execute_code description's index", async () => {
    const tools = await server.client.listTools();
    const description = (tools.tools as { name: string; description?: string }[])
      .find((tool) => tool.name === "execute_code")!.description!;
    assert.match(description, /\n {2}get_token: Calls the billing API with key \[REDACTED\]/);
    assert.match(description, /broken: unavailable: .*\(stderr: .*\[REDACTED\]/);
    assertNoSecret(description, "the execute_code description");
  });

  await t.step("search_tools", async () => {
    const reply = await server.client.callTool({
      name: "search_tools",
      arguments: { query: "billing token" },
    });
    const text = JSON.stringify(reply);
    assert.match(text, /def get_token\(/);
    assert.match(text, /\[REDACTED\]/);
    assertNoSecret(text, "search_tools");
  });

  await t.step("get_tool_docs", async () => {
    const reply = await server.client.callTool({
      name: "get_tool_docs",
      arguments: { names: ["leaky.get_token"] },
    });
    const docs = (reply.structuredContent as { docs: { stub: string | null }[] }).docs;
    assert.match(docs[0]!.stub!, /API key is \[REDACTED\]/);
    assertNoSecret(JSON.stringify(reply), "get_tool_docs");
  });

  await t.step("the stub resource", async () => {
    const read = await server.client.readResource({ uri: "codemode://stubs/leaky.pyi" });
    const text = (read.contents[0] as { text: string }).text;
    assert.match(text, /def get_token\(/);
    assert.match(text, /\[REDACTED\]/);
    assertNoSecret(text, "codemode://stubs/leaky.pyi");
  });

  await t.step("the sandbox: docstrings, help(), replies, errors", async () => {
    const r = await server.execute({
      code: [
        "import inspect, json, _codemode",
        "from mcp_tools import leaky, ToolError",
        "print(leaky.get_token.__doc__)",
        "help(leaky.get_token)",
        "print(inspect.signature(leaky.get_token))",
        "reply = leaky.get_token(account='a')",
        "print(json.dumps(reply, default=str))",
        "for call in [lambda: leaky.fail_with_token(),",
        "             lambda: _codemode.call_tool('broken', 'anything', {})]:",
        "    try:",
        "        call()",
        "    except Exception as e:",
        "        print(type(e).__name__, e)",
        "reply",
      ].join("\n"),
    });
    assert.equal(r.success, true, r.text);
    assert.match(r.stdout, /Calls the billing API with key \[REDACTED\]/);
    assert.match(r.stdout, /key=\[REDACTED\]/);
    assert.match(r.stdout, /ToolError .*unauthorized: key \[REDACTED\] was revoked/);
    assert.match(r.stdout, /UpstreamUnavailable .*broken.*not connected.*\[REDACTED\]/);
    assert.equal(r.tool_calls.count, 3);
    assertNoSecret(r.stdout, "the sandbox's output");
    assertNoSecret(JSON.stringify(r), "the execute_code result");
  });

  await t.step("live output, when the script decodes a form the host did not scrub", async () => {
    const live: string[] = [];
    server.client.setNotificationHandler(
      LoggingMessageNotificationSchema,
      (n: { params: { data?: unknown } }) => {
        live.push(String(n.params.data));
      },
    );
    const r = await server.execute({
      code: [
        "import base64",
        "from mcp_tools import leaky",
        "wrapped = leaky.get_wrapped_token()",
        "token = base64.b64decode(wrapped.replace('\\r\\n', '')).decode()[2:]",
        "print('decoded:', token)",
        "print('halves:', token[:9], token[9:], sep='\\n')",
        // One long line, written in two pieces with a pause: the secret spans the pieces.
        "import sys, time",
        "sys.stdout.write('A' * 20000 + token[:9])",
        "sys.stdout.flush()",
        "time.sleep(0.3)",
        "sys.stdout.write(token[9:] + '\\n')",
      ].join("\n"),
    });
    assert.equal(r.success, true, r.text);
    assert.match(r.stdout, /decoded: \[REDACTED\]/);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.ok(live.some((m) => m.includes("decoded:")), "live output arrived");
    assertNoSecret(live.join(""), "live output, as a client shows it");
  });

  await t.step("files the script writes to outputs/, text and binary", async () => {
    const reply = await server.client.callTool({
      name: "execute_code",
      arguments: {
        code: [
          "import base64",
          "from mcp_tools import leaky",
          "wrapped = leaky.get_wrapped_token()",
          "token = base64.b64decode(wrapped.replace('\\r\\n', '')).decode()[2:]",
          "open('outputs/a.txt', 'w').write('xx ' + token + ' yy')",
          "open('outputs/b.bin', 'wb').write(b'\\x00\\xff' + token.encode() + b'\\x01')",
          "print('written')",
        ].join("\n"),
      },
    });
    // The SDK client read the answer: a blob is still base64 (a secret replaced inside the
    // base64 made it invalid, and the client rejected the whole answer).
    const result = reply.structuredContent as { success: boolean; stdout: string };
    assert.equal(result.success, true, JSON.stringify(reply).slice(0, 2000));
    assert.equal(result.stdout, "written\n", "the rest of the answer is kept");
    const resources = (reply.content as { type: string; resource?: Record<string, string> }[])
      .filter((c) => c.type === "resource").map((c) => c.resource!);
    assert.equal(resources.find((r) => r.uri?.endsWith("a.txt"))?.text, "xx [REDACTED] yy");
    const blob = resources.find((r) => r.uri?.endsWith("b.bin"))!.blob!;
    const bytes = Uint8Array.from(atob(blob), (c) => c.charCodeAt(0));
    assert.deepEqual([...bytes.subarray(0, 2)], [0, 255]);
    assert.equal(new TextDecoder().decode(bytes.subarray(2, -1)), "[REDACTED]");
    assertNoSecret(JSON.stringify(reply), "the returned files");
  });

  await t.step("the host's log", () => {
    assert.match(server.stderr(), /cannot connect upstream server/);
    assertNoSecret(server.stderr(), "the log");
  });
});

Deno.test("the launcher's debug log of its grants does not show a secret in a server's path", async () => {
  const dir = Deno.realPathSync(await Deno.makeTempDir());
  const secretDir = `${dir}/private-7c1e9a3b5d`;
  await Deno.mkdir(secretDir);
  await Deno.mkdir(`${dir}/permissions`);
  await Deno.writeTextFile(`${dir}/permissions/default.json`, "{}");
  const config = await writeConfig(dir, {
    servers: { hidden: { command: "./server.sh", cwd: "${SRV_DIR}" } },
    settings: { permissions_dir: "permissions", pool_size: 0 },
  });
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...SERVE_FLAGS, MAIN, "tools", "--config", config, "--log-level", "debug"],
    env: childEnv({ SRV_DIR: secretDir }),
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.match(stderr, /host permissions: /);
  assert.ok(!stderr.includes("private-7c1e9a3b5d"), stderr);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a progress number whose digits hold a secret is not sent", async () => {
  // An attacker's corpus: a numeric key, reversed by an upstream and reversed back by the
  // script, was scrubbed from the output but sent as a progress notification's number.
  const dir = await Deno.makeTempDir();
  const config = await writeConfig(dir, {
    servers: { dynamic: dynamicServer({ API_KEY: "${NUMERIC_TEST_SECRET}" }) },
    settings: { pool_size: 1, permissions_dir: `${ROOT}permissions` },
  });
  await using server = await startServer({
    args: ["--config", config],
    env: { NUMERIC_TEST_SECRET: "8472910384" },
  });
  const progress: unknown[] = [];
  await server.client.callTool(
    {
      name: "execute_code",
      arguments: {
        code: [
          "from mcp_tools import report_progress",
          "report_progress(int('4830192748'[::-1]), 9e9, 'secret')",
          "report_progress(5, 1e10 + int('4830192748'[::-1]), 'total')",
          "report_progress(1, 2, 'plain')",
        ].join("\n"),
      },
    },
    undefined,
    { onprogress: (p: unknown) => progress.push(p) },
  );
  assert.deepEqual(progress, [{ progress: 1, total: 2, message: "plain" }]);
  await Deno.remove(dir, { recursive: true });
});
