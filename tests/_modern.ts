/**
 * Test helpers for raw MCP 2026-07-28 traffic, where a test needs exact messages: the per-request
 * `_meta` envelope, one request over HTTP, and a connection over stdio.
 */
import { spawnServe } from "./_helpers.ts";

export const MODERN = "2026-07-28";
export const TASKS = { extensions: { "io.modelcontextprotocol/tasks": {} } };

/** The `_meta` envelope every 2026-07-28 request carries. */
export function envelope(capabilities: Record<string, unknown> = TASKS) {
  return {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
    "io.modelcontextprotocol/clientCapabilities": capabilities,
  };
}

/** A raw 2026-07-28 caller over stdio: one server process, one connection. */
export function rawStdio(configPath: string, env: Record<string, string>) {
  const child = spawnServe({ args: ["--config", configPath], env });
  const writer = child.stdin.getWriter();
  const waiting = new Map<number, (message: Record<string, unknown>) => void>();
  void (async () => {
    let buffered = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      buffered += chunk;
      let newline;
      while ((newline = buffered.indexOf("\n")) >= 0) {
        const message = JSON.parse(buffered.slice(0, newline));
        buffered = buffered.slice(newline + 1);
        waiting.get(message.id)?.(message);
      }
    }
  })();
  let id = 0;
  return {
    request(
      method: string,
      params: Record<string, unknown>,
      capabilities: Record<string, unknown> = TASKS,
    ) {
      const message = {
        jsonrpc: "2.0",
        id: ++id,
        method,
        params: { ...params, _meta: envelope(capabilities) },
      };
      const answered = new Promise<Record<string, unknown>>((resolve) =>
        waiting.set(message.id, resolve)
      );
      void writer.write(new TextEncoder().encode(JSON.stringify(message) + "\n"));
      return answered;
    },
    async [Symbol.asyncDispose]() {
      await writer.close().catch(() => {});
      await child.status;
    },
  };
}

/** One 2026-07-28 JSON-RPC request over HTTP; its response (JSON or the SSE stream's). */
export async function postModern(url: string, request: Record<string, unknown>) {
  const params = request.params as { taskId?: string; name?: string } | undefined;
  const name = params?.taskId ?? params?.name;
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": MODERN,
      "mcp-method": String(request.method),
      ...(name ? { "mcp-name": name } : {}),
    },
    body: JSON.stringify(request),
  });
  const text = await response.text();
  if (!(response.headers.get("content-type") ?? "").includes("text/event-stream")) {
    return JSON.parse(text);
  }
  return text.split("\n").filter((line) => line.startsWith("data:"))
    .map((line) => JSON.parse(line.slice(5)))
    .find((message) => message.id === request.id);
}

/** A raw 2026-07-28 `execute_code` call as fetch options (plain data: it can cross to a child). */
export function executeCallInit(code: string, accept = "application/json, text/event-stream") {
  return {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept,
      "mcp-protocol-version": MODERN,
      "mcp-method": "tools/call",
      "mcp-name": "execute_code",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "execute_code", arguments: { code, timeout_s: 120 }, _meta: envelope({}) },
    }),
  };
}
