/**
 * The Streamable HTTP transport, driven by the SDK's StreamableHTTPClientTransport against a
 * real server process; and live output and progress on both transports.
 */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { allowedFor, checkBind, guardRequest, parseAllowedHost } from "../src/host/http_guard.ts";
import { acceptsEventStream, callAsEventStream } from "../src/host/call_response_mode.ts";
import {
  childEnv,
  delay,
  isAlive,
  MAIN,
  ROOT,
  sandboxPids,
  SERVE_FLAGS,
  startServer,
  tcpSocketsOf,
} from "./_helpers.ts";
import {
  connect,
  execute,
  INITIALIZE,
  NO_SERVERS,
  post,
  startHttp,
  statusWithHost,
} from "./_http.ts";
import { executeCallInit } from "./_modern.ts";

/** Resident memory of a process in MB (0 once it is gone). */
function residentMb(pid: number): number {
  try {
    const status = Deno.readTextFileSync(`/proc/${pid}/status`);
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/**
 * A script that takes 250 MB more than a sandbox has, then runs until it is stopped. A sandbox
 * holds about 160 MB (150 to 175 seen), so its own reads about 410 MB: `MARKED_MB` lies well
 * between the two, and under the default profile's 512 MB limit.
 */
const SCRIPT_OF_MARKED_SIZE = "ballast = bytearray(b'x') * (250 << 20)\nwhile True:\n    pass";
const MARKED_MB = 300;

Deno.test("a 2026-07-28 tools/call is streamed to every client that can take a stream", () => {
  // An attacker's corpus: a client whose call is answered in JSON cannot be noticed going away.
  const takes: [string | null, boolean][] = [
    ["application/json, text/event-stream", true],
    ["Application/JSON, Text/Event-Stream", true],
    ["*/*", true],
    ["text/*", true],
    [null, true],
    ["", true],
    ["application/json;q=1, text/event-stream; q=0.5", true],
    ["application/json", false],
    ["application/json, text/event-stream;q=0", false],
    ["application/json, text/event-stream; Q = 0", false],
    ["text/event-streams", false],
  ];
  for (const [accept, expected] of takes) {
    assert.equal(acceptsEventStream(accept), expected, accept!);
  }
  const headers = (method: string, accept?: string) =>
    new Headers({ "mcp-method": method, ...(accept ? { accept } : {}) });
  assert.equal(callAsEventStream(headers("tools/call", "*/*")), true);
  assert.equal(callAsEventStream(headers("tools/call")), true);
  assert.equal(callAsEventStream(headers("tools/call", "application/json")), false);
  assert.equal(callAsEventStream(headers("tools/list", "*/*")), false);
});

Deno.test("checkBind() and guardRequest() decide who may talk to the HTTP server", () => {
  assert.equal(checkBind("127.0.0.1", undefined), null);
  assert.match(
    checkBind("0.0.0.0", undefined)!,
    /requires a bearer token .*; and a wildcard address .*--allow-host/,
    "every reason at once",
  );
  assert.match(checkBind("0.0.0.0", "short")!, /at least 16 characters/);
  assert.equal(checkBind("0.0.0.0", "a-long-enough-token-value", ["example.test"]), null);
  const options = {
    token: "a-long-enough-token-value",
    allowedHosts: ["127.0.0.1:8788"],
    allowedOrigins: ["http://127.0.0.1:8788"],
  };
  const headers = (h: Record<string, string>) => new Headers(h);
  const auth = { authorization: "Bearer a-long-enough-token-value" };
  assert.equal(guardRequest(headers({ host: "127.0.0.1:8788", ...auth }), options), null);
  assert.equal(guardRequest(headers({ host: "evil.example:8788", ...auth }), options)?.status, 403);
  assert.equal(
    guardRequest(
      headers({ host: "127.0.0.1:8788", origin: "http://evil.example", ...auth }),
      options,
    )?.status,
    403,
  );
  assert.equal(guardRequest(headers({ host: "127.0.0.1:8788" }), options)?.status, 401);
  const lower = { authorization: "bearer a-long-enough-token-value" };
  assert.equal(guardRequest(headers({ host: "127.0.0.1:8788", ...lower }), options), null);
  assert.equal(
    guardRequest(headers({ host: "127.0.0.1:8788", authorization: "Bearer wrong" }), options)
      ?.status,
    401,
  );
});

Deno.test("allowedFor() and guardRequest() admit only the names the server serves", async (t) => {
  const token = "a-long-enough-token-value";
  const auth = { authorization: `Bearer ${token}` };
  // [bind address, --allow-host names, Host header, Origin header or null, expected status]
  const cases: [string, string[], string, string | null, number | null][] = [
    ["127.0.0.1", [], "127.0.0.1:8788", null, null],
    ["127.0.0.1", [], "localhost:8788", "http://localhost:8788", null],
    ["127.0.0.1", [], "[::1]:8788", null, null],
    ["127.0.0.1", [], "evil.test:8788", null, 403],
    ["127.0.0.1", [], "127.0.0.1:9999", null, 403],
    ["127.0.0.2", [], "127.0.0.2:8788", "http://127.0.0.2:8788", null],
    ["127.0.0.2", [], "localhost:8788", null, null],
    ["127.0.0.2", [], "127.0.0.3:8788", null, 403],
    ["::1", [], "[::1]:8788", null, null],
    ["127.0.0.1", ["proxy.test"], "proxy.test:8788", null, null],
    ["0.0.0.0", ["example.test"], "example.test:8788", "https://example.test:8788", null],
    ["0.0.0.0", ["example.test"], "EXAMPLE.test:8788", null, null],
    // A reverse proxy on the default port that keeps the client's Host.
    ["0.0.0.0", ["example.test"], "example.test", "https://example.test", null],
    ["0.0.0.0", ["example.test"], "127.0.0.1:8788", null, null],
    ["0.0.0.0", ["example.test"], "evil.test:8788", null, 403],
    ["0.0.0.0", ["example.test"], "0.0.0.0:8788", null, 403],
    ["0.0.0.0", ["example.test"], "example.test:8788", "http://evil.test", 403],
    ["0.0.0.0", ["example.test:443"], "example.test:443", null, null],
    ["0.0.0.0", ["example.test:443"], "example.test:8788", null, 403],
    ["::", ["example.test"], "example.test:8788", null, null],
    ["192.0.2.7", [], "192.0.2.7:8788", null, null],
    ["192.0.2.7", [], "example.test:8788", null, 403],
    ["2001:db8::7", [], "[2001:db8::7]:8788", null, null],
  ];
  for (const [bind, hosts, host, origin, status] of cases) {
    await t.step(`bound to ${bind} with [${hosts}]: Host ${host}, Origin ${origin}`, () => {
      const options = { token, ...allowedFor(bind, 8788, { hosts }) };
      const headers = new Headers({ host, ...auth, ...(origin ? { origin } : {}) });
      const refused = guardRequest(headers, options);
      assert.equal(refused?.status ?? null, status, refused?.message);
      if (status === 403 && refused!.message.startsWith("Host")) {
        assert.match(
          refused!.message,
          new RegExp(`^Host ${RegExp.escape(host)} is not allowed \\(.*--allow-host NAME`),
        );
      }
    });
  }
});

Deno.test("checkBind() refuses a wildcard address without --allow-host; parseAllowedHost() checks names", () => {
  const token = "a-long-enough-token-value";
  // Every spelling of the unspecified address listens everywhere (an attacker's list).
  for (
    const wildcard of ["0.0.0.0", "::", "0", "::0", "0:0::0", "[::]", "0.0", "::ffff:0.0.0.0"]
  ) {
    assert.equal(
      checkBind(wildcard, token),
      `Cannot serve HTTP on ${wildcard}: a wildcard address has no name for the Host check; name the host names clients use with --allow-host NAME (repeatable)`,
    );
    assert.equal(checkBind(wildcard, token, ["example.test"]), null);
  }
  assert.equal(checkBind("192.0.2.7", token), null, "a specific address names itself");
  assert.equal(checkBind("127.0.0.1", undefined), null);
  assert.equal(checkBind("127.1", undefined), null, "a loopback address however spelt");
  assert.match(checkBind("128.0.0.1", undefined)!, /requires a bearer token/);
  for (const name of ["127.evil.example", "127.0.0.1.nip.io", "localhost.evil"]) {
    assert.match(checkBind(name, undefined) ?? "", /requires a bearer token/, name);
  }
  assert.deepEqual(allowedFor("::0", 8788).allowedHosts, [
    "127.0.0.1:8788",
    "localhost:8788",
    "[::1]:8788",
  ]);
  assert.equal(parseAllowedHost("MCP.Example.test"), "mcp.example.test");
  assert.equal(parseAllowedHost("example.test:8443"), "example.test:8443");
  assert.equal(parseAllowedHost("[2001:db8::7]:80"), "[2001:db8::7]:80");
  assert.equal(parseAllowedHost("192.0.2.7"), "192.0.2.7");
  for (const bad of ["*", "*.example.test", "http://example.test", "example.test:99999", "a b"]) {
    assert.throws(() => parseAllowedHost(bad), {
      name: "TypeError",
      message:
        `Cannot allow host "${bad}": give a host name or IP address, optionally with :PORT (e.g. mcp.example.com)`,
    });
  }
});

Deno.test("execute_code over Streamable HTTP: sessions, live feedback, limits, cancellation", async (t) => {
  await using server = await startHttp(["--max-per-session", "1"]);

  await t.step("two sessions run in parallel without seeing each other", async () => {
    const [a, b] = [await connect(server.url), await connect(server.url)];
    // Served on loopback without a token: the log says who can connect (newcomer 61).
    assert.match(server.stderr(), /warn: no token \(CODEMODE_HTTP_TOKEN\): every local user/);
    const [ra, rb] = await Promise.all([
      execute(a, "import asyncio\nawait asyncio.sleep(0.2)\nprint('from a')\n'a'"),
      execute(b, "import asyncio\nawait asyncio.sleep(0.2)\nprint('from b')\n'b'"),
    ]);
    assert.deepEqual([ra.stdout, ra.result, rb.stdout, rb.result], [
      "from a\n",
      "a",
      "from b\n",
      "b",
    ]);
    await a.close();
    await b.close();
  });

  await t.step(
    "half a surrogate pair in a result or an error reaches the client as U+FFFD",
    async () => {
      const client = await connect(server.url);
      assert.equal((await execute(client, "'\\ud800x'")).result, "\uFFFDx");
      const failed = await execute(client, "raise ValueError('bad \\udc00 half')");
      assert.match(failed.diagnostics!.message, /bad \uFFFD half/);
      await client.close();
    },
  );

  await t.step(
    "output arrives as log messages and progress as progress notifications",
    async () => {
      const client = await connect(server.url);
      const logs: string[] = [];
      client.setNotificationHandler(
        LoggingMessageNotificationSchema,
        (n: { params: { data: unknown } }) => {
          logs.push(String(n.params.data));
        },
      );
      const progress: { progress: number; total?: number; message?: string }[] = [];
      const r = await execute(
        client,
        "from mcp_tools import report_progress\nfor i in range(3):\n    print('line', i)\n    report_progress(i + 1, 3, f'step {i}')\nimport time; time.sleep(0.3)\n'done'",
        {
          onprogress: (p: { progress: number; total?: number; message?: string }) =>
            progress.push(p),
        },
      );
      assert.equal(r.result, "done");
      assert.equal(logs.join(""), "line 0\nline 1\nline 2\n");
      assert.deepEqual(progress.map((p) => [p.progress, p.total, p.message]), [
        [1, 3, "step 0"],
        [2, 3, "step 1"],
        [3, 3, "step 2"],
      ]);
      await client.close();
    },
  );

  await t.step("a call over the session's concurrency cap waits its turn", async () => {
    const client = await connect(server.url);
    const finished: string[] = [];
    const [slow, fast] = await Promise.all([
      execute(client, "import time\ntime.sleep(1)\n'slow'").then((r) => {
        finished.push("slow");
        return r;
      }),
      delay(300).then(() => execute(client, "'fast'")).then((r) => {
        finished.push("fast");
        return r;
      }),
    ]);
    assert.equal(slow.result, "slow");
    assert.equal(fast.result, "fast", JSON.stringify(fast.diagnostics));
    assert.deepEqual(finished, ["slow", "fast"]);
    await client.close();
  });

  await t.step("generate_and_execute waits behind the same session cap", async () => {
    const client = new Client({ name: "sampling-client", version: "0" }, {
      capabilities: { sampling: {} },
    });
    client.setRequestHandler(CreateMessageRequestSchema, () => ({
      role: "assistant",
      model: "client-model",
      content: { type: "text", text: "```python\n'written by the agent'\n```" },
    }));
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    const generate = async () => {
      const reply = await client.callTool(
        { name: "generate_and_execute", arguments: { task: "say hi", max_attempts: 1 } },
        undefined,
        { timeout: 60_000 },
      );
      return reply.structuredContent as { success: boolean; execution?: { result: unknown } };
    };
    const finished: string[] = [];
    const [slow, waited] = await Promise.all([
      execute(client, "import time\ntime.sleep(1.5)\n'slow'").then((r) => {
        finished.push("slow");
        return r;
      }),
      delay(300).then(generate).then((r) => {
        finished.push("generate");
        return r;
      }),
    ]);
    assert.equal(slow.result, "slow");
    assert.equal(waited.success, true, JSON.stringify(waited));
    assert.equal(waited.execution?.result, "written by the agent");
    assert.deepEqual(finished, ["slow", "generate"]);
    await client.close();
  });

  await t.step("cancelling a request kills its sandbox", async () => {
    const client = await connect(server.url);
    // Cancel once the script runs (not while it waits for a booting sandbox); it names its own
    // process, so the test waits for exactly that one to go.
    const started = Promise.withResolvers<number>();
    client.setNotificationHandler(
      LoggingMessageNotificationSchema,
      (n: { params: { data: unknown } }) => {
        const pid = /started (\d+)/.exec(String(n.params.data))?.[1];
        if (pid) started.resolve(Number(pid));
      },
    );
    const controller = new AbortController();
    const running = execute(
      client,
      "import js\nprint('started', js.Deno.pid, flush=True)\nwhile True:\n    pass",
      { signal: controller.signal },
    );
    const pid = await started.promise;
    assert.ok(sandboxPids(server.pid).includes(pid), `${pid} is not a sandbox of the server`);
    controller.abort();
    await assert.rejects(running);
    for (let i = 0; i < 300 && sandboxPids(server.pid).includes(pid); i++) await delay(50);
    assert.ok(!sandboxPids(server.pid).includes(pid), "the cancelled sandbox was not killed");
    await client.close();
  });

  await t.step(
    "a 2026-07-28 call whose client went away before the script wrote anything is killed",
    async () => {
      // A script that prints nothing, from a client that asked for no log messages: nothing is
      // written on the request's response before the client goes away. The client is a process
      // of its own, killed: its connection is closed by the kernel, as when a client crashes.
      // 250 MB of its own tells its sandbox from the others.
      const request = executeCallInit(SCRIPT_OF_MARKED_SIZE);
      const client = new Deno.Command(Deno.execPath(), {
        args: [
          "eval",
          `await (await fetch(${JSON.stringify(server.url)}, ${JSON.stringify(request)})).text()`,
        ],
        stdin: "null",
        stdout: "null",
        stderr: "null",
      }).spawn();
      const marked = () => sandboxPids(server.pid).find((pid) => residentMb(pid) > MARKED_MB);
      let script: number | undefined;
      for (let i = 0; i < 600 && script === undefined; i++) {
        script = marked();
        if (script === undefined) await delay(50);
      }
      assert.ok(script !== undefined, "no sandbox ran the script");
      client.kill("SIGKILL");
      await client.status;
      for (let i = 0; i < 300 && sandboxPids(server.pid).includes(script); i++) await delay(50);
      assert.ok(
        !sandboxPids(server.pid).includes(script),
        `the cancelled script's sandbox ${script} still runs 15 s after its client went away; sockets:\n${
          tcpSocketsOf(server.pid, Deno.pid)
        }`,
      );
    },
  );

  await t.step("a 2026-07-28 client that accepts only JSON gets its result as JSON", async () => {
    const response = await fetch(server.url, executeCallInit("6 * 7", "application/json"));
    assert.equal(response.headers.get("content-type"), "application/json");
    const reply = await response.json();
    assert.equal(reply.result.structuredContent.result, 42);
  });

  await t.step("a 2026-07-28 answer is well-formed too, as JSON and as a stream", async () => {
    for (const accept of ["application/json", "application/json, text/event-stream"]) {
      const response = await fetch(server.url, executeCallInit("'\\ud800x'", accept));
      const body = await response.text();
      assert.doesNotMatch(body, /\\ud800/i, accept);
      assert.match(body, /\uFFFDx|\\ufffdx/i, accept);
    }
  });

  await t.step(
    "attack: the SDK's own 2026-07-28 errors quote no half surrogate back to the client",
    async () => {
      const init = executeCallInit("1");
      const body = JSON.parse(init.body);
      body.params._meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28\ud800";
      const response = await fetch(server.url, { ...init, body: JSON.stringify(body) });
      const text = await response.text();
      assert.equal(response.status, 400, text);
      assert.match(text, /disagree/, text);
      assert.doesNotMatch(text, /\\ud800/i, text);
      assert.match(text, /2026-07-28(\uFFFD|\\ufffd)/i, text);
    },
  );

  await t.step(
    "attack: a request whose id holds half a surrogate pair is refused at once, on every path",
    async () => {
      const post = async (body: unknown, headers: Record<string, string> = {}) => {
        const response = await fetch(server.url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            ...headers,
          },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(10_000), // a hang fails here
        });
        return { response, text: await response.text() };
      };
      const initialize = (id: string) => ({
        jsonrpc: "2.0",
        id,
        method: "initialize",
        params: {
          protocolVersion: "2025-11-25",
          capabilities: {},
          clientInfo: { name: "raw", version: "1" },
        },
      });
      const opened = await post(initialize("ok"));
      const session = opened.response.headers.get("mcp-session-id")!;
      assert.ok(session, opened.text);
      const modern = JSON.parse(executeCallInit("1").body);
      const cases: [string, unknown, Record<string, string>][] = [
        ["2026-07-28 call answered as a stream", { ...modern, id: "q\ud800" }, {
          ...executeCallInit("1").headers,
        }],
        ["2025-11-25 initialize", initialize("a\ud800"), {}],
        [
          "2025-11-25 request in a session",
          { jsonrpc: "2.0", id: "b\ud800", method: "tools/list" },
          {
            "mcp-session-id": session,
            "mcp-protocol-version": "2025-11-25",
          },
        ],
        ["a batch", [{ jsonrpc: "2.0", id: 1, method: "ping" }, {
          jsonrpc: "2.0",
          id: "c\udc00",
          method: "ping",
        }], {
          "mcp-session-id": session,
          "mcp-protocol-version": "2025-11-25",
        }],
      ];
      for (const [name, body, headers] of cases) {
        const { response, text } = await post(body, headers);
        assert.equal(response.status, 400, `${name}: ${text}`);
        assert.match(text, /Invalid Request: the request id is not well-formed/, name);
        assert.doesNotMatch(text, /\\ud[89a-f]/i, name);
      }
      // An error the SDK writes with the client's string in its data (outside the handlers'
      // own mending): well-formed too.
      await post({ jsonrpc: "2.0", method: "notifications/initialized" }, {
        "mcp-session-id": session,
        "mcp-protocol-version": "2025-11-25",
      });
      const read = await post(
        { jsonrpc: "2.0", id: 9, method: "resources/read", params: { uri: "x\ud800://y" } },
        { "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" },
      );
      assert.match(read.text, /is invalid/, read.text);
      assert.doesNotMatch(read.text, /\\ud800/i, read.text);
      await fetch(server.url, { method: "DELETE", headers: { "mcp-session-id": session } })
        .then((r) => r.body?.cancel());
    },
  );

  await t.step("requests with a foreign Host or Origin are refused", async () => {
    const port = new URL(server.url).port;
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });
    const post = (headers: Record<string, string>) =>
      fetch(server.url, {
        method: "POST",
        body,
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...headers,
        },
      });
    const origin = await post({ origin: "http://evil.example" });
    assert.equal(origin.status, 403);
    await origin.body?.cancel();
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(port) });
    await conn.write(new TextEncoder().encode(
      `POST /mcp HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    ));
    const reply = new TextDecoder().decode(await new Response(conn.readable).arrayBuffer());
    assert.match(reply, /^HTTP\/1\.1 403/);
    // Attacker 37: a Host that makes no URL with the path (a trailing dot after the port) was a
    // 500 from the URL parser; it is refused as any foreign Host.
    for (const host of [`127.0.0.1:${port}.`, `127.0.0.1:${port}:1`, "127.0.0.1:/x"]) {
      const raw = await Deno.connect({ hostname: "127.0.0.1", port: Number(port) });
      await raw.write(new TextEncoder().encode(
        `POST /mcp HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      ));
      const answer = new TextDecoder().decode(await new Response(raw.readable).arrayBuffer());
      assert.match(answer, /^HTTP\/1\.1 (403|400)/, `Host: ${host}: ${answer.slice(0, 200)}`);
    }
    // Attacker 38: with a Host the server answers to, an absolute-form target that is no URL
    // (Deno makes the request's URL of the target) was a 500, logged as an error quoting it.
    for (const target of ["http://a^b/mcp", `http://127.0.0.1:${port}./mcp`, "http://[::1/mcp"]) {
      const raw = await Deno.connect({ hostname: "127.0.0.1", port: Number(port) });
      await raw.write(new TextEncoder().encode(
        `POST ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      ));
      const answer = new TextDecoder().decode(await new Response(raw.readable).arrayBuffer());
      assert.match(answer, /^HTTP\/1\.1 400/, `${target}: ${answer.slice(0, 200)}`);
    }
  });

  await t.step("a body over 4 MiB is refused with 413, and one cut short with 400", async () => {
    // Attacker 39: a POST over the bound was never answered (the body check read a clone whose
    // cancel never finished), holding what had come of it; a body cut short was a 500.
    const port = Number(new URL(server.url).port);
    const big = new Uint8Array(5 * 1024 * 1024).fill(0x20);
    const headers = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    };
    // Not a timing test: without an answer, the test would hang instead of failing.
    const unanswered = () => AbortSignal.timeout(30_000);
    const sized = await fetch(server.url, {
      method: "POST",
      body: big,
      headers,
      signal: unanswered(),
    });
    assert.equal(sized.status, 413);
    await sized.body?.cancel();
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 5; i++) controller.enqueue(new Uint8Array(1024 * 1024).fill(0x20));
        controller.close();
      },
    });
    const chunked = await fetch(server.url, {
      method: "POST",
      body: stream,
      headers,
      signal: unanswered(),
    });
    assert.equal(chunked.status, 413, "a chunked body, no Content-Length");
    await chunked.body?.cancel();
    const raw = await Deno.connect({ hostname: "127.0.0.1", port });
    await raw.write(new TextEncoder().encode(
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{}`,
    ));
    await raw.closeWrite();
    const answer = new TextDecoder().decode(await new Response(raw.readable).arrayBuffer());
    assert.match(answer, /^HTTP\/1\.1 400/, answer.slice(0, 200));
    const fine = await fetch(server.url, {
      method: "POST",
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
      headers,
    });
    assert.notEqual(fine.status, 500, "the server goes on answering");
    await fine.body?.cancel();
  });

  await t.step("attack: a body within the size but costly to parse is refused unread", async () => {
    // Attacker 64: eight bodies of 4 MB nested 2 million deep held every other caller 6.6 s.
    const headers = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    };
    const depth = 1_000_000;
    const deep = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":` +
      "[".repeat(depth) + "]".repeat(depth) + "}}}";
    const refused = await fetch(server.url, { method: "POST", body: deep, headers });
    assert.equal(refused.status, 400);
    assert.match(
      (await refused.json()).error.message,
      /^Bad Request: the body was not read: it is nested deeper than 1,000 levels$/,
    );
    const keys = Array.from({ length: 60_000 }, (_, i) => `"k${i}":0`).join(",");
    const wide = await fetch(server.url, {
      method: "POST",
      body: `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{${keys}}}}`,
      headers,
    });
    assert.equal(wide.status, 400);
    assert.match((await wide.json()).error.message, /more than 50,000 object keys/);
  });

  await t.step(
    "SIGTERM answers running calls CANCELLED and shuts down with no sandbox left",
    async () => {
      const client = await connect(server.url);
      // The server cancels it and says so (it used to close the stream unanswered, and the
      // client waited out its own timeout: operator 51).
      const running = execute(client, "print('started', flush=True)\nwhile True:\n    pass");
      await delay(500);
      const pids = sandboxPids(server.pid);
      assert.ok(pids.length > 0);
      server.child.kill("SIGTERM");
      const answered = await running;
      assert.equal(answered.diagnostics?.error_type, "CANCELLED", JSON.stringify(answered));
      assert.match(answered.diagnostics!.message, /the server is shutting down/);
      assert.equal((await server.child.status).code, 0);
      for (let i = 0; i < 100 && pids.some((p) => isAlive(p)); i++) await delay(50);
      assert.deepEqual(pids.filter((p) => isAlive(p)), []);
      await client.close().catch(() => {});
    },
  );
});

