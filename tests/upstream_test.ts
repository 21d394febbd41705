/**
 * Scripts calling real upstream MCP servers (filesystem, memory, everything) through the host.
 */
import assert from "node:assert/strict";
import {
  childPids,
  delay,
  dynamicServer,
  hostPid,
  ROOT,
  spawnServe,
  startServer,
  type TestServer,
  writeConfig,
} from "./_helpers.ts";
import { parseConfigFile, type ServerConfig } from "../src/config/config.ts";
import { silentLogger } from "../src/_util/log.ts";
import { createRedactor } from "../src/policy/redaction.ts";
import { UpstreamPool } from "../src/upstream/pool.ts";
import { defaultTransportFactory } from "../src/upstream/transport.ts";

export const SECRET = "sk-test-9f8e7d6c5b4a";

async function startWithServers(): Promise<TestServer & { fsDir: string }> {
  const fsDir = Deno.realPathSync(await Deno.makeTempDir());
  const memoryDir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${fsDir}/notes.txt`, "first line\nsecond line\n");
  await Deno.writeTextFile(`${fsDir}/data.json`, '{"items": [1, 2, 3]}');
  const server = await startServer({
    args: ["--config", `${ROOT}tests/fixtures/servers.json`],
    env: { TEST_FS_DIR: fsDir, TEST_MEMORY_DIR: memoryDir, TEST_SECRET: SECRET },
  });
  return {
    ...server,
    fsDir,
    async [Symbol.asyncDispose]() {
      await server[Symbol.asyncDispose]();
      await Deno.remove(fsDir, { recursive: true });
      await Deno.remove(memoryDir, { recursive: true });
    },
  };
}

Deno.test("scripts call real upstream servers as Python functions", async (t) => {
  await using server = await startWithServers();

  await t.step("filesystem: read and list files", async () => {
    const r = await server.execute({
      code: [
        "from mcp_tools import filesystem",
        `text = filesystem.read_text_file(path=${JSON.stringify(server.fsDir + "/notes.txt")})`,
        `listing = filesystem.list_directory(path=${JSON.stringify(server.fsDir)})`,
        "print(listing['content'])",
        "text['content'].splitlines()",
      ].join("\n"),
    });
    assert.equal(r.success, true, r.text);
    assert.deepEqual(r.result, ["first line", "second line"]);
    assert.match(r.stdout, /\[FILE\] notes\.txt/);
    assert.equal(r.tool_calls.count, 2);
    assert.deepEqual(r.tool_calls.calls.map((c) => [c.server, c.tool, c.outcome]), [
      ["filesystem", "read_text_file", "ok"],
      ["filesystem", "list_directory", "ok"],
    ]);
  });

  await t.step("memory: create entities, then read them back", async () => {
    const r = await server.execute({
      code: [
        "from mcp_tools import memory",
        "memory.create_entities(entities=[{'name': 'Ada', 'entityType': 'person', 'observations': ['wrote the first program']}])",
        "memory.create_relations(relations=[{'from': 'Ada', 'to': 'Ada', 'relationType': 'admires'}])",
        "graph = memory.read_graph()",
        "[e['name'] for e in graph['entities']], graph['relations'][0]['relationType']",
      ].join("\n"),
    });
    assert.equal(r.success, true, r.text);
    assert.deepEqual(r.result, [["Ada"], "admires"]);
  });

  await t.step("everything: text, structured content, images, names with dashes", async () => {
    const r = await server.execute({
      code: [
        "from mcp_tools import everything, Image",
        "echo = everything.echo(message='hi there')",
        "total = everything.get_sum(a=2, b=3)",
        "weather = everything.get_structured_content(location='Chicago')",
        "image = everything.get_tiny_image()",
        "images = [v for v in (image if isinstance(image, list) else [image]) if isinstance(v, Image)]",
        "{'echo': echo, 'sum': total, 'weather_keys': sorted(weather), 'image': images[0].mime_type}",
      ].join("\n"),
    });
    assert.equal(r.success, true, r.text);
    const result = r.result as Record<string, unknown>;
    assert.match(String(result.echo), /hi there/);
    assert.match(String(result.sum), /5/);
    assert.deepEqual(result.weather_keys, ["conditions", "humidity", "temperature"]);
    assert.equal(result.image, "image/png");
  });

  await t.step("a tool that returns an error raises ToolError naming server and tool", async () => {
    const r = await server.execute({
      code: [
        "from mcp_tools import filesystem, ToolError",
        "try:",
        "    filesystem.read_text_file(path='/etc/passwd')",
        "except ToolError as e:",
        "    print(type(e).__name__, e.server, e.tool)",
        "    print(e.message)",
        "filesystem.read_text_file(path='/etc/passwd')",
      ].join("\n"),
    });
    assert.equal(r.success, false);
    assert.match(r.stdout, /^ToolError filesystem read_text_file\n/);
    assert.match(r.stdout, /outside allowed directories/);
    assert.equal(r.diagnostics?.error_type, "ToolError");
    assert.match(r.diagnostics!.message, /filesystem\.read_text_file/);
    assert.equal(r.tool_calls.calls[0]!.outcome, "error");
  });

  await t.step("calls run in parallel with asyncio.gather", async () => {
    const r = await server.execute({
      code: [
        "import asyncio",
        "from mcp_tools import everything",
        "results = await asyncio.gather(*[everything.echo_async(message=f'm{i}') for i in range(10)])",
        "[str(x) for x in results]",
      ].join("\n"),
    });
    assert.equal(r.success, true, r.text);
    const results = r.result as string[];
    assert.equal(results.length, 10);
    results.forEach((x, i) => assert.match(x, new RegExp(`m${i}\\b`)));
    assert.equal(r.tool_calls.count, 10);
  });

  await t.step("a slow tool hits the per-call timeout", async () => {
    const r = await server.execute({
      code: [
        "from mcp_tools import everything, ToolTimeout",
        "try:",
        "    everything.trigger_long_running_operation(duration=10, steps=2)",
        "except ToolTimeout as e:",
        "    print('timed out:', e)",
      ].join("\n"),
    });
    assert.equal(r.success, true, r.text);
    assert.match(
      r.stdout,
      /timed out: everything\.trigger-long-running-operation: no answer within the 3 s/,
    );
  });

  await t.step("a secret given to an upstream server never reaches the sandbox", async () => {
    const r = await server.execute({
      code: [
        "from mcp_tools import everything",
        "env = everything.get_env()",
        "text = str(env)",
        "print('EVERYTHING_TOKEN' in text, 'REDACTED' in text)",
        "text",
      ].join("\n"),
    });
    assert.equal(r.success, true, r.text);
    assert.equal(r.stdout, "True True\n");
    assert.ok(!JSON.stringify(r).includes(SECRET));
    assert.ok(!server.stderr().includes(SECRET));
  });

  await t.step("unknown tools and servers are refused by the host", async () => {
    const r = await server.execute({
      code: [
        "import _codemode",
        "out = []",
        "for server, tool in [('everything', 'no-such-tool'), ('nope', 'echo')]:",
        "    try:",
        "        _codemode.call_tool(server, tool, {})",
        "    except Exception as e:",
        "        out.append(str(e))",
        "out",
      ].join("\n"),
    });
    assert.equal(r.success, true, r.text);
    assert.deepEqual(r.result, [
      'everything.no-such-tool: server "everything" has no tool "no-such-tool"',
      'nope.echo: no server named "nope"',
    ]);
  });
});

Deno.test("attack: tool results a script leaves unread cannot pile up in the host", async (t) => {
  await using server = await startWithServers();
  const path = `${server.fsDir}/big.txt`;
  await Deno.writeTextFile(path, "A".repeat(3_000_000)); // each result: over 6 MB of JSON
  const calls = (n: number) =>
    `[asyncio.ensure_future(filesystem.read_text_file_async(path=${JSON.stringify(path)})) ` +
    `for _ in range(${n})]`;

  await t.step("results the script awaits come back, however large together", async () => {
    const r = await server.execute({
      code: `from mcp_tools import filesystem
import asyncio
` +
        `sum(len(r['content']) for r in await asyncio.gather(*${calls(8)}))`,
    });
    assert.equal(r.result, 8 * 3_000_000, r.text);
  });

  await t.step("a script that never reads them is stopped past 32 MiB", async () => {
    const r = await server.execute({
      code: [
        "from mcp_tools import filesystem",
        "import asyncio, time",
        `calls = ${calls(12)}`,
        "await asyncio.sleep(0.5)  # the calls go out",
        "end = time.time() + 12",
        "while time.time() < end: pass  # and their results are never read",
        "'finished'",
      ].join("\n"),
    });
    assert.equal(r.diagnostics?.error_type, "MEMORY_LIMIT", r.text);
    assert.match(r.diagnostics!.message, /Tool results the script left unread exceeded 32 MiB/);
    const next = await server.execute({ code: "1 + 1" });
    assert.equal(next.result, 2);
  });
});

Deno.test("an upstream server killed mid-run gives a clear error, then reconnects", async () => {
  await using server = await startWithServers();
  // The handshake does not wait for the upstream servers; tools/list does. Before they have
  // connected, the process found could be the SDK's server/discover probe, which ends by itself.
  await server.client.listTools();
  const memoryPid = async () => {
    for (let i = 0; i < 200; i++) {
      const pid = childPids(server.pid).find((p) => {
        try {
          return Deno.readTextFileSync(`/proc/${p}/cmdline`).includes("server-memory");
        } catch {
          return false;
        }
      });
      if (pid) return pid;
      await delay(50);
    }
    throw new Error("no memory server process found");
  };
  const victim = await memoryPid();
  const run = server.execute({
    code: [
      "import asyncio",
      "from mcp_tools import memory, ToolError",
      "for i in range(200):",
      "    try:",
      "        memory.read_graph()",
      "    except ToolError as e:",
      "        print(type(e).__name__, '|', e)",
      "        break",
      "    await asyncio.sleep(0.05)",
    ].join("\n"),
    timeout_s: 60,
  });
  await delay(1500);
  Deno.kill(victim, "SIGKILL");
  const r = await run;
  assert.equal(r.success, true, r.text);
  assert.match(
    r.stdout,
    /^(UpstreamUnavailable|ToolError) \| memory\.read_graph: .*(not connected|went away|closed)/,
  );

  let after;
  for (let i = 0; i < 60; i++) {
    after = await server.execute({ code: "from mcp_tools import memory\nmemory.read_graph()" });
    if (after.success) break;
    await delay(250);
  }
  assert.equal(after?.success, true, after?.text);
  assert.notEqual(await memoryPid(), victim);
});

Deno.test("agents discover tools through search_tools, get_tool_docs and stub resources", async (t) => {
  await using server = await startWithServers();
  const tools = await server.client.listTools();
  const executeCode = (tools.tools as { name: string; description?: string }[])
    .find((tool) => tool.name === "execute_code")!;

  await t.step("the execute_code description carries a compact index", () => {
    assert.match(executeCode.description!, /filesystem \(Files in a temporary test folder\.\):/);
    assert.match(executeCode.description!, /\n {2}read_text_file: /);
    assert.match(executeCode.description!, /\n {2}get_structured_content: /);
  });

  await t.step("search_tools returns the matching stubs", async () => {
    const reply = await server.client.callTool({
      name: "search_tools",
      arguments: { query: "knowledge graph entities" },
    });
    const matches =
      (reply.structuredContent as { matches: { name: string; stub: string }[] }).matches;
    assert.ok(matches.length > 0);
    assert.ok(
      matches.every((m) => m.name.startsWith("memory.")),
      JSON.stringify(matches.map((m) => m.name)),
    );
    assert.match(matches[0]!.stub, /^def \w+\(/m);
  });

  await t.step("get_tool_docs returns the exact signature the sandbox runs", async () => {
    const reply = await server.client.callTool({
      name: "get_tool_docs",
      arguments: {
        names: [
          "everything.get_sum",
          "nope.nothing",
          "everything.get_summ",
          "get_sum",
          "memory.create_entity",
          "fs.read_text_file",
        ],
      },
    });
    const docs = (reply.structuredContent as {
      docs: { name: string; stub: string | null; meant?: string }[];
    }).docs;
    assert.match(docs[0]!.stub!, /^def get_sum\(a: float, b: float\) -> (Any|str):/);
    assert.equal(docs[1]!.stub, null);
    assert.equal(docs[1]!.meant, undefined);
    assert.equal(docs[2]!.meant, "everything.get_sum");
    assert.equal(docs[3]!.meant, "everything.get_sum");
    // Past two edits, the words found in search, in the module named; another module's name.
    assert.equal(docs[4]!.meant, "memory.create_entities");
    assert.equal(docs[5]!.meant, "filesystem.read_text_file");
    assert.match(
      (reply.content as { text: string }[])[0]!.text,
      /# get_sum: not found; did you mean everything\.get_sum\?/,
    );
    const introspect = await server.execute({
      code:
        "import inspect\nfrom mcp_tools import everything\nstr(inspect.signature(everything.get_sum))",
    });
    assert.match(String(introspect.result), /^\(a: float, b: float\) -> (Any|str)$/);
  });

  await t.step("each server's stub file is a resource", async () => {
    const list = await server.client.listResources();
    const uris = (list.resources as { uri: string }[]).map((r) => r.uri).sort();
    assert.deepEqual(uris, [
      "codemode://stubs/everything.pyi",
      "codemode://stubs/filesystem.pyi",
      "codemode://stubs/memory.pyi",
    ]);
    const read = await server.client.readResource({ uri: "codemode://stubs/memory.pyi" });
    assert.match(
      (read.contents[0] as { text: string }).text,
      /def read_graph\(\) -> ReadGraphResult:/,
    );
  });
});

Deno.test("a failed server's stderr is scrubbed before it is cut, so no fragment of a secret shows", async (t) => {
  const secret = 'sk-"e2e\\secret"-9f8e7d6c';
  const prefix = "fatal: the API rejected key ";
  const failing = (before: number, after: number): ServerConfig => ({
    kind: "stdio",
    name: "broken",
    protocol: "auto",
    command: "deno",
    args: ["run", "--no-prompt", "-A", "secret_server.ts", "fail", `${before}`, `${after}`],
    env: { FIXTURE_SECRET: secret },
    cwd: `${ROOT}tests/fixtures`,
    description: "",
  });
  const lastError = async (server: ServerConfig) => {
    await using pool = new UpstreamPool({
      servers: [server],
      transports: defaultTransportFactory,
      log: silentLogger,
      redact: createRedactor([secret]).text,
    });
    await pool.start();
    const [snapshot] = pool.snapshot();
    const session = pool.session("broken");
    assert.ok(session !== undefined && "unavailable" in session);
    assert.equal(
      session.unavailable,
      `server "broken" is not connected (reconnecting): ${snapshot!.error}`,
    );
    return snapshot!.error!;
  };

  await t.step("a secret where the message is cut to 500 characters", async () => {
    // The secret starts 10 characters before the cut.
    const error = await lastError(failing(500 - prefix.length - 10, 0));
    assert.match(error, /\(stderr: fatal: the API rejected key x+\[REDACTED\]\)$/);
    assert.ok(!error.includes(secret.slice(0, 10)), error);
  });

  await t.step("a secret where the kept stderr was cut at its front", async () => {
    // 16,384 characters of stderr are kept; they start with the secret's last 10 characters.
    const error = await lastError(failing(0, 16_384 - 1 - 10));
    assert.match(error, /\(stderr: y{300}/);
    assert.ok(!error.includes(secret.slice(-10)), error);
  });
});

Deno.test("attack: a failed server's stderr shows none of the secrets written into its entry", async () => {
  // A server that rejects its command line quotes it, and may print its environment.
  const secrets = [
    "ghp_Literal1234567890abcdef",
    "PwColon98765",
    "DbPassw0rd42",
    "MysqlPwd7777",
    "Shell12345678",
    "TokQuery123456789",
    "HdrBearer123456789",
  ];
  const parsed = parseConfigFile({
    servers: {
      broken: {
        command: "deno",
        args: [
          "run",
          "--no-prompt",
          "-A",
          "secret_server.ts",
          "echo_fail",
          "-e",
          `GITHUB_TOKEN=${secrets[0]}`,
          `--password:${secrets[1]}`,
          `API_KEY=${secrets[4]} node s.js`,
          `https://mcp.example.com/sse?access_token=${secrets[5]}`,
          "--header",
          `Authorization: Bearer ${secrets[6]}`,
        ],
        env: {
          DATABASE_URL: `postgres://app:${secrets[2]}@db.internal/app`,
          MYSQL_PWD: secrets[3],
          FIXTURE_ECHO: "DATABASE_URL,MYSQL_PWD",
        },
        cwd: `${ROOT}tests/fixtures`,
      },
    },
  }, { path: `${ROOT}tests/fixtures/mcp_servers.json`, env: () => undefined });
  await using pool = new UpstreamPool({
    servers: parsed.servers,
    transports: defaultTransportFactory,
    log: silentLogger,
    redact: createRedactor(parsed.secrets).text,
  });
  await pool.start();
  const error = pool.snapshot()[0]!.error!;
  assert.match(error, /fatal: bad arguments: -e GITHUB_TOKEN=\[REDACTED\]/);
  assert.match(error, /postgres:\/\/app:\[REDACTED\]@db\.internal/);
  for (const secret of secrets) assert.ok(!error.includes(secret), `${secret} in: ${error}`);
});

