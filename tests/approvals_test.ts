/**
 * A person's approval of a script's tool call, asked of both generations of client: a
 * 2025-11-25 client (SDK v1) through elicitation during the call, a 2026-07-28 client (SDK v2)
 * through an input_required round while the sandbox waits. Real server, real sandboxes, a real
 * upstream memory server.
 */
import assert from "node:assert/strict";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as StdioV1 } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { Client as ClientV2 } from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioV2 } from "@modelcontextprotocol/client/stdio";
import type { ExecutionResult } from "../src/execution/execution_result.ts";
import { childEnv, delay, MAIN, ROOT, SERVE_FLAGS, writeConfig } from "./_helpers.ts";
import { rawStdio } from "./_modern.ts";
import { elicitingApprover, InteractiveRun } from "../src/host/approvals.ts";

const APPROVAL_TIMEOUT_S = 5;

/** A config whose default profile needs approval for memory.create_*, and nothing else. */
async function approvalConfig() {
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(`${dir}/permissions`);
  const profile = JSON.parse(await Deno.readTextFile(`${ROOT}permissions/default.json`));
  profile.approve = ["memory.create_*"];
  await Deno.writeTextFile(`${dir}/permissions/default.json`, JSON.stringify(profile));
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}tests/fixtures/servers.json`));
  const path = await writeConfig(dir, {
    servers: { memory: config.servers.memory, filesystem: config.servers.filesystem },
    settings: {
      pool_size: 1,
      permissions_dir: `${dir}/permissions`,
      approval_timeout_s: APPROVAL_TIMEOUT_S,
    },
  });
  return { path, dir };
}

/** What the person is shown, and how they answer, per question. */
type Person = (message: string) => Promise<{ action: string; content?: Record<string, unknown> }>;

const SCRIPT = [
  "from mcp_tools import memory, ToolDenied",
  "print('before the call')",
  "try:",
  "    memory.create_entities(entities=[{'name': 'n1', 'entityType': 't', 'observations': []}])",
  "    print('created')",
  "except ToolDenied as e:",
  "    print('denied:', e)",
  "memory.read_graph()",
].join("\n");

interface Generation {
  name: string;
  connect(
    configPath: string,
    env: Record<string, string>,
    person: Person | null,
  ): Promise<{ run(code: string): Promise<ExecutionResult>; close(): Promise<void> }>;
}

const serverCommand = (configPath: string, env: Record<string, string>) => ({
  command: Deno.execPath(),
  args: ["run", ...SERVE_FLAGS, MAIN, "serve", "--config", configPath],
  env: childEnv(env),
  cwd: ROOT,
  stderr: "ignore" as const,
});

const GENERATIONS: Generation[] = [
  {
    name: "a 2025-11-25 client (SDK v1), asked through elicitation",
    async connect(configPath, env, person) {
      const client = new ClientV1({ name: "v1", version: "1" }, {
        capabilities: person ? { elicitation: {} } : {},
      });
      if (person) {
        client.setRequestHandler(
          ElicitRequestSchema,
          (request: { params: { message: string } }) => person(request.params.message) as never,
        );
      }
      await client.connect(new StdioV1(serverCommand(configPath, env)));
      return {
        run: async (code) =>
          (await client.callTool({ name: "execute_code", arguments: { code } }, undefined, {
            timeout: 60_000,
          })).structuredContent as unknown as ExecutionResult,
        close: () => client.close(),
      };
    },
  },
  {
    name: "a 2026-07-28 client (SDK v2), asked through an input_required round",
    async connect(configPath, env, person) {
      const client = new ClientV2({ name: "v2", version: "1" }, {
        capabilities: person ? { elicitation: { form: {} } } : {},
        versionNegotiation: { mode: { pin: "2026-07-28" } },
      });
      if (person) {
        client.setRequestHandler(
          "elicitation/create",
          (request) => person((request.params as { message: string }).message) as never,
        );
      }
      await client.connect(new StdioV2(serverCommand(configPath, env)));
      assert.equal(client.getProtocolEra(), "modern");
      return {
        run: async (code) =>
          (await client.callTool({ name: "execute_code", arguments: { code } }, {
            timeout: 60_000,
          })).structuredContent as unknown as ExecutionResult,
        close: () => client.close(),
      };
    },
  },
];

for (const generation of GENERATIONS) {
  Deno.test(`approvals with ${generation.name}`, async (t) => {
    const { path, dir } = await approvalConfig();
    const env = { TEST_MEMORY_DIR: dir, TEST_FS_DIR: dir, TEST_SECRET: "x" };
    const asked: string[] = [];
    let answer: Person = () => Promise.resolve({ action: "accept", content: { approve: true } });
    const session = await generation.connect(path, env, (message) => {
      asked.push(message);
      return answer(message);
    });
    try {
      await t.step("approved: the call runs, and nothing before it runs twice", async () => {
        const r = await session.run(SCRIPT);
        assert.equal(r.success, true, JSON.stringify(r.diagnostics));
        assert.equal(r.stdout.match(/before the call/g)?.length, 1, r.stdout);
        assert.match(r.stdout, /created/);
        assert.equal(asked.length, 1, "one question");
        assert.match(asked[0]!, /memory\.create_entities/);
        assert.match(asked[0]!, /"name": "n1"/, "the question shows the arguments");
        const call = r.tool_calls.calls[0]!;
        assert.deepEqual([call.tool, call.outcome, call.approval], [
          "create_entities",
          "ok",
          "approved",
        ]);
        assert.equal(r.tool_calls.calls[1]!.approval, undefined, "read_graph needs no approval");
      });

      await t.step("declined: the script gets ToolDenied saying so", async () => {
        answer = () => Promise.resolve({ action: "decline" });
        const r = await session.run(SCRIPT);
        assert.equal(r.success, true, JSON.stringify(r.diagnostics));
        assert.match(r.stdout, /denied: .*the person declined the call/);
        assert.doesNotMatch(r.stdout, /created/);
        assert.deepEqual(
          [r.tool_calls.calls[0]!.outcome, r.tool_calls.calls[0]!.approval],
          ["denied", "declined"],
        );
      });

      await t.step("unanswered in time: ToolDenied names the timeout", async () => {
        answer = async () => {
          await delay((APPROVAL_TIMEOUT_S + 1) * 1000);
          return { action: "accept", content: { approve: true } };
        };
        const r = await session.run(SCRIPT);
        assert.equal(r.success, true, JSON.stringify(r.diagnostics));
        assert.match(r.stdout, /denied: .*no answer .* within 5 s/);
        assert.equal(r.tool_calls.calls[0]!.approval, "timed_out");
        assert.doesNotMatch(r.stdout, /created/);
      });
      await t.step(
        "once a question goes unanswered, later calls of the script are not asked",
        async () => {
          const before = asked.length;
          const r = await session.run(
            SCRIPT + "\ntry:\n    memory.create_entities(entities=[])\nexcept ToolDenied as e:\n" +
              "    print('second:', e)",
          );
          assert.equal(asked.length, before + 1, "only the first call is asked");
          assert.match(
            r.stdout,
            /second: .*an earlier approval request of this script went unanswered/,
          );
          assert.equal(r.tool_calls.calls.at(-1)!.approval, "timed_out");
        },
      );

      await t.step("the whole script is frozen while the person decides", async () => {
        answer = async () => {
          await delay(2500);
          return { action: "decline" };
        };
        // A coroutine asks; the script itself meant to wake 0.3 s later. Frozen, it wakes only
        // after the person's answer; running on, it would run (uncounted) meanwhile.
        const r = await session.run([
          "import asyncio, time",
          "from mcp_tools import memory",
          "call = asyncio.ensure_future(memory.create_entities_async(entities=[]))",
          "start = time.time()",
          "await asyncio.sleep(0.3)",
          "round(time.time() - start, 1)",
        ].join("\n"));
        assert.equal(r.success, true, JSON.stringify(r.diagnostics));
        assert.ok((r.result as number) >= 2, `the script woke after ${r.result} s`);
      });
      await t.step(
        "results that arrive while the person decides do not stop the script",
        async () => {
          // Over 32 MiB of results come in while the host holds the sandbox still: it is not
          // behind on them for as long as the person takes.
          const big = `${dir}/big.txt`;
          await Deno.writeTextFile(big, "A".repeat(3_000_000));
          answer = async () => {
            await delay(3200);
            return { action: "accept", content: { approve: true } };
          };
          const r = await session.run([
            "import asyncio",
            "from mcp_tools import filesystem, memory",
            `reads = [filesystem.read_text_file_async(path=${
              JSON.stringify(big)
            }) for _ in range(8)]`,
            "*texts, made = await asyncio.gather(*reads, memory.create_entities_async(entities=[]))",
            "sum(len(t['content']) for t in texts)",
          ].join("\n"));
          assert.equal(r.result, 24_000_000, JSON.stringify(r.diagnostics));
        },
      );
      await t.step("a key the tool's schema does not name is marked, in ASCII", async () => {
        answer = () => Promise.resolve({ action: "decline" });
        await session.run([
          "import _codemode",
          "try:",
          // The upstream would read "entities" and ignore the look-alike (Cyrillic і) key.
          "    _codemode.call_tool('memory', 'create_entities', {'ent\\u0456ties': [], 'entities': []})",
          "except Exception as e:",
          "    print(e)",
        ].join("\n"));
        assert.match(asked.at(-1)!, /"ent\\u\{456\}ties" \(not in the tool's schema\): \[\]/);
        assert.match(asked.at(-1)!, /\n {2}"entities": \[\]/);
      });
      await t.step("arguments that cannot be shown whole are not put to a person", async () => {
        const before = asked.length;
        const r = await session.run([
          "from mcp_tools import memory, ToolDenied",
          "many = [{'name': f'e{i}', 'entityType': 't', 'observations': []} for i in range(60)]",
          "try:",
          "    memory.create_entities(entities=many)",
          "except ToolDenied as e:",
          "    print('denied:', e)",
        ].join("\n"));
        assert.match(r.stdout, /denied: .*cannot be shown to a person whole/);
        assert.equal(asked.length, before, "not asked");
      });
    } finally {
      await session.close();
    }

    await t.step("a client that cannot ask: ToolDenied says so", async () => {
      const mute = await generation.connect(path, env, null);
      try {
        const r = await mute.run(SCRIPT);
        assert.match(r.stdout, /denied: .*the client cannot ask for it/);
        assert.equal(r.tool_calls.calls[0]!.approval, "unavailable");
      } finally {
        await mute.close();
      }
    });
    await Deno.remove(dir, { recursive: true });
  });
}

Deno.test("approvals: a 2026-07-28 round's request state cannot be forged or replayed", async () => {
  const { path, dir } = await approvalConfig();
  const env = { TEST_MEMORY_DIR: dir, TEST_FS_DIR: dir, TEST_SECRET: "x" };
  await using connection = rawStdio(path, env);
  const canAsk = { elicitation: { form: {} } };
  const call = (extra: Record<string, unknown> = {}) =>
    connection.request("tools/call", {
      name: "execute_code",
      arguments: { code: SCRIPT },
      ...extra,
    }, canAsk);
  const approve = { approval: { action: "accept", content: { approve: true } } };

  const asked = (await call()).result as { resultType: string; requestState: string };
  assert.equal(asked.resultType, "input_required");
  const state = asked.requestState;

  // A forged seal, and a payload naming another run under the real seal: both refused unread.
  const [body, mac] = [
    state.slice(0, state.lastIndexOf(".")),
    state.slice(state.lastIndexOf(".") + 1),
  ];
  const flipped = mac[0] === "A" ? "B" + mac.slice(1) : "A" + mac.slice(1);
  const forgedPayload = body.slice(0, -2) + (body.endsWith("AA") ? "BB" : "AA") + "." + mac;
  for (const forged of [`${body}.${flipped}`, forgedPayload, "not a state"]) {
    const reply = await call({ requestState: forged, inputResponses: approve });
    assert.equal(
      (reply.error as { code: number } | undefined)?.code,
      -32602,
      JSON.stringify(reply),
    );
  }

  // The real answer takes the parked run up once: the call runs, nothing before it twice.
  const done = (await call({ requestState: state, inputResponses: approve })).result as {
    structuredContent: ExecutionResult;
  };
  assert.equal(done.structuredContent.stdout.match(/before the call/g)?.length, 1);
  assert.match(done.structuredContent.stdout, /created/);

  // Replayed: the run is gone, so nothing runs again.
  const replayed = (await call({ requestState: state, inputResponses: approve })).result as {
    isError: boolean;
    content: { text: string }[];
    structuredContent?: unknown;
  };
  assert.equal(replayed.isError, true);
  assert.match(replayed.content[0]!.text, /already answered or expired/);
  assert.equal(replayed.structuredContent, undefined, "no script ran");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("approvers take a question back when the script ends before it is answered", async (t) => {
  const question = { server: "memory", tool: "create_entities", arguments: {} };

  await t.step("2025-11-25: the elicitation request is cancelled", async () => {
    const sent = Promise.withResolvers<AbortSignal>();
    const ctx = {
      mcpReq: {
        signal: new AbortController().signal,
        send: (_: unknown, options: { signal: AbortSignal }) => {
          sent.resolve(options.signal);
          return new Promise((_, reject) =>
            options.signal.addEventListener("abort", () => reject(new Error("aborted")))
          );
        },
      },
    };
    const server = { server: { getClientCapabilities: () => ({ elicitation: {} }) } };
    const withdrawn = new AbortController();
    const answer = elicitingApprover(server as never, ctx as never, 60_000)(
      question,
      withdrawn.signal,
    );
    const request = await sent.promise;
    assert.equal(request.aborted, false);
    withdrawn.abort();
    assert.equal(request.aborted, true, "the request to the client was not cancelled");
    assert.equal(await answer, "cancelled");
  });

  await t.step("2026-07-28: a question not yet handed to a round is no round's", async () => {
    const withdrawn = new AbortController();
    const answered = Promise.withResolvers<string>();
    const finish = Promise.withResolvers<void>();
    const run = new InteractiveRun(async ({ approve }) => {
      answered.resolve(await approve(question, withdrawn.signal));
      await finish.promise;
      return { success: true } as unknown as ExecutionResult;
    });
    withdrawn.abort();
    assert.equal(await answered.promise, "cancelled");
    // The run is still going: a round waits for its result, not for a question taken back.
    const step = run.next(new AbortController().signal, {});
    finish.resolve();
    assert.ok("result" in await step, "a round was handed the withdrawn question");
  });
});