/** `serve --http --host 0.0.0.0` with no --allow-host, which must refuse to start. */
async function serveWildcard(
  env: Record<string, string>,
): Promise<{ code: number; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...SERVE_FLAGS,
      MAIN,
      "serve",
      "--http",
      "--host",
      "0.0.0.0",
      "--config",
      NO_SERVERS,
    ],
    env: childEnv(env),
    clearEnv: true,
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(60_000), // a server that starts anyway fails, not hangs
  }).output();
  return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
}

Deno.test("HTTP beyond loopback needs a token; stateless mode works", async (t) => {
  await t.step("binding 0.0.0.0 without a token refuses to start", async () => {
    const out = await serveWildcard({});
    assert.equal(out.code, 2);
    assert.match(out.stderr, /requires a bearer token/);
  });

  await t.step(
    "binding 0.0.0.0 without --allow-host refuses to start, naming the option",
    async () => {
      const out = await serveWildcard({ CODEMODE_HTTP_TOKEN: "test-token-0123456789abcdef" });
      assert.equal(out.code, 2);
      assert.match(
        out.stderr,
        /error: Cannot serve HTTP on 0\.0\.0\.0: a wildcard address has no name for the Host check; name the host names clients use with --allow-host NAME \(repeatable\)/,
      );
    },
  );

  await t.step(
    "with --allow-host, that name passes the Host check and others get 403",
    async () => {
      const token = "test-token-0123456789abcdef";
      await using server = await startHttp(
        ["--host", "0.0.0.0", "--allow-host", "example.test"],
        { CODEMODE_HTTP_TOKEN: token },
      );
      const port = new URL(server.url).port;
      const auth = { authorization: `Bearer ${token}` };
      assert.equal(await statusWithHost(server.url, `example.test:${port}`, INITIALIZE, auth), 200);
      assert.equal(await statusWithHost(server.url, `evil.test:${port}`, INITIALIZE, auth), 403);
      assert.equal(await statusWithHost(server.url, `0.0.0.0:${port}`, INITIALIZE, auth), 403);
    },
  );

  await t.step("with a token, only requests carrying it get through", async () => {
    const token = "test-token-0123456789abcdef";
    await using server = await startHttp(["--stateless"], { CODEMODE_HTTP_TOKEN: token });
    await assert.rejects(connect(server.url));
    const refused = await post(server.url, INITIALIZE);
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get("www-authenticate"), "Bearer", "names the scheme it wants");
    await refused.body?.cancel();
    const client = await connect(server.url, { authorization: `Bearer ${token}` });
    const r = await execute(client, "print('stateless ok')\n'\\ud800x'");
    assert.doesNotMatch(server.stderr(), /no token/);
    assert.equal(r.stdout, "stateless ok\n");
    assert.equal(r.result, "\uFFFDx", "well-formed, stateless too");
    await client.close();
    // An error the SDK writes with the client's half surrogate in its data, as a stream.
    const read = await fetch(server.url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 4,
        method: "resources/read",
        params: { uri: "x\ud800://y" },
      }),
      signal: AbortSignal.timeout(10_000),
    }).then((response) => response.text());
    assert.match(read, /is invalid/, read);
    assert.doesNotMatch(read, /\\ud800/i, read);
    // No session, so no standalone SSE stream to leave open.
    const get = await fetch(server.url, {
      headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" },
      signal: AbortSignal.timeout(10_000), // a stream that never answers fails, not hangs
    });
    assert.equal(get.status, 405);
    await get.body?.cancel();
  });
});

