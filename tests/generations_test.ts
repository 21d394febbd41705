/**
 * One table of behaviours, run by both generations of client over every transport: an SDK v1
 * client speaking 2025-11-25 and an SDK v2 client speaking 2026-07-28, each over stdio, HTTP and
 * stateless HTTP (`--stateless`). Real server processes, real sandboxes, a real upstream memory
 * server, a real chat-completions server on loopback for generate_and_execute.
 */
import assert from "node:assert/strict";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as StdioV1 } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport as HttpV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as HttpV2,
} from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioV2 } from "@modelcontextprotocol/client/stdio";
import type { ExecutionResult } from "../src/execution/execution_result.ts";
import type { AgentResult } from "../src/agent/agent.ts";
import { startFakeChatApi } from "./_fake_chat_api.ts";
import { startHttp } from "./_http.ts";
import { fetchThatAborts } from "../src/_util/fetch_that_aborts.ts";
import {
  childEnv,
  delay,
  hostPid,
  MAIN,
  ROOT,
  sandboxPids,
  SERVE_FLAGS,
  tcpSocketsOf,
  writeConfig,
} from "./_helpers.ts";

/** What every behaviour below needs of a client, whatever its generation and transport. */
interface Caller {
  callTool(
    name: string,
    args: Record<string, unknown>,
    options?: { signal?: AbortSignal; onprogress?: (p: { progress: number }) => void },
  ): Promise<{ content: unknown[]; structuredContent?: unknown; isError?: boolean }>;
  listTools(): Promise<string[]>;
  readResource(uri: string): Promise<string>;
  /** Log messages received (live output). */
  logs: string[];
  /** The serving host's PID (the parent of its sandboxes). */
  hostPid(): number;
  /** The tail of the server's log, at debug level (over HTTP; stdio's is not kept). */
  serverLog(): string;
  close(): Promise<void>;
}

type Transport = "stdio" | "http" | "stateless http";

interface Setup {
  config: string;
  env: Record<string, string>;
  /** Answers each approval question. */
  person: (message: string) => { action: string; content?: Record<string, unknown> };
}

const CALL_TIMEOUT = { timeout: 120_000 };

async function connectV1(transport: Transport, setup: Setup): Promise<Caller> {
  const client = new ClientV1({ name: "table-v1", version: "1" }, {
    capabilities: { elicitation: {} },
  });
  client.setRequestHandler(
    ElicitRequestSchema,
    (request: { params: { message: string } }) => setup.person(request.params.message) as never,
  );
  const logs: string[] = [];
  client.setNotificationHandler(
    LoggingMessageNotificationSchema,
    (n: { params: { data: unknown } }) => {
      logs.push(String(n.params.data));
    },
  );
  let pid: () => number;
  let stopHttp: () => PromiseLike<void> = () => Promise.resolve();
  let serverLog = () => "(not kept over stdio)";
  if (transport === "stdio") {
    const stdio = new StdioV1(stdioCommand(setup));
    await client.connect(stdio);
    // Read once a request was answered (a pinned v2 client sends none to connect).
    pid = () => hostPid(stdio.pid!);
  } else {
    const http = await startHttp(
      [...(transport === "stateless http" ? ["--stateless"] : []), "--log-level", "debug"],
      setup.env,
      setup.config,
    );
    await client.connect(new HttpV1(new URL(http.url)));
    pid = () => http.pid;
    stopHttp = () => http[Symbol.asyncDispose]();
    serverLog = () => http.stderr().slice(-3000);
  }
  await client.setLoggingLevel("info");
  return {
    callTool: (name, args, options = {}) =>
      client.callTool({ name, arguments: args }, undefined, {
        ...CALL_TIMEOUT,
        ...options,
      }) as never,
    listTools: async () => (await client.listTools()).tools.map((t: { name: string }) => t.name),
    readResource: async (uri) => {
      const { contents } = await client.readResource({ uri });
      return (contents[0] as { text: string }).text;
    },
    logs,
    hostPid: pid,
    serverLog: () => serverLog(),
    close: async () => {
      await client.close();
      await stopHttp();
    },
  };
}

