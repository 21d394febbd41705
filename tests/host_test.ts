/**
 * The MCP host in process: `createHost` driven by an SDK client over the in-memory transport,
 * with the smallest real dependencies (an empty catalog, a skill store in a temporary folder, a
 * session manager). The executor is a stand-in that records what it was asked: the executor
 * itself needs sandbox processes, which tests/execute_code_test.ts runs end to end.
 */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { type ExecutionResult, formatResultText } from "../src/execution/execution_result.ts";
import type { ExecuteOptions, ExecuteRequest, Executor } from "../src/execution/executor.ts";
import { Catalog } from "../src/catalog/catalog.ts";
import { createHost } from "../src/host/server.ts";
import { liveFeedback, MAX_PROGRESS_TOKEN_CHARS } from "../src/host/tools/execute_code.ts";
import { testHostDeps } from "./_host.ts";
import type { Sandbox } from "../src/sandbox/launcher.ts";
import { DEFAULT_LIMITS, type Profile } from "../src/sandbox/profile.ts";
import { SessionManager } from "../src/sandbox/sessions.ts";

const success: ExecutionResult = {
  success: true,
  stdout: "hello\n",
  stderr: "",
  result: { answer: 42 },
  duration_ms: 12.5,
  profile: "work",
  tool_calls: { count: 1, calls: [{ server: "fs", tool: "read", outcome: "ok", duration_ms: 3 }] },
  protocol_violations: 0,
  outputs: [],
  diagnostics: null,
};

const timedOut: ExecutionResult = {
  ...success,
  success: false,
  result: null,
  tool_calls: { count: 0, calls: [] },
  diagnostics: { error_type: "TIMEOUT", reported_by: "host", message: "The script ran past 2 s" },
};

const profile: Profile = {
  name: "work",
  description: "",
  folders: [],
  net: [],
  allowed_tools: ["*"],
  approve: [],
  limits: { ...DEFAULT_LIMITS },
};

type Received = { request: ExecuteRequest; options: ExecuteOptions | undefined };

/** A host over a recording executor, with a connected client. */
async function startHost(
  answer: (
    request: ExecuteRequest,
    options: ExecuteOptions | undefined,
    sessions: SessionManager,
  ) => Promise<ExecutionResult> = () => Promise.resolve(success),
  started: Promise<void> = Promise.resolve(),
) {
  const received: Received[] = [];
  const executor: Executor = {
    execute: (request, options) => {
      received.push({ request, options });
      return answer(request, options, sessions);
    },
  };
  const { deps, sessions, listeners, setDescription, cleanup } = await testHostDeps(
    executor,
    started,
  );
  const host = createHost(deps, { era: "legacy", owner: crypto.randomUUID() });
  const [clientEnd, serverEnd] = InMemoryTransport.createLinkedPair();
  await host.server.connect(serverEnd);
  const client = new Client({ name: "host-test", version: "1.0.0" });
  await client.connect(clientEnd);
  return {
    client,
    host,
    sessions,
    received,
    listeners,
    setDescription,
    close: async () => {
      await host.close();
      await client.close();
      await cleanup();
    },
  };
}

