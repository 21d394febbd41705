/**
 * The code-generation agent against a scripted chat-completions server (through the real openai
 * client), through MCP sampling, and end to end with the filesystem server.
 */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { startFakeChatApi } from "./_fake_chat_api.ts";
import { childEnv, delay, MAIN, ROOT, runCli, SERVE_FLAGS, startServer } from "./_helpers.ts";
import { assertNoSecret, SECRET, startWithLeakyServer } from "./_secret_fixture.ts";
import type { AgentResult } from "../src/agent/agent.ts";

const HELLO = `${ROOT}examples/files/hello.txt`;
const READ_HELLO = [
  "from mcp_tools import filesystem",
  `text = filesystem.read_text_file(path=${JSON.stringify(HELLO)})["content"]`,
  "print(text.split()[0])",
  "len(text.split())",
].join("\n");

function modelEnv(baseURL: string): Record<string, string> {
  return { OPENAI_API_KEY: "test-key", OPENAI_BASE_URL: baseURL, CODEMODE_MODEL: "scripted-model" };
}

async function generate(
  server: Awaited<ReturnType<typeof startServer>>,
  task: string,
  max_attempts = 3,
) {
  const reply = await server.client.callTool(
    { name: "generate_and_execute", arguments: { task, max_attempts } },
    undefined,
    { timeout: 120_000 },
  );
  return { reply, result: reply.structuredContent as unknown as AgentResult };
}