async function connectV2(transport: Transport, setup: Setup): Promise<Caller> {
  const client = new ClientV2({ name: "table-v2", version: "1" }, {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode: { pin: "2026-07-28" } },
  });
  client.setRequestHandler(
    "elicitation/create",
    (request) => setup.person((request.params as { message: string }).message) as never,
  );
  const logs: string[] = [];
  client.setNotificationHandler("notifications/message", (n) => {
    logs.push(String(n.params.data));
  });
  let pid: () => number;
  let stopHttp: () => PromiseLike<void> = () => Promise.resolve();
  let serverLog = () => "(not kept over stdio)";
  if (transport === "stdio") {
    const stdio = new StdioV2(stdioCommand(setup));
    await client.connect(stdio);
    // Read once a request was answered (a pinned v2 client sends none to connect).
    pid = () => hostPid(stdio.pid!);
  } else {
    const http = await startHttp(
      [...(transport === "stateless http" ? ["--stateless"] : []), "--log-level", "debug"],
      setup.env,
      setup.config,
    );
    // See fetchThatAborts: Deno's own fetch can lose a cancel.
    await client.connect(new HttpV2(new URL(http.url), { fetch: fetchThatAborts }));
    pid = () => http.pid;
    stopHttp = () => http[Symbol.asyncDispose]();
    serverLog = () => http.stderr().slice(-3000);
  }
  assert.equal(client.getProtocolEra(), "modern");
  return {
    callTool: (name, args, options = {}) =>
      client.callTool({
        name,
        arguments: args,
        // 2026-07-28: the log level travels with each request.
        _meta: { "io.modelcontextprotocol/logLevel": "info" },
      }, { ...CALL_TIMEOUT, ...options }) as never,
    listTools: async () => (await client.listTools()).tools.map((t: { name: string }) => t.name),
    readResource: async (uri) => {
      const { contents } = await client.readResource({ uri });
      return (contents[0] as { text: string }).text;
    },
    logs,
    hostPid: pid,
    serverLog: () => serverLog(),
    close: async () => {
      await client.close();
      await stopHttp();
    },
  };
}

function stdioCommand(setup: Setup) {
  return {
    command: Deno.execPath(),
    args: ["run", ...SERVE_FLAGS, MAIN, "serve", "--config", setup.config],
    env: childEnv(setup.env),
    cwd: ROOT,
    stderr: "ignore" as const,
  };
}

const GENERATIONS = [
  { id: "v1", name: "SDK v1 client (2025-11-25)", connect: connectV1 },
  { id: "v2", name: "SDK v2 client (2026-07-28)", connect: connectV2 },
];
const TRANSPORTS: Transport[] = ["stdio", "http", "stateless http"];

const result = (reply: { structuredContent?: unknown }) =>
  reply.structuredContent as ExecutionResult;

/** Which cell of the table a behaviour runs in. */
interface Where {
  generation: string;
  transport: Transport;
}