interface ToolResult {
  content: { type: string; text?: string; data?: string; mimeType?: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

async function callExecute(client: Client, args: Record<string, unknown>): Promise<ToolResult> {
  return await client.callTool({ name: "execute_code", arguments: args }) as ToolResult;
}

Deno.test("tools/list shows execute_code with its input schema and the usable profiles as an enum", async () => {
  const h = await startHost();
  const { tools } = await h.client.listTools();
  const names = tools.map((t: { name: string }) => t.name);
  for (const name of ["execute_code", "search_tools", "list_sessions", "save_skill"]) {
    assert.ok(names.includes(name), `${name} in ${names}`);
  }
  const tool = tools.find((t: { name: string }) => t.name === "execute_code")!;
  assert.equal(tool.description, "Run Python (test description).");
  const schema = tool.inputSchema as {
    required: string[];
    properties: Record<string, { type?: string; enum?: string[]; pattern?: string }>;
  };
  assert.deepEqual(schema.required, ["code"]);
  assert.deepEqual(Object.keys(schema.properties).sort(), [
    "code",
    "files",
    "packages",
    "profile",
    "session_id",
    "timeout_s",
  ]);
  assert.equal(schema.properties.code!.type, "string");
  assert.deepEqual(schema.properties.profile!.enum, ["default", "work"]);
  assert.equal(schema.properties.session_id!.pattern, "^[A-Za-z0-9_-]{1,64}$");
  assert.ok(tool.outputSchema, "structured results are announced");
  await h.close();
});

Deno.test("execute_code passes the caller's arguments to the executor with this connection as owner", async () => {
  const h = await startHost();
  const args = {
    code: "print('hello')",
    profile: "work",
    timeout_s: 5,
    session_id: "s-1",
    packages: ["demo"],
    files: { "in.txt": "x", "b.bin": { base64: "AAAA" } },
  };
  await callExecute(h.client, args);
  await callExecute(h.client, { code: "2" });
  assert.equal(h.received.length, 2);
  const [first, second] = h.received;
  assert.deepEqual(first!.request, args);
  assert.deepEqual(second!.request, { code: "2" });
  const owner = first!.options?.owner;
  assert.equal(typeof owner, "string");
  assert.ok(owner!.length > 0);
  assert.equal(second!.options?.owner, owner, "the same owner for the same connection");
  assert.ok(first!.options?.signal instanceof AbortSignal, "the request's cancellation signal");

  const other = await startHost();
  await callExecute(other.client, { code: "3" });
  assert.notEqual(other.received[0]!.options?.owner, owner, "another connection, another owner");
  await other.close();
  await h.close();
});

Deno.test("execute_code returns the executor's result as structured content and text", async () => {
  const h = await startHost();
  const r = await callExecute(h.client, { code: "print('hello')" });
  assert.equal(r.isError, false);
  assert.deepEqual(r.structuredContent, success);
  assert.deepEqual(r.content, [{ type: "text", text: formatResultText(success) }]);
  assert.match(r.content[0]!.text!, /^OK \(12\.5 ms\)\n--- stdout ---\nhello/);
  await h.close();
});

Deno.test("execute_code marks a failed execution isError, with its diagnostics", async () => {
  const h = await startHost(() => Promise.resolve(timedOut));
  const r = await callExecute(h.client, { code: "while True: pass", timeout_s: 2 });
  assert.equal(r.isError, true);
  assert.deepEqual(r.structuredContent?.diagnostics, timedOut.diagnostics);
  assert.match(r.content[0]!.text!, /--- error: TIMEOUT ---\nThe script ran past 2 s$/);
  await h.close();
});

Deno.test("execute_code returns an image the script wrote as image content, listed without its data", async () => {
  const png = { name: "plot.png", size: 3, mime_type: "image/png", data: "AAAA" };
  const h = await startHost(() => Promise.resolve({ ...success, outputs: [png] }));
  const r = await callExecute(h.client, { code: "1" });
  assert.deepEqual(r.content[1], { type: "image", data: "AAAA", mimeType: "image/png" });
  assert.deepEqual(r.structuredContent?.outputs, [
    { name: "plot.png", size: 3, mime_type: "image/png" },
  ]);
  await h.close();
});

Deno.test("execute_code refuses invalid arguments before the executor is called", async (t) => {
  const h = await startHost();
  const table: [string, Record<string, unknown>, RegExp][] = [
    ["code missing", { profile: "work" }, / code: /],
    ["code not a string", { code: 5 }, / code: /],
    ["a session_id with a bad character", { code: "1", session_id: "bad id!" }, / session_id: /],
    [
      "a profile callers may not use",
      { code: "1", profile: "root" },
      / profile: expected one of "default", "work": .*\(settings\.allowed_profiles\)/,
    ],
    [
      "a profile's typo",
      { code: "1", profile: "wrk" },
      /\(settings\.allowed_profiles\); did you mean "work"\?/,
    ],
    ["a negative timeout", { code: "1", timeout_s: -1 }, / timeout_s: /],
    ["too many packages", { code: "1", packages: Array(21).fill("p") }, / packages: /],
  ];
  for (const [what, args, field] of table) {
    await t.step(what, async () => {
      const r = await callExecute(h.client, args);
      assert.equal(r.isError, true);
      const text = r.content[0]!.text!;
      assert.match(text, /^Input validation error: Invalid arguments for tool execute_code: /);
      assert.match(text, field);
    });
  }
  assert.equal(h.received.length, 0, "the executor never saw them");
  await h.close();
});

Deno.test("a catalog change updates the execute_code description; close() unsubscribes", async () => {
  const h = await startHost();
  assert.equal(h.listeners.size, 1);
  h.setDescription("Run Python; tools: notes.greet");
  for (const listener of h.listeners) listener();
  const { tools } = await h.client.listTools();
  const tool = tools.find((t: { name: string }) => t.name === "execute_code")!;
  assert.equal(tool.description, "Run Python; tools: notes.greet");
  await h.host.close();
  assert.equal(h.listeners.size, 0, "a closed host leaves no listener behind");
  await h.close(); // a second close() is harmless
});

Deno.test("list_sessions shows the owner's sessions only; they outlive one MCP server instance", async () => {
  // The stand-in executor opens a session as the real one would, for the owner it is given.
  let opened: { id: string; sandbox: Sandbox } | undefined;
  const h = await startHost(async (_request, options, sessions) => {
    opened = await sessions.open(options!.owner!, profile);
    sessions.release(options!.owner!, opened.id, false);
    return success;
  });
  const others = await h.sessions.open("another-connection", profile);
  await callExecute(h.client, { code: "x = 1", session_id: "new" });
  const listed = await h.client.callTool({ name: "list_sessions", arguments: {} }) as ToolResult;
  assert.deepEqual(
    (listed.structuredContent?.sessions as { session_id: string }[]).map((s) => s.session_id),
    [opened!.id],
  );
  // A stateless HTTP caller's sessions outlive the instance that served one request; the
  // connection or caller that owns them closes them (commands.ts, http_server.ts).
  await h.host.close();
  assert.equal((opened!.sandbox as unknown as { disposed: boolean }).disposed, false);
  assert.equal((others.sandbox as unknown as { disposed: boolean }).disposed, false);
  assert.equal(h.sessions.list("another-connection").length, 1);
  await h.close();
});

Deno.test("the handshake is answered at once; tools/list waits for the start-up, and says when it failed", async () => {
  const starting = Promise.withResolvers<void>();
  // connect() is the whole handshake: it must not wait for the start-up.
  const h = await startHost(undefined, starting.promise);
  try {
    let listed = false;
    const list = h.client.listTools();
    list.then(() => listed = true, () => {});
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(listed, false, "tools/list was answered before the start-up finished");
    starting.resolve();
    const tools: { name: string }[] = (await list).tools;
    assert.ok(tools.some((t) => t.name === "execute_code"));
  } finally {
    await h.close();
  }
  const failed = Promise.reject(new Error("no snapshot"));
  failed.catch(() => {}); // the host answers it per request
  const broken = await startHost(undefined, failed);
  try {
    await assert.rejects(broken.client.listTools(), /failed to start \(no snapshot\)/);
  } finally {
    await broken.close();
  }
});

Deno.test("attack: a long progress token gets no progress (each report would carry it again)", async () => {
  const sent: unknown[] = [];
  const channel = (progressToken: string) => ({
    progressToken,
    log: () => Promise.resolve(),
    notify: (n: unknown) => {
      sent.push(n);
      return Promise.resolve();
    },
  });
  const long = liveFeedback(channel("t".repeat(MAX_PROGRESS_TOKEN_CHARS + 1)));
  assert.equal(long.onProgress, undefined);
  const short = liveFeedback(channel("t".repeat(MAX_PROGRESS_TOKEN_CHARS)));
  short.onProgress!({ progress: 1 });
  await short.flush();
  assert.equal(sent.length, 1);
});

Deno.test("a call of a tool this server lacks says what to call instead", async (t) => {
  const { deps, cleanup } = await testHostDeps(
    { execute: () => Promise.resolve(success) },
    Promise.resolve(),
  );
  const tool = (server: string, name: string) => ({
    server,
    name,
    inputSchema: { type: "object" as const, properties: { path: { type: "string" } } },
  });
  const catalog = new Catalog([
    {
      server: "desktop-commander",
      description: "",
      tools: [tool("desktop-commander", "read_file")],
    },
    { server: "filesystem", description: "", tools: [tool("filesystem", "read_file")] },
  ]);
  deps.catalog = () => catalog;
  const host = createHost(deps, { era: "legacy", owner: crypto.randomUUID() });
  const [clientEnd, serverEnd] = InMemoryTransport.createLinkedPair();
  await host.server.connect(serverEnd);
  const client = new Client({ name: "host-test", version: "1.0.0" });
  await client.connect(clientEnd);
  const refusal = async (name: string) => {
    const error = await client.callTool({ name, arguments: {} }).then(
      () => assert.fail(`${name.slice(0, 40)} was called`),
      (e: Error & { code?: number }) => e,
    );
    assert.equal(error.code, -32602);
    return error.message;
  };
  await t.step("an upstream tool, as Claude Code spells it: the Python call", async () => {
    const message = await refusal("mcp__filesystem__read_file");
    assert.match(message, /upstream server "filesystem"/);
    assert.match(message, /from mcp_tools import filesystem\\nfilesystem\.read_file\(\.\.\.\)/);
  });
  await t.step("an upstream tool by its bare name", async () => {
    assert.match(await refusal("read_file"), /execute_code .*desktop_commander\.read_file/);
  });
  await t.step("a typo of its own: the tool meant, and its tools", async () => {
    const message = await refusal("execute_cod");
    assert.match(message, /did you mean "execute_code"\?/);
    assert.match(message, /This server's tools: execute_code, search_tools, get_tool_docs/);
  });
  await t.step(
    "attack: a name of 1 MB is quoted in 64 characters, and answered at once",
    async () => {
      const started = performance.now();
      const message = await refusal("x".repeat(1 << 20));
      assert.ok(message.length < 1000, `${message.length} characters`);
      assert.ok(message.includes(`"${"x".repeat(64)}..."`));
      assert.ok(performance.now() - started < 5000);
    },
  );
  await t.step("its own tools are called as before", async () => {
    const result = await client.callTool({ name: "execute_code", arguments: { code: "1" } });
    assert.equal(result.isError, false);
  });
  await host.close();
  await client.close();
  await cleanup();
});
