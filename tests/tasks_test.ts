/**
 * Long executions as Tasks (the io.modelcontextprotocol/tasks extension of MCP 2026-07-28),
 * driven by the extension's official client (`@modelcontextprotocol/ext-tasks`) on an SDK v2
 * client over HTTP, and by raw JSON-RPC over stdio where a test needs two callers. Real server,
 * real sandboxes, a real upstream memory server for the approval inside a task.
 */
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createTaskSessionFromClient } from "@modelcontextprotocol/ext-tasks/client";
import type { ExecutionResult } from "../src/execution/execution_result.ts";
import { TaskStore } from "../src/host/tasks.ts";
import { startHttp } from "./_http.ts";
import { delay, ROOT, sandboxPids, writeConfig } from "./_helpers.ts";
import { envelope, MODERN, postModern, rawStdio, TASKS } from "./_modern.ts";

/**
 * A config with the memory server, tasks after 1 s, and an approval on memory.create_*;
 * `settings` overrides.
 */
async function tasksConfig(settings: Record<string, unknown> = {}) {
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(`${dir}/permissions`);
  const profile = JSON.parse(await Deno.readTextFile(`${ROOT}permissions/default.json`));
  profile.approve = ["memory.create_*"];
  await Deno.writeTextFile(`${dir}/permissions/default.json`, JSON.stringify(profile));
  const servers = JSON.parse(await Deno.readTextFile(`${ROOT}tests/fixtures/servers.json`));
  const path = await writeConfig(dir, {
    servers: { memory: servers.servers.memory },
    settings: { pool_size: 1, permissions_dir: `${dir}/permissions`, task_after_s: 1, ...settings },
  });
  return { path, dir, env: { TEST_MEMORY_DIR: dir, TEST_FS_DIR: dir, TEST_SECRET: "x" } };
}