/** The behaviours: each gets a fresh caller's view of one running server. */
const TABLE: {
  name: string;
  check(caller: Caller, where: Where): Promise<void>;
}[] = [
  {
    name: "lists its tools",
    async check(caller) {
      const names = await caller.listTools();
      for (
        const tool of [
          "execute_code",
          "search_tools",
          "get_tool_docs",
          "save_skill",
          "generate_and_execute",
        ]
      ) {
        assert.ok(names.includes(tool), `${tool} in ${names}`);
      }
    },
  },
  {
    name: "runs a script that calls an upstream tool",
    async check(caller) {
      const reply = await caller.callTool("execute_code", {
        code: "from mcp_tools import memory\ngraph = memory.read_graph()\nlen(graph['entities'])",
      });
      assert.equal(result(reply).success, true, JSON.stringify(result(reply).diagnostics));
      assert.equal(typeof result(reply).result, "number");
      assert.equal(result(reply).tool_calls.calls[0]!.tool, "read_graph");
    },
  },
  {
    name: "finds tools and their docs",
    async check(caller) {
      const found = await caller.callTool("search_tools", { query: "knowledge graph entities" });
      assert.match(JSON.stringify(found.content), /create_entities/);
      const docs = await caller.callTool("get_tool_docs", { names: ["memory.read_graph"] });
      assert.match(JSON.stringify(docs.content), /def read_graph/);
      assert.match(await caller.readResource("codemode://stubs/memory.pyi"), /def create_entities/);
    },
  },
  {
    name: "sends live output and progress while a script runs",
    async check(caller) {
      const progress: number[] = [];
      const reply = await caller.callTool("execute_code", {
        code: [
          "from mcp_tools import report_progress",
          "print('live line', flush=True)",
          "report_progress(1, 2, 'half')",
          "report_progress(2, 2, 'done')",
          // A client that reads the last report and the result in one chunk drops the report
          // (see liveFeedback's flush): the script goes on a little, as real ones do.
          "import time; time.sleep(0.3)",
        ].join("\n"),
      }, { onprogress: (p) => progress.push(p.progress) });
      assert.equal(result(reply).success, true, JSON.stringify(result(reply).diagnostics));
      assert.deepEqual(progress, [1, 2]);
      assert.ok(caller.logs.some((line) => line.includes("live line")), caller.logs.join("|"));
    },
  },
  {
    name: "cancels a running script and kills its sandbox",
    async check(caller) {
      const abort = new AbortController();
      // The script names its own process (Deno.pid, through js), so the test waits for exactly
      // that sandbox to go, not for any: the pool's own sandboxes come and go meanwhile.
      const running = caller.callTool("execute_code", {
        code: "import time, js\nprint('cancel-row-running', js.Deno.pid, flush=True)\n" +
          "time.sleep(60)",
        timeout_s: 90,
      }, { signal: abort.signal });
      // Cancel once the script runs (its own output says so), not while it waits for a sandbox:
      // on a loaded machine a boot can take longer than any fixed delay.
      const marker = () => caller.logs.find((l) => l.includes("cancel-row-running"));
      for (let i = 0; i < 1200 && !marker(); i++) await delay(100);
      const pid = Number(/cancel-row-running (\d+)/.exec(marker() ?? "")?.[1]);
      assert.ok(pid > 0, `the script never printed its marker and pid (not started in 120 s)`);
      assert.ok(sandboxPids(caller.hostPid()).includes(pid), `${pid} is not a sandbox of the host`);
      abort.abort();
      await assert.rejects(running);
      for (let i = 0; i < 300 && sandboxPids(caller.hostPid()).includes(pid); i++) {
        await delay(100);
      }
      assert.ok(
        !sandboxPids(caller.hostPid()).includes(pid),
        `the cancelled script's sandbox ${pid} still runs 30 s after the abort; logs: ${
          caller.logs.slice(-5).join(" | ")
        }; sockets:\n${
          tcpSocketsOf(caller.hostPid(), Deno.pid)
        }\nserver log:\n${caller.serverLog()}`,
      );
      const next = await caller.callTool("execute_code", { code: "'still serving'" });
      assert.equal(result(next).result, "still serving");
    },
  },
  {
    name: "keeps a persistent session across calls",
    async check(caller) {
      const first = await caller.callTool("execute_code", {
        code: "counter = 41",
        session_id: "new",
      });
      const id = result(first).session_id!;
      assert.match(id, /^s_/);
      const second = await caller.callTool("execute_code", { code: "counter + 1", session_id: id });
      assert.equal(result(second).result, 42);
      const listed = await caller.callTool("list_sessions", {});
      assert.match(JSON.stringify(listed.structuredContent ?? listed.content), new RegExp(id));
      await caller.callTool("close_session", { session_id: id });
    },
  },
  {
    name: "saves, lists and deletes a skill",
    async check(caller) {
      const name = `count_${crypto.randomUUID().slice(0, 6)}`;
      const saved = await caller.callTool("save_skill", {
        name,
        description: "Counts the entities in the memory graph.",
        code:
          `from mcp_tools import memory\n\ndef ${name}():\n    return len(memory.read_graph()['entities'])\n`,
      });
      assert.notEqual(saved.isError, true, JSON.stringify(saved.content));
      const run = await caller.callTool("execute_code", {
        code: `from skills import ${name}\n${name}()`,
      });
      assert.equal(typeof result(run).result, "number", JSON.stringify(result(run).diagnostics));
      const listed = await caller.callTool("list_skills", {});
      assert.match(JSON.stringify(listed.content), new RegExp(name));
      await caller.callTool("delete_skill", { name });
    },
  },
  {
    name: "writes and runs a script with the model API",
    async check(caller) {
      const reply = await caller.callTool("generate_and_execute", {
        task: "Print the number six",
        max_attempts: 1,
      });
      const agent = reply.structuredContent as AgentResult;
      assert.equal(agent.success, true, JSON.stringify(agent));
      assert.equal(agent.execution!.stdout, "6\n");
    },
  },
  {
    name: "asks a person before an approval-gated call, and runs it when approved",
    async check(caller) {
      const reply = await caller.callTool("execute_code", {
        code: [
          "from mcp_tools import memory",
          "print('once')",
          `memory.create_entities(entities=[{'name': '${crypto.randomUUID()}', 'entityType': 't', 'observations': []}])`,
          "'created'",
        ].join("\n"),
      });
      assert.equal(result(reply).result, "created", JSON.stringify(result(reply).diagnostics));
      assert.equal(result(reply).stdout, "once\n", "nothing ran twice");
      assert.equal(result(reply).tool_calls.calls[0]!.approval, "approved");
    },
  },
];