Deno.test("generate_and_execute repairs a buggy script from its error", async (t) => {
  await using api = startFakeChatApi([
    "```python\nprint('about to divide')\n1 / 0\n```",
    READ_HELLO, // unfenced
    "Here you go:\n```python\nfrom mcp_tools import filesystem\nfilesystem.read_fil(path='x')\n```",
    "```py\n" + READ_HELLO + "\n```",
    {
      status: 400,
      body: {
        error: {
          message:
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
          type: "invalid_request_error",
          param: "max_tokens",
          code: "unsupported_parameter",
        },
      },
    },
    "```python\nprint('ok')\n```",
  ]);
  await using server = await startServer({ env: modelEnv(api.baseURL) });

  await t.step("a failed run is fed back, and the fix succeeds", async () => {
    const { reply, result } = await generate(
      server,
      "Read hello.txt in the sample folder and count its words",
    );
    assert.equal(reply.isError, false, JSON.stringify(result, null, 2));
    assert.equal(result.success, true);
    assert.equal(result.model, "openai:scripted-model");
    assert.equal(result.attempts.length, 2);
    assert.equal(result.attempts[0]!.phase, "execution");
    assert.match(result.attempts[0]!.error!, /ZeroDivisionError/);
    assert.equal(result.attempts[1]!.error, null);
    assert.equal(result.final_code, READ_HELLO + "\n");
    assert.equal(result.execution!.stdout, "Hello\n");
    assert.equal(typeof result.execution!.result, "number");
    assert.deepEqual(result.attempts.map((a) => a.usage?.total_tokens), [121, 122]);
    assert.equal(result.usage.total_tokens, 243);

    const second = api.requests[1]!.messages as { role: string; content: string }[];
    assert.equal(api.requests[1]!.model, "scripted-model");
    assert.match(second[1]!.content, /Task:\nRead hello\.txt/);
    assert.match(
      second[1]!.content,
      /def read_text_file\(path: str/,
      "the relevant stubs are in the prompt",
    );
    assert.match(second.at(-2)!.content, /1 \/ 0/, "the failed code is fed back");
    assert.match(second.at(-1)!.content, /ZeroDivisionError/, "its error is fed back");
  });

  await t.step("code calling a tool that does not exist is stopped before it runs", async () => {
    const { result } = await generate(server, "Read a file");
    assert.equal(result.success, true);
    assert.equal(result.attempts[0]!.phase, "validation");
    assert.match(
      result.attempts[0]!.error!,
      /was not run.*\n- line 2: filesystem\.read_fil: no such function/,
    );
    assert.match(
      (api.requests[3]!.messages as { content: string }[]).at(-1)!.content,
      /no such function/,
    );
  });

  await t.step(
    "a model that refuses max_tokens is retried with max_completion_tokens, and says so",
    async () => {
      const { result } = await generate(server, "Say ok");
      assert.equal(result.success, true, JSON.stringify(result));
      assert.match(result.attempts[0]!.notes.join(" "), /rejected max_tokens/);
      assert.ok("max_tokens" in api.requests[4]!);
      assert.ok("max_completion_tokens" in api.requests[5]! && !("max_tokens" in api.requests[5]!));
    },
  );
});

Deno.test("generate_and_execute sends the model API no secret from the task or the tool catalog", async () => {
  // The model echoes both secrets back in its code.
  await using api = startFakeChatApi([
    `\`\`\`python\nprint('ok')  # test-key ${SECRET}\n\`\`\``,
  ]);
  await using server = await startWithLeakyServer(modelEnv(api.baseURL));
  const { reply, result } = await generate(
    server,
    `Get the billing token with key ${SECRET}; the model's key is test-key.`,
  );
  assert.equal(result.success, true, JSON.stringify(result));
  assert.equal(api.requests.length, 1);
  const body = JSON.stringify(api.requests[0]);
  assert.match(body, /with key \[REDACTED\]; the model's key is \[REDACTED\]\./);
  assert.match(body, /def get_token\(/, "the leaky tool's stub is in the prompt");
  assert.match(body, /Calls the billing API with key \[REDACTED\]/);
  assert.match(body, /broken: unavailable: .*\[REDACTED\]/, "the index is in the prompt");
  assertNoSecret(body, "the request to the model API");
  assert.ok(!body.includes("test-key"), "the model API key is in the request body");
  const answer = JSON.stringify(reply);
  assertNoSecret(answer, "the answer, with the model's code");
  assert.ok(!answer.includes("test-key"), "the model API key is in the answer");
  assert.match(result.final_code ?? "", /# \[REDACTED\] \[REDACTED\]/);
});

Deno.test("attack: a model API's reply is read only up to its limit", async () => {
  const huge = "x".repeat(9 * 1024 * 1024);
  await using api = startFakeChatApi([huge, huge]);
  await using server = await startServer({ env: modelEnv(api.baseURL) });
  const { reply, result } = await generate(server, "Anything", 1);
  assert.equal(reply.isError, true);
  assert.match(result.message, /^Cannot get code from openai:scripted-model/, result.message);
});

Deno.test("attack: a model API's error cannot drive the terminal of the person who reads it", async () => {
  await using api = startFakeChatApi([
    { status: 400, body: { error: { message: "bad\x1b[2J\x1b[31mrequest\rall fine", type: "x" } } },
    // Megabytes of marks: escaped, they overflowed V8's stack and the run ended with no result.
    { status: 400, body: { error: { message: "long" + "\u0301".repeat(3_600_000), type: "x" } } },
  ]);
  await using server = await startServer({ env: modelEnv(api.baseURL) });
  const { reply, result } = await generate(server, "Anything", 1);
  assert.equal(reply.isError, true);
  assert.doesNotMatch(JSON.stringify(reply), /\\u001b|\\r/, "a control reached the client");
  assert.match(result.message, /bad\\u\{1b\}\[2J\\u\{1b\}\[31mrequest\\u\{d\}all fine/);
  const long = await generate(server, "Anything", 1);
  assert.equal(long.reply.isError, true);
  assert.match(long.result.message, /long\\u\{301\}×\d+.*… \(\d+ characters more\)$/);
  assert.ok(long.result.message.length < 3000, `${long.result.message.length} characters`);
});

Deno.test("attack: a model API's token counts that are no counts reach the client as 0", async () => {
  const completion = (code: string, usage: Record<string, unknown>) => ({
    status: 200,
    body: {
      id: "c",
      object: "chat.completion",
      created: 0,
      model: "m",
      choices: [{ index: 0, message: { role: "assistant", content: code }, finish_reason: "stop" }],
      usage,
    },
  });
  await using api = startFakeChatApi([
    // A count that is the API key (joined, not added, to the next attempt's), then megabytes.
    completion("```python\nraise ValueError('again')\n```", {
      prompt_tokens: "leaked test-key",
      completion_tokens: 7,
      total_tokens: { key: "test-key" },
    }),
    completion("```python\nprint('ok')\n```", {
      prompt_tokens: "P".repeat(2_000_000),
      completion_tokens: -1,
      total_tokens: 1e300,
    }),
  ]);
  await using server = await startServer({ env: modelEnv(api.baseURL) });
  const { reply, result } = await generate(server, "Anything", 2);
  assert.equal(result.success, true, JSON.stringify(result).slice(0, 2000));
  assert.deepEqual(result.usage, { prompt_tokens: 0, completion_tokens: 7, total_tokens: 0 });
  assert.deepEqual(result.attempts.map((a) => a.usage), [
    { prompt_tokens: 0, completion_tokens: 7, total_tokens: 0 },
    { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
  ]);
  const answer = JSON.stringify(reply);
  assert.ok(!answer.includes("test-key"), "the model API key is in the answer");
  assert.ok(answer.length < 100_000, `${answer.length} characters`);
});

Deno.test("attack: a model's script past the code limit is not run, nor repeated whole", async () => {
  const long = "```python\n" + "x = 1\n".repeat(40_000) + "```";
  await using api = startFakeChatApi([long, long]);
  await using server = await startServer({ env: modelEnv(api.baseURL) });
  const { reply, result } = await generate(server, "Anything", 2);
  assert.equal(result.success, false);
  for (const attempt of result.attempts) {
    assert.match(attempt.error ?? "", /not run: it has 240000 characters, over the 100000/);
    assert.ok(attempt.code.length <= 2000, `${attempt.code.length}`);
  }
  assert.ok(JSON.stringify(reply).length < 100_000, `${JSON.stringify(reply).length}`);
});

Deno.test("attack: a cancelled generate_and_execute stops waiting for the model, and asks no more", async () => {
  await using api = startFakeChatApi(["stall", "stall"]);
  await using server = await startServer({
    env: { ...modelEnv(api.baseURL), CODEMODE_MODEL_TIMEOUT_S: "60" },
  });
  const cancel = new AbortController();
  const call = server.client.callTool(
    { name: "generate_and_execute", arguments: { task: "Anything", max_attempts: 3 } },
    undefined,
    { timeout: 120_000, signal: cancel.signal },
  );
  while (api.requests.length === 0) await delay(20);
  cancel.abort();
  await assert.rejects(call);
  // The host lets go of the model's reply (its request aborted), long before the model's timeout.
  for (let i = 0; i < 250 && api.abandoned === 0; i++) await delay(20);
  assert.equal(api.abandoned, 1, "the model request was aborted");
  await delay(300);
  assert.equal(api.requests.length, 1, "no retry, no next attempt");
});

Deno.test("generate_and_execute gives up after max_attempts", async () => {
  await using api = startFakeChatApi([
    "print(1)\nraise ValueError('a')",
    "print(2)\nraise ValueError('b')",
  ]);
  await using server = await startServer({ env: modelEnv(api.baseURL) });
  const { reply, result } = await generate(server, "Never works", 2);
  assert.equal(reply.isError, true);
  assert.equal(result.success, false);
  assert.equal(result.message, "No working code after 2 attempts");
  assert.deepEqual(result.attempts.map((a) => a.error!.split(":")[0]), [
    "ValueError",
    "ValueError",
  ]);
});

Deno.test("the agent CLI prints each attempt and the final output", async () => {
  await using api = startFakeChatApi([
    "print(undefined_name)  # \x1b]0;title\x07",
    "```python\nprint('fixed\\x1b[2J')\n```",
  ]);
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", "-A", MAIN, "agent", "Print something"],
    env: childEnv(modelEnv(api.baseURL)),
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
    cwd: ROOT,
  });
  const out = await child.output();
  const stdout = new TextDecoder().decode(out.stdout);
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, stderr);
  assert.equal(stdout, "fixed\\u{1b}[2J\n", "the model's script's output, escaped too");
  assert.match(
    stderr,
    /--- attempt 1 \(openai:scripted-model\): failed at execution ---\nprint\(undefined_name\) {2}# \\u\{1b\}\]0;title\\u\{7\}\nerror: NameError/,
  );
  assert.ok(!stderr.includes("\x1b"), "the model's escape sequence reached the terminal");
  assert.match(stderr, /--- attempt 2 \(openai:scripted-model\): succeeded ---/);
  const noKey = await runCli(["agent", "Print something"]);
  assert.equal(noKey.code, 1);
  assert.match(noKey.stderr, /no model is available\. Set OPENAI_API_KEY/);
  assert.doesNotMatch(noKey.stderr, /sampling/, "the command line has no client to sample");
});

Deno.test("without an API key the agent uses the client's model through MCP sampling", async () => {
  const prompts: string[] = [];
  const client = new Client({ name: "sampling-client", version: "0" }, {
    capabilities: { sampling: {} },
  });
  client.setRequestHandler(
    CreateMessageRequestSchema,
    (request: { params: { messages: { content: { text: string } }[] } }) => {
      prompts.push(request.params.messages.map((m) => m.content.text).join("\n"));
      return {
        role: "assistant",
        model: "client-model",
        content: { type: "text", text: "```python\n" + READ_HELLO + "\n```" },
      };
    },
  );
  await client.connect(
    new StdioClientTransport({
      command: Deno.execPath(),
      args: ["run", ...SERVE_FLAGS, MAIN, "serve"],
      env: childEnv(),
      stderr: "ignore",
      cwd: ROOT,
    }),
  );
  try {
    const reply = await client.callTool(
      { name: "generate_and_execute", arguments: { task: "Count words in hello.txt" } },
      undefined,
      { timeout: 120_000 },
    );
    const result = reply.structuredContent as unknown as AgentResult;
    assert.equal(result.success, true, JSON.stringify(result));
    assert.equal(result.model, "sampling");
    assert.equal(result.execution!.stdout, "Hello\n");
    assert.match(prompts[0]!, /Count words in hello\.txt/);
  } finally {
    await client.close();
  }
});

Deno.test("with neither an API key nor sampling, the error names both options", async () => {
  await using server = await startServer();
  const reply = await server.client.callTool({
    name: "generate_and_execute",
    arguments: { task: "x" },
  });
  assert.equal(reply.isError, true);
  const text = (reply.content as { text: string }[])[0]!.text;
  assert.match(text, /OPENAI_API_KEY/);
  assert.match(text, /sampling/);
});

Deno.test("attack: SIGTERM answers a run waiting on its model, which is asked no more", async () => {
  // The model's reply is not an execution: a stopping server closed the call unanswered, and a
  // run whose script the stop cancelled went on asking the model to repair it (attacker 57).
  await using api = startFakeChatApi(["stall", "```python\nprint(1)\n```"]);
  await using server = await startServer({ env: modelEnv(api.baseURL) });
  const pending = server.client.callTool(
    { name: "generate_and_execute", arguments: { task: "Anything", max_attempts: 3 } },
    undefined,
    { timeout: 60_000 },
  );
  while (api.requests.length === 0) await delay(50);
  Deno.kill(server.pid, "SIGTERM");
  const result = (await pending).structuredContent as unknown as AgentResult;
  assert.equal(result.success, false);
  assert.match(result.message, /the server is shutting down/);
  assert.equal(api.requests.length, 1, "the model was asked once");
});
