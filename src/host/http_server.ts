/**
 * MCP over Streamable HTTP on Deno.serve, for one server shared by several agents.
 *
 * Stateful by default: each session gets its own MCP server (its own handlers, cancellation and
 * concurrency cap) over the shared sandbox pool and upstream sessions. `stateless` answers each
 * request with a fresh server. Every request passes the guard (Host, Origin, bearer token).
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { App } from "../app.ts";
import type { Logger } from "../log.ts";
import { ExecutionLimit } from "./concurrency.ts";
import { allowedFor, checkBind, guardRequest } from "./http_guard.ts";
import type { Host } from "./server.ts";

export interface HttpOptions {
  host: string;
  port: number;
  token?: string;
  stateless: boolean;
  /** Executions running at once, over all sessions. */
  maxConcurrent: number;
  /** Executions running at once in one session. */
  maxPerSession: number;
  /** Origins allowed besides the server's own (e.g. a web client's). */
  allowedOrigins?: string[];
  log: Logger;
}

export interface HttpServer {
  /** The port actually bound (useful with port 0). */
  port: number;
  url: string;
  /** Stops accepting, cancels running executions, closes every session. */
  shutdown(): Promise<void>;
  finished: Promise<void>;
}

interface Session {
  transport: WebStandardStreamableHTTPServerTransport;
  host: Host;
}

/** How long shutdown waits for in-flight requests. */
const SHUTDOWN_GRACE_MS = 5000;

export function serveHttp(app: App, options: HttpOptions): Promise<HttpServer> {
  const refusal = checkBind(options.host, options.token);
  if (refusal) return Promise.reject(new TypeError(refusal));
  const { log } = options;
  const overall = new ExecutionLimit(options.maxConcurrent, "on this server");
  const sessions = new Map<string, Session>();
  let guard = {
    token: options.token,
    allowedHosts: [] as string[],
    allowedOrigins: [] as string[],
  };

  const newHost = () => {
    const session = new ExecutionLimit(options.maxPerSession, "in this session");
    return app.createHost({ execute: session.wrap(overall.wrap(app.execute)) });
  };

  const handle = async (request: Request): Promise<Response> => {
    if (new URL(request.url).pathname !== "/mcp") return new Response("Not found", { status: 404 });
    const refused = guardRequest(request.headers, guard);
    if (refused) return Response.json(jsonRpcError(refused.message), { status: refused.status });

    if (options.stateless) {
      // No session, so nothing to push: no standalone SSE stream, which would stay open (and
      // hold up shutdown) after its client has gone.
      if (request.method !== "POST") {
        return Response.json(jsonRpcError("Stateless server: only POST is supported"), {
          status: 405,
          headers: { allow: "POST" },
        });
      }
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
      });
      const host = newHost();
      await host.server.connect(transport);
      // The response may still stream; the per-request server closes once it is sent.
      return closeAfter(await transport.handleRequest(request), () => host.close());
    }

    const id = request.headers.get("mcp-session-id");
    if (id) {
      const session = sessions.get(id);
      if (!session) {
        return Response.json(jsonRpcError("Unknown or expired session"), { status: 404 });
      }
      return await session.transport.handleRequest(request);
    }
    if (request.method !== "POST") {
      return Response.json(jsonRpcError("A session starts with an initialize POST"), {
        status: 400,
      });
    }
    const host = newHost();
    const transport: WebStandardStreamableHTTPServerTransport =
      new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: (sessionId: string) => {
          sessions.set(sessionId, { transport, host });
          log.info("http session opened", { session: sessionId, sessions: sessions.size });
        },
        onsessionclosed: (sessionId: string) => {
          sessions.delete(sessionId);
          void host.close();
          log.info("http session closed", { session: sessionId });
        },
      });
    await host.server.connect(transport);
    return await transport.handleRequest(request);
  };

  const server = Deno.serve({
    hostname: options.host,
    port: options.port,
    onListen: () => {},
    onError: (error) => {
      log.error("http request failed", { error: String(error) });
      return Response.json(jsonRpcError("Internal error"), { status: 500 });
    },
  }, handle);
  const port = (server.addr as Deno.NetAddr).port;
  guard = { token: options.token, ...allowedFor(options.host, port, options.allowedOrigins) };
  const shown = options.host.includes(":") ? `[${options.host}]` : options.host;
  const url = `http://${shown}:${port}/mcp`;
  log.info("serving MCP over Streamable HTTP", {
    url,
    stateless: options.stateless,
    token: options.token ? "required" : "none (loopback only)",
  });

  async function shutdown(): Promise<void> {
    const closing = server.shutdown();
    // Closing a session aborts its running requests, which kills their sandboxes.
    await Promise.all([...sessions.values()].map(async ({ transport, host }) => {
      await transport.close().catch(() => {});
      await host.close().catch(() => {});
    }));
    sessions.clear();
    // In-flight requests get a few seconds to finish; a stream a client left open does not
    // keep the server from stopping.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        log.warn(`requests still open after ${SHUTDOWN_GRACE_MS / 1000} s; stopping anyway`);
        resolve();
      }, SHUTDOWN_GRACE_MS);
    });
    await Promise.race([closing, deadline]);
    clearTimeout(timer);
  }

  return Promise.resolve({ port, url, shutdown, finished: server.finished });
}

function jsonRpcError(message: string) {
  return { jsonrpc: "2.0", error: { code: -32000, message }, id: null };
}

/** The same response, calling `close` once its body has been sent or abandoned. */
function closeAfter(response: Response, close: () => Promise<void>): Response {
  if (!response.body) {
    void close().catch(() => {});
    return response;
  }
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  void response.body.pipeTo(writable).catch(() => {}).finally(() => close().catch(() => {}));
  return new Response(readable, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
