/**
 * Tracing end to end: the real server, started as users do with Deno's OpenTelemetry on,
 * exports its spans over OTLP (http/json) to a receiver on loopback that this test runs, and
 * passes trace context on to an HTTP upstream server that this test runs too.
 */
import assert from "node:assert/strict";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { z } from "zod";
import { delay, ROOT, startServer, writeConfig } from "./_helpers.ts";
import type { ToolCallRecord } from "../src/execution/execution_result.ts";
import { toolCallAttributes } from "../src/execution/tool_gate.ts";
import type { ToolReply } from "../src/rpc/sandbox_protocol.ts";

/** Text that goes into a tool call's arguments, and text a tool answers: never in a span. */
const ARGUMENT_MARKER = "argument-marker-q7Zt91";
const RESULT_MARKER = "result-marker-Kw38pX";
const STDOUT_MARKER = "stdout-marker-Hd52vL";

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: { key: string; value: Record<string, unknown> }[];
}

/** An OTLP/HTTP receiver on loopback: keeps every body it is sent, and the spans in them. */
function otlpReceiver() {
  const bodies: string[] = [];
  const spans: OtlpSpan[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const body = await req.text();
    bodies.push(body);
    if (new URL(req.url).pathname === "/v1/traces") {
      assert.match(req.headers.get("content-type") ?? "", /json/);
      const payload = JSON.parse(body) as {
        resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[];
      };
      for (const resource of payload.resourceSpans) {
        for (const scope of resource.scopeSpans) spans.push(...scope.spans);
      }
    }
    return Response.json({});
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    bodies,
    spans,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}

/**
 * A Streamable HTTP MCP server on loopback with one tool, `lookup {query}`; it keeps the
 * `traceparent` header and the arguments of each tools/call it gets.
 */
function httpUpstream() {
  const calls: { traceparent: string | null; arguments: unknown }[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const message = req.method === "POST" ? await req.clone().json().catch(() => null) : null;
    if (message?.method === "tools/call") {
      calls.push({ traceparent: req.headers.get("traceparent"), arguments: message.params });
    }
    const mcp = new McpServer({ name: "remote", version: "1.0.0" });
    mcp.registerTool("lookup", {
      description: "Looks something up.",
      inputSchema: { query: z.string() },
    }, () => ({ content: [{ type: "text" as const, text: `found ${RESULT_MARKER}` }] }));
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await mcp.connect(transport);
    return transport.handleRequest(req);
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/mcp`,
    calls,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}

function attributes(span: OtlpSpan): Record<string, unknown> {
  return Object.fromEntries(
    (span.attributes ?? []).map(({ key, value }) => [key, Object.values(value)[0]]),
  );
}

/** Two tool calls that run (one over HTTP) and one the profile denies. */
const SCRIPT = `
import js
try:
    # Would be exported if the sandbox had the host's OpenTelemetry settings.
    js.Deno.telemetry.tracerProvider.getTracer("probe").startSpan("sandbox-probe").end()
except Exception:
    pass
# Time for such an export (batched every 100 ms here) before the script ends and its process goes.
import asyncio
await asyncio.sleep(0.5)
from mcp_tools import remote, local, ToolDenied
found = remote.lookup(query="${ARGUMENT_MARKER}")
greeting = local.greet(name="${ARGUMENT_MARKER}")
try:
    local.remove_tool(name="greet")
except ToolDenied:
    pass
print("${STDOUT_MARKER}", found, greeting)
len(found)
`;

Deno.test("tracing: an execute_code with two tool calls arrives at an OTLP receiver as one trace", async () => {
  await using receiver = otlpReceiver();
  await using upstream = httpUpstream();
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/permissions`);
    await Deno.writeTextFile(
      `${dir}/permissions/default.json`,
      JSON.stringify({ allowed_tools: ["remote.*", "local.greet"] }),
    );
    const config = await writeConfig(dir, {
      servers: {
        remote: { url: upstream.url },
        local: {
          command: "deno",
          args: ["run", "--no-prompt", "-A", `${ROOT}tests/fixtures/dynamic_server.ts`, "stdio"],
        },
      },
      settings: { pool_size: 1, permissions_dir: "permissions" },
    });
    await using server = await startServer({
      args: ["--config", config],
      env: {
        OTEL_DENO: "true",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_BSP_SCHEDULE_DELAY: "100",
        OTEL_SERVICE_NAME: "codemode-test",
      },
    });

    const r = await server.execute({ code: SCRIPT });
    assert.equal(r.success, true, r.text);
    assert.match(r.stdout, new RegExp(`${STDOUT_MARKER} found ${RESULT_MARKER}`));
    assert.equal(r.tool_calls.count, 3);

    const named = (name: string) => receiver.spans.filter((s) => s.name === name);
    // Spans are sent in batches (every 100 ms here), which may arrive in any order: wait for all.
    const upstreamSpan = () => upstream.calls[0]?.traceparent?.split("-")[2];
    const arrived = () =>
      ["execute_code", "sandbox.acquire", "sandbox.run"].every((n) => named(n).length > 0) &&
      named("tool_call").length >= 3 && receiver.spans.some((s) => s.spanId === upstreamSpan());
    for (let i = 0; i < 200 && !arrived(); i++) await delay(50);
    const [root, ...others] = named("execute_code");
    assert.ok(root, `no execute_code span arrived; got: ${receiver.spans.map((s) => s.name)}`);
    assert.equal(others.length, 0);
    assert.ok(!root.parentSpanId, "an execute_code over stdio starts its own trace");
    assert.deepEqual(attributes(root), {
      "codemode.profile": "default",
      "codemode.outcome": "ok",
      "codemode.tool_calls": 3,
    });

    const children = (name: string) =>
      named(name).filter((s) => s.traceId === root.traceId && s.parentSpanId === root.spanId);
    assert.equal(children("sandbox.acquire").length, 1);
    assert.equal(children("sandbox.run").length, 1);
    assert.deepEqual(attributes(children("sandbox.run")[0]!), { "codemode.outcome": "ok" });
    const callSpans = children("tool_call");
    assert.equal(named("tool_call").length, 3, "every tool_call span is in the execution's trace");
    const callSpan = (tool: string) => callSpans.find((s) => attributes(s)["mcp.tool"] === tool);
    const call = (tool: string) => {
      const span = callSpan(tool);
      return span && attributes(span);
    };
    assert.deepEqual(call("lookup"), {
      "mcp.server": "remote",
      "mcp.tool": "lookup",
      "codemode.decision": "allow",
      "codemode.outcome": "ok",
    });
    assert.deepEqual(call("greet"), {
      "mcp.server": "local",
      "mcp.tool": "greet",
      "codemode.decision": "allow",
      "codemode.outcome": "ok",
    });
    assert.deepEqual(call("remove_tool"), {
      "mcp.server": "local",
      "mcp.tool": "remove_tool",
      "codemode.decision": "deny",
      "codemode.outcome": "denied",
      "codemode.error_kind": "denied",
    });

    // The HTTP upstream got the call, with the execution's trace id in its traceparent.
    assert.equal(upstream.calls.length, 1);
    assert.deepEqual(upstream.calls[0]!.arguments, {
      name: "lookup",
      arguments: { query: ARGUMENT_MARKER },
    });
    const traceparent = upstream.calls[0]!.traceparent ?? "";
    assert.match(traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    const [, traceId, parentId] = traceparent.split("-");
    assert.equal(traceId, root.traceId);
    // It names the span of Deno's fetch, made inside the call's span.
    const request = receiver.spans.find((s) => s.spanId === parentId);
    assert.ok(request, "the traceparent names a span that was not exported");
    assert.equal(request.parentSpanId, callSpan("lookup")!.spanId);

    // Nothing the sandbox could export, and no data, anywhere in what was sent.
    assert.equal(named("sandbox-probe").length, 0, "a sandbox exported a span");
    const sent = receiver.bodies.join("\n");
    for (const marker of [ARGUMENT_MARKER, RESULT_MARKER, STDOUT_MARKER]) {
      assert.ok(!sent.includes(marker), `${marker} was exported`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("toolCallAttributes() names the decision and the outcome, never the call's data", async (t) => {
  const base = { server: "s", tool: "t", duration_ms: 1 };
  const rows: [string, ToolCallRecord, ToolReply, Record<string, string>][] = [
    ["allowed and answered", { ...base, outcome: "ok" }, { result: { secret: "x" } }, {
      "codemode.decision": "allow",
      "codemode.outcome": "ok",
    }],
    [
      "allowed, no answer in time",
      { ...base, outcome: "error", error: "no answer" },
      { error: { kind: "timeout", message: "no answer" } },
      {
        "codemode.decision": "allow",
        "codemode.outcome": "timeout",
        "codemode.error_kind": "timeout",
      },
    ],
    [
      "asked a person, who declined",
      { ...base, outcome: "denied", approval: "declined" },
      { error: { kind: "denied", message: "denied: declined" } },
      {
        "codemode.decision": "approve",
        "codemode.outcome": "denied",
        "codemode.approval": "declined",
        "codemode.error_kind": "denied",
      },
    ],
    [
      "asked a person, who approved",
      { ...base, outcome: "ok", approval: "approved" },
      { result: {} },
      { "codemode.decision": "approve", "codemode.outcome": "ok", "codemode.approval": "approved" },
    ],
  ];
  for (const [name, record, reply, expected] of rows) {
    await t.step(name, () => {
      assert.deepEqual(toolCallAttributes(record, reply), {
        "mcp.server": "s",
        "mcp.tool": "t",
        ...expected,
      });
    });
  }
});