/** One server config for the whole table: memory upstream, approvals on memory.create_*. */
async function tableSetup(modelURL: string): Promise<Setup & { dir: string }> {
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(`${dir}/permissions`);
  const profile = JSON.parse(await Deno.readTextFile(`${ROOT}permissions/default.json`));
  profile.approve = ["memory.create_*"];
  await Deno.writeTextFile(`${dir}/permissions/default.json`, JSON.stringify(profile));
  const fixtures = JSON.parse(await Deno.readTextFile(`${ROOT}tests/fixtures/servers.json`));
  const config = await writeConfig(dir, {
    servers: { memory: fixtures.servers.memory },
    settings: {
      pool_size: 1,
      permissions_dir: `${dir}/permissions`,
      skills_dir: `${dir}/skills`,
    },
  });
  return {
    dir,
    config,
    env: {
      TEST_MEMORY_DIR: dir,
      TEST_FS_DIR: dir,
      TEST_SECRET: "x",
      OPENAI_API_KEY: "test-key",
      OPENAI_BASE_URL: modelURL,
      CODEMODE_MODEL: "scripted-model",
    },
    person: () => ({ action: "accept", content: { approve: true } }),
  };
}

for (const generation of GENERATIONS) {
  for (const transport of TRANSPORTS) {
    Deno.test(`the behaviour table: ${generation.name} over ${transport}`, async (t) => {
      await using api = startFakeChatApi(["```python\nprint(6)\n```"]);
      const setup = await tableSetup(api.baseURL);
      const caller = await generation.connect(transport, setup);
      try {
        for (const row of TABLE) {
          await t.step(row.name, () => row.check(caller, { generation: generation.id, transport }));
        }
      } finally {
        await caller.close();
        await Deno.remove(setup.dir, { recursive: true });
      }
    });
  }
}