/** The extension's client on an SDK v2 client, its task traffic posted straight to `url`. */
async function tasksClient(url: string, onElicit?: (message: string) => Record<string, unknown>) {
  const client = new Client({ name: "tasks-test", version: "1" }, {
    capabilities: { ...TASKS, elicitation: { form: {} } } as never,
    versionNegotiation: { mode: { pin: MODERN } },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  assert.equal(client.getProtocolEra(), "modern");
  let id = 0;
  const session = createTaskSessionFromClient(client, {
    endpointId: "code-mode",
    rawDispatch: (async (bare: Record<string, unknown>) => {
      const request = { jsonrpc: "2.0", id: `raw-${++id}`, ...bare };
      return await postModern(url, request);
    }) as never,
    v2RequestFraming: {
      protocolVersion: MODERN,
      clientInfo: { name: "tasks-test", version: "1" },
      clientCapabilities: { ...TASKS, elicitation: { form: {} } },
    },
    onInputRequest: ((request: { kind: string; params: { message: string } }) => {
      assert.equal(request.kind, "elicitation");
      assert.ok(onElicit, "no question was expected");
      return Promise.resolve(onElicit(request.params.message));
    }) as never,
  });
  return {
    session,
    async [Symbol.asyncDispose]() {
      await session.close();
      await client.close();
    },
  };
}

/** Why an outcome failed, for an assertion message. */
function failure(outcome: { status: string; error?: Error }): string {
  const cause = (outcome.error as { cause?: unknown } | undefined)?.cause;
  return `${outcome.status}: ${outcome.error?.message} ${cause ?? ""}`;
}

const structured = (result: unknown) =>
  (result as { structuredContent: ExecutionResult }).structuredContent;

Deno.test("tasks: a two-minute script runs as a task and is polled to completion", async () => {
  const { path, dir, env } = await tasksConfig();
  await using server = await startHttp([], env, path);
  await using tasks = await tasksClient(server.url);
  const code = [
    "import time",
    "for minute in range(12):",
    "    print('at', minute * 10, 's', flush=True)",
    "    time.sleep(10)",
    "'two minutes'",
  ].join("\n");
  const execution = await tasks.session.callTool("execute_code", { code, timeout_s: 150 });
  assert.equal(execution.kind, "task", "a call outlasting task_after_s becomes a task");
  const seen: string[] = [];
  const { outcome } = await execution.settle({
    onEvent: (event) => {
      if (event.type === "task") seen.push(`${event.task.status}: ${event.task.statusMessage}`);
    },
  });
  assert.equal(outcome.status, "completed", failure(outcome));
  const result = structured((outcome as { result: unknown }).result);
  assert.equal(result.success, true, JSON.stringify(result.diagnostics));
  assert.equal(result.result, "two minutes");
  assert.ok(result.duration_ms >= 120_000, `ran ${result.duration_ms} ms`);
  assert.equal(result.stdout.match(/^at /gm)?.length, 12, result.stdout);
  assert.ok(
    seen.some((s) => /^working: .*output so far:\n(.*\n)*at 60 s/.test(s)),
    seen.join("\n"),
  );
  await Deno.remove(dir, { recursive: true });
});

Deno.test("tasks: cancelling one kills its sandbox", async () => {
  const { path, dir, env } = await tasksConfig();
  await using server = await startHttp([], env, path);
  await using tasks = await tasksClient(server.url);
  const execution = await tasks.session.callTool("execute_code", {
    code: "import time\nprint('started', flush=True)\ntime.sleep(60)\nprint('not cancelled')",
    timeout_s: 90,
  });
  assert.equal(execution.kind, "task");
  const taskId = execution.handle!.taskId;
  let id = 0;
  const taskNow = async () =>
    (await postModern(server.url, {
      jsonrpc: "2.0",
      id: id++,
      method: "tasks/get",
      params: { taskId, _meta: envelope() },
    })).result as { status: string; statusMessage?: string };
  // With a cold cache the call becomes a task while it still waits for a sandbox; the script's
  // first line says it runs in one. Its replacement is spawned a moment after the hand-off.
  let started = false;
  for (let i = 0; i < 100 && !started; i++) {
    started = (await taskNow()).statusMessage?.includes("started") ?? false;
    if (!started) await delay(200);
  }
  assert.ok(started, "the script started");
  let running = sandboxPids(server.pid);
  for (let i = 0; i < 50 && running.length < 2; i++) {
    await delay(200);
    running = sandboxPids(server.pid);
  }
  assert.equal(running.length, 2, "the task's sandbox and a warm one");
  await execution.cancel();
  let status = "";
  for (let i = 0; i < 50 && status !== "cancelled"; i++) {
    await delay(200);
    status = (await taskNow()).status;
  }
  assert.equal(status, "cancelled");
  let left = sandboxPids(server.pid);
  for (let i = 0; i < 50 && left.length > 1; i++) {
    await delay(200);
    left = sandboxPids(server.pid);
  }
  assert.equal(left.length, 1, "only the warm sandbox is left");
  assert.ok(
    running.filter((pid) => !left.includes(pid)).length === 1,
    "the task's own sandbox is the one gone",
  );
  await Deno.remove(dir, { recursive: true });
});

Deno.test("tasks: a question inside a task is asked with tasks/get and answered with tasks/update", async () => {
  const { path, dir, env } = await tasksConfig();
  await using server = await startHttp([], env, path);
  const asked: string[] = [];
  await using tasks = await tasksClient(server.url, (message) => {
    asked.push(message);
    return { action: "accept", content: { approve: true } };
  });
  const code = [
    "import time",
    "from mcp_tools import memory",
    "print('before', flush=True)",
    "time.sleep(2)",
    "memory.create_entities(entities=[{'name': 'in-task', 'entityType': 't', 'observations': []}])",
    "print('created')",
  ].join("\n");
  const execution = await tasks.session.callTool("execute_code", { code });
  assert.equal(execution.kind, "task");
  const statuses: string[] = [];
  const { outcome } = await execution.settle({
    onEvent: (event) => void (event.type === "task" && statuses.push(event.task.status)),
  });
  assert.equal(outcome.status, "completed", failure(outcome));
  const result = structured((outcome as { result: unknown }).result);
  assert.equal(result.success, true, JSON.stringify(result.diagnostics));
  assert.equal(result.stdout.match(/before/g)?.length, 1, "nothing ran twice");
  assert.match(result.stdout, /created/);
  assert.equal(asked.length, 1);
  assert.match(asked[0]!, /memory\.create_entities/);
  assert.ok(statuses.includes("input_required"), statuses.join(","));
  assert.equal(result.tool_calls.calls[0]!.approval, "approved");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("tasks: a question withdrawn because its script ended does not hold the task's result", async () => {
  const { path, dir, env } = await tasksConfig({ task_after_s: 0, approval_timeout_s: 120 });
  await using connection = rawStdio(path, env);
  const caps = { ...TASKS, elicitation: { form: {} } };
  // The script asks and ends at once; its output keeps the host busy, so the call and the end
  // reach it in one read: the question is asked (the task shows it), then withdrawn.
  const code = [
    "import _codemode_host",
    "for i in range(600): print('y' * 100)",
    "pending = _codemode_host.call_tool('memory', 'create_entities', '{\"entities\": []}')",
    "'done'",
  ].join("\n");
  // A question still live (the script, frozen, waits for it) is declined once it has stood 5 s;
  // one the script's end withdrew must not need that: its task goes on to the result alone.
  let withdrawnSeen = false;
  for (let attempt = 0; attempt < 20 && !withdrawnSeen; attempt++) {
    const reply = await connection.request("tools/call", {
      name: "execute_code",
      arguments: { code },
    }, caps);
    const task = reply.result as { resultType: string; taskId?: string };
    assert.equal(task.resultType, "task", JSON.stringify(reply));
    let status: { status: string; result?: { structuredContent: ExecutionResult } } | undefined;
    let askedSince: number | undefined;
    let answered = false;
    while (true) {
      const got = await connection.request("tasks/get", { taskId: task.taskId }, caps);
      status = got.result as typeof status;
      if (status!.status !== "input_required" && status!.status !== "working") break;
      if (status!.status === "input_required") askedSince ??= Date.now();
      if (!answered && askedSince !== undefined && Date.now() - askedSince > 5000) {
        answered = true;
        await connection.request("tasks/update", {
          taskId: task.taskId,
          inputResponses: { "1.approval": { action: "decline" } },
        }, caps);
      }
      await delay(200);
    }
    assert.equal(status!.status, "completed", JSON.stringify(status));
    const call = status!.result!.structuredContent.tool_calls.calls[0];
    withdrawnSeen = call?.approval === "cancelled";
    if (withdrawnSeen) {
      assert.equal(call!.error, "the script ended before the call was decided");
      assert.equal(answered, false, "the task waited for an answer to a withdrawn question");
    } else {
      assert.equal(call?.approval, "declined", JSON.stringify(call));
    }
  }
  assert.ok(withdrawnSeen, "no attempt ended its script with the question open");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("tasks: a task is its caller's, and a client without the extension gets its result", async () => {
  const { path, dir, env } = await tasksConfig();
  await using first = rawStdio(path, env);
  await using second = rawStdio(path, env);
  const slow = { name: "execute_code", arguments: { code: "import time\ntime.sleep(3)\n'slow'" } };
  const started = await first.request("tools/call", slow);
  const task = started.result as { resultType: string; taskId: string };
  assert.equal(task.resultType, "task");
  assert.match(task.taskId, /^[0-9a-f-]{36}$/, "a random UUID");

  for (const method of ["tasks/get", "tasks/cancel"]) {
    const stranger = await second.request(method, { taskId: task.taskId });
    assert.deepEqual(
      stranger.error,
      { code: -32602, message: `Unknown task: ${task.taskId}` },
      `${method} from another connection`,
    );
  }
  const update = await second.request("tasks/update", {
    taskId: task.taskId,
    inputResponses: { "1.approval": { action: "accept", content: { approve: true } } },
  });
  assert.equal((update.error as { code: number }).code, -32602);

  const plain = await second.request("tools/call", slow, {});
  const result = plain.result as { resultType: string; structuredContent: ExecutionResult };
  assert.equal(result.resultType, "complete", "no task for a client that did not declare it");
  assert.equal(result.structuredContent.result, "slow");

  let status = "";
  for (let i = 0; i < 50 && status !== "completed"; i++) {
    await delay(200);
    status = ((await first.request("tasks/get", { taskId: task.taskId })).result as {
      status: string;
    }).status;
  }
  assert.equal(status, "completed", "the owner still sees its task, undisturbed");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("tasks: the store gives a task only to its owner", () => {
  const store = new TaskStore();
  const task = store.create("owner-a", new AbortController());
  assert.equal(store.find(task.id, "owner-a"), task);
  assert.equal(store.find(task.id, "owner-b"), undefined);
  store.closeOwner("owner-b");
  assert.equal(task.abort.signal.aborted, false, "another owner's disconnect leaves it running");
  store.closeOwner("owner-a");
  assert.equal(task.abort.signal.aborted, true);
  store.close();
});
