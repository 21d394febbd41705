/**
 * Test helpers for the Streamable HTTP transport: start `serve --http` as a real process (as
 * users do, through the restricted-host launcher), connect the SDK's client, and raw requests.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import type { ExecutionResult } from "../src/execution/execution_result.ts";
import { childEnv, hostPid, MAIN, ROOT, SERVE_FLAGS } from "./_helpers.ts";
import type { App } from "../src/app.ts";
import { type HttpOptions, type HttpServer, serveHttp } from "../src/host/http_server.ts";

export const NO_SERVERS = `${ROOT}tests/fixtures/no_servers.json`;

export interface HttpProcess extends AsyncDisposable {
  url: string;
  /** The serving host (the launcher's child). */
  pid: number;
  child: Deno.ChildProcess;
  stderr(): string;
}

export async function startHttp(
  args: string[] = [],
  env: Record<string, string> = {},
  config = NO_SERVERS,
): Promise<HttpProcess> {
  const child = spawnHttp(args, env, config);
  let stderr = "";
  const url = Promise.withResolvers<string>();
  void (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      stderr += chunk;
      const match = /"url":"(http:[^"]+)"/.exec(stderr);
      if (match) url.resolve(match[1]!);
    }
    url.reject(new Error(`the server exited:\n${stderr}`));
  })();
  void child.stdout.cancel();
  return {
    url: await url.promise,
    pid: hostPid(child.pid),
    child,
    stderr: () => stderr,
    async [Symbol.asyncDispose]() {
      try {
        child.kill("SIGTERM");
      } catch { /* gone */ }
      await child.status;
    },
  };
}

/** `serve --http` on a free port, started as users start it; its stderr piped, for the caller to read. */
export function spawnHttp(
  args: string[] = [],
  env: Record<string, string> = {},
  config = NO_SERVERS,
): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...SERVE_FLAGS,
      MAIN,
      "serve",
      "--http",
      "--port",
      "0",
      "--config",
      config,
      ...args,
    ],
    env: childEnv(env),
    clearEnv: true,
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

export async function connect(url: string, headers: Record<string, string> = {}) {
  const client = new Client({ name: "http-test", version: "0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }),
  );
  return client;
}

export async function execute(
  client: Client,
  code: string,
  options: Record<string, unknown> = {},
  args: Record<string, unknown> = {},
) {
  const reply = await client.callTool(
    { name: "execute_code", arguments: { code, ...args } },
    undefined,
    { timeout: 60_000, ...options },
  );
  return reply.structuredContent as unknown as ExecutionResult;
}

const JSON_HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
};

/** A raw JSON-RPC POST (with the session's id when given). */
export function post(url: string, body: unknown, session?: string): Promise<Response> {
  return fetch(url, {
    method: "POST",
    body: JSON.stringify(body),
    headers: session
      ? {
        ...JSON_HEADERS,
        "mcp-session-id": session,
        "mcp-protocol-version": LATEST_PROTOCOL_VERSION,
      }
      : JSON_HEADERS,
  });
}

/** A JSON-RPC initialize request with this id. */
export function initializeRequest(id: number) {
  return {
    jsonrpc: "2.0",
    id,
    method: "initialize",
    params: {
      protocolVersion: LATEST_PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: "raw", version: "0" },
    },
  };
}

export const INITIALIZE = initializeRequest(1);

/** The probe current Python clients send before initialize. */
export const DISCOVER = { jsonrpc: "2.0", id: 7, method: "server/discover", params: {} };

/** Opens a session with a raw initialize; returns the response and its session id. */
export async function openRawSession(url: string) {
  const reply = await post(url, INITIALIZE);
  const text = await reply.text();
  return { status: reply.status, session: reply.headers.get("mcp-session-id"), text };
}

export async function closeRawSession(url: string, session: string): Promise<number> {
  const reply = await fetch(url, {
    method: "DELETE",
    headers: { "mcp-session-id": session, "mcp-protocol-version": LATEST_PROTOCOL_VERSION },
  });
  await reply.body?.cancel();
  return reply.status;
}

/** Sends raw HTTP/1.1 so the Host header is exactly `host`; returns the status line's code. */
export async function statusWithHost(
  url: string,
  host: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<number> {
  const text = JSON.stringify(body);
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(url).port) });
  await conn.write(new TextEncoder().encode(
    `POST /mcp HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
      `Accept: application/json, text/event-stream\r\n${extra}Content-Length: ${text.length}\r\n` +
      `Connection: close\r\n\r\n${text}`,
  ));
  const reply = new TextDecoder().decode(await new Response(conn.readable).arrayBuffer());
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(reply)?.[1]);
}

/** `serveHttp` in process on a free loopback port, with serve's defaults unless told. */
export function serveHttpInProcess(
  app: App,
  options: Partial<HttpOptions> & Pick<HttpOptions, "log">,
): Promise<HttpServer> {
  return serveHttp(app, {
    host: "127.0.0.1",
    port: 0,
    stateless: false,
    maxConcurrent: 8,
    maxPerSession: 4,
    maxWaiting: 64,
    maxSessions: 256,
    sessionIdleMs: 600_000,
    ...options,
  });
}