Deno.test("a Ctrl-C, which stops the stdio servers with code mode, reads as no upstream fault", async () => {
  // Newcomer 65: the terminal's SIGINT reaches the whole foreground group, and the server's end
  // was logged "upstream server disconnected; reconnecting" just before "shutting down".
  const dir = await Deno.makeTempDir();
  const config = await writeConfig(dir, {
    servers: { dynamic: dynamicServer() },
    settings: { pool_size: 1 },
  });
  const child = spawnServe({ args: ["--config", config], stdout: "null", stderr: "piped" });
  const stderr = child.stderr!.pipeThrough(new TextDecoderStream()).getReader();
  let said = "";
  while (!/started: 1 of 1 upstream servers connected/.test(said)) {
    const { value, done } = await stderr.read();
    if (done) throw new Error(`the server ended: ${said}`);
    said += value;
  }
  const upstream = childPids(hostPid(child.pid)).filter((pid) =>
    Deno.readTextFileSync(`/proc/${pid}/cmdline`).includes("dynamic_server.ts")
  );
  assert.equal(upstream.length, 1);
  Deno.kill(upstream[0]!, "SIGINT");
  await delay(50); // the server's end is seen first, as it often is
  child.kill("SIGINT");
  for (let r = await stderr.read(); !r.done; r = await stderr.read()) said += r.value;
  assert.equal((await child.status).code, 0);
  assert.match(said, /shutting down \(SIGINT\)/);
  assert.doesNotMatch(said, /disconnected/, said);
  await Deno.remove(dir, { recursive: true });
});