Deno.test("live output and progress also reach a stdio client", async () => {
  await using server = await startServer({ args: ["--config", NO_SERVERS] });
  const logs: string[] = [];
  server.client.setNotificationHandler(
    LoggingMessageNotificationSchema,
    (n: { params: { data: unknown } }) => {
      logs.push(String(n.params.data));
    },
  );
  const progress: number[] = [];
  const reply = await server.client.callTool(
    {
      name: "execute_code",
      // The script goes on after its report, as in generations_test (see liveFeedback's flush).
      arguments: {
        code:
          "import mcp_tools, time\nprint('hello')\nmcp_tools.report_progress(0.5)\ntime.sleep(0.3)",
      },
    },
    undefined,
    { onprogress: (p: { progress: number }) => progress.push(p.progress) },
  );
  assert.equal(reply.isError, false);
  assert.deepEqual(logs, ["hello\n"]);
  assert.deepEqual(progress, [0.5]);

  // logging/setLevel applies: at "warning", stdout (info) is not sent, stderr (warning) is.
  await server.client.setLoggingLevel("warning");
  logs.length = 0;
  const quiet = await server.execute({
    code: "import sys\nprint('not sent')\nprint('sent', file=sys.stderr)",
  });
  assert.equal(quiet.stdout, "not sent\n", "the result still carries all output");
  assert.deepEqual(logs, ["sent\n"]);
});
