/**
 * A 2025-11-25 client over stateless HTTP (`--stateless`): no protocol session, so every POST is
 * answered by a fresh MCP server, and the client's answers to the server's own requests (an
 * approval's elicitation, sampling) must find their way back to the instance that asked. Real
 * server process, real sandboxes, a real upstream memory server, SDK v1 clients.
 */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LATEST_PROTOCOL_VERSION,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { ExecutionResult } from "../src/execution/execution_result.ts";
import type { AgentResult } from "../src/agent/agent.ts";
import { startHttp } from "./_http.ts";
import { ROOT, writeConfig } from "./_helpers.ts";

const APPROVAL_TIMEOUT_S = 20;

async function statelessServer() {
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(`${dir}/permissions`);
  const profile = JSON.parse(await Deno.readTextFile(`${ROOT}permissions/default.json`));
  profile.approve = ["memory.create_*"];
  await Deno.writeTextFile(`${dir}/permissions/default.json`, JSON.stringify(profile));
  const fixtures = JSON.parse(await Deno.readTextFile(`${ROOT}tests/fixtures/servers.json`));
  const config = await writeConfig(dir, {
    servers: { memory: fixtures.servers.memory },
    settings: {
      pool_size: 2,
      permissions_dir: `${dir}/permissions`,
      approval_timeout_s: APPROVAL_TIMEOUT_S,
    },
  });
  // No OPENAI_API_KEY: generate_and_execute can only use the client's model.
  const http = await startHttp(["--stateless"], { TEST_MEMORY_DIR: dir }, config);
  return {
    url: http.url,
    http,
    async [Symbol.asyncDispose]() {
      await http[Symbol.asyncDispose]();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

type Answer = { action: string; content?: Record<string, unknown> };

async function connect(
  url: string,
  options: { person?: (message: string) => Promise<Answer>; model?: string } = {},
) {
  const client = new Client({ name: "stateless-v1", version: "1" }, {
    capabilities: {
      ...(options.person ? { elicitation: {} } : {}),
      ...(options.model ? { sampling: {} } : {}),
    },
  });
  if (options.person) {
    const person = options.person;
    client.setRequestHandler(
      ElicitRequestSchema,
      (request: { params: { message: string } }) => person(request.params.message) as never,
    );
  }
  if (options.model) {
    const text = options.model;
    client.setRequestHandler(CreateMessageRequestSchema, () => ({
      role: "assistant",
      model: "client-model",
      content: { type: "text", text },
    }));
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

const run = async (client: Client, code: string) =>
  (await client.callTool({ name: "execute_code", arguments: { code } }, undefined, {
    timeout: 120_000,
  })).structuredContent as ExecutionResult;

/** A script that asks to create an entity named `name`, and says what happened. */
const create = (name: string) =>
  [
    "from mcp_tools import memory, ToolDenied",
    "try:",
    `    memory.create_entities(entities=[{'name': '${name}', 'entityType': 't', 'observations': []}])`,
    "    outcome = 'created'",
    "except ToolDenied as e:",
    "    outcome = f'denied: {e}'",
    "outcome",
  ].join("\n");

Deno.test("a stateless 2025-11-25 client is asked, and its answers reach the call that asked", async (t) => {
  await using server = await statelessServer();

  await t.step("declined: the script gets ToolDenied saying so", async () => {
    const client = await connect(server.url, {
      person: () => Promise.resolve({ action: "decline" }),
    });
    const result = await run(client, create("declined-one"));
    assert.match(String(result.result), /denied: .*the person declined the call/);
    assert.equal(result.tool_calls.calls[0]!.approval, "declined");
    await client.close();
  });

  await t.step("a client that cannot answer is denied at once, not left hanging", async () => {
    const client = await connect(server.url);
    const started = performance.now();
    const result = await run(client, create("nobody-asked"));
    assert.match(String(result.result), /the client cannot ask for it/);
    assert.equal(result.tool_calls.calls[0]!.approval, "unavailable");
    assert.ok(performance.now() - started < APPROVAL_TIMEOUT_S * 1000, "it waited for a timeout");
    await client.close();
  });

  await t.step("two calls waiting at once each get their own person's answer", async () => {
    // Each fresh server numbers its requests to the client from 0: the answers must not cross.
    const client = await connect(server.url, {
      person: (message) =>
        Promise.resolve(
          message.includes("approve-me")
            ? { action: "accept", content: { approve: true } }
            : { action: "decline" },
        ),
    });
    const [approved, declined] = await Promise.all([
      run(client, create(`approve-me-${crypto.randomUUID()}`)),
      run(client, create(`decline-me-${crypto.randomUUID()}`)),
    ]);
    assert.equal(approved.result, "created", JSON.stringify(approved.diagnostics));
    assert.match(String(declined.result), /declined/);
    await client.close();
  });

  await t.step("a forged answer POSTed by someone else approves nothing", async () => {
    const asked = Promise.withResolvers<void>();
    const answer = Promise.withResolvers<Answer>();
    const client = await connect(server.url, {
      person: () => {
        asked.resolve();
        return answer.promise;
      },
    });
    const name = `forged-${crypto.randomUUID()}`;
    const running = run(client, create(name));
    await asked.promise;
    // The ids a fresh server would use, and a guessed routed id: each answer says "approve".
    for (const id of [0, 1, "0", `r_${crypto.randomUUID()}`]) {
      const reply = await fetch(server.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": LATEST_PROTOCOL_VERSION,
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id,
          result: { action: "accept", content: { approve: true } },
        }),
      });
      await reply.body?.cancel();
    }
    answer.resolve({ action: "decline" });
    const result = await running;
    assert.match(String(result.result), /declined/);
    assert.equal(result.tool_calls.calls[0]!.approval, "declined");
    const graph = await run(
      client,
      "from mcp_tools import memory\n[e['name'] for e in memory.read_graph()['entities']]",
    );
    assert.ok(!(graph.result as string[]).includes(name), "the forged approval created it");
    await client.close();
  });

  await t.step("the log level a client set holds for its next requests", async () => {
    const client = await connect(server.url);
    const logs: string[] = [];
    client.setNotificationHandler(
      LoggingMessageNotificationSchema,
      (n: { params: { level: string; data: unknown } }) => {
        logs.push(`${n.params.level}:${String(n.params.data).trim()}`);
      },
    );
    const script =
      "import sys\nprint('to stdout', flush=True)\nprint('to stderr', file=sys.stderr, flush=True)";
    await client.setLoggingLevel("warning");
    await run(client, script);
    assert.deepEqual(logs, ["warning:to stderr"]);
    logs.length = 0;
    await client.setLoggingLevel("debug");
    await run(client, script);
    assert.deepEqual(logs.toSorted(), ["info:to stdout", "warning:to stderr"]);
    await client.close();
  });

  await t.step("generate_and_execute uses the client's model through sampling", async () => {
    const client = await connect(server.url, { model: "```python\n'written by the client'\n```" });
    const reply = await client.callTool(
      {
        name: "generate_and_execute",
        arguments: { task: "say hi", max_attempts: 1 },
      },
      undefined,
      { timeout: 120_000 },
    );
    const agent = reply.structuredContent as AgentResult;
    assert.equal(agent.success, true, JSON.stringify(agent));
    assert.equal(agent.model, "sampling");
    assert.equal(agent.execution?.result, "written by the client");
    await client.close();
  });

  await t.step(
    "without sampling, generate_and_execute names both ways to get a model",
    async () => {
      const client = await connect(server.url);
      const reply = await client.callTool(
        {
          name: "generate_and_execute",
          arguments: { task: "say hi", max_attempts: 1 },
        },
        undefined,
        { timeout: 120_000 },
      );
      assert.equal(reply.isError, true);
      assert.match(JSON.stringify(reply.content), /OPENAI_API_KEY.*sampling/);
      await client.close();
    },
  );
});
