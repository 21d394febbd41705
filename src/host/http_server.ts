/**
 * MCP over Streamable HTTP on Deno.serve, for one server shared by several agents, serving both
 * protocol eras at one endpoint. Every request passes the guard (Host, Origin, bearer token),
 * then goes by its era:
 *
 * - 2026-07-28 requests carry their protocol version and capabilities themselves: each is
 *   answered by a fresh MCP server (the SDK's `createMcpHandler`), with no protocol session.
 * - 2025-11-25 clients get a session by default: its own MCP server (its own handlers,
 *   cancellation and concurrency cap) over the shared sandbox pool and upstream sessions.
 *   `stateless` answers each of their requests with a fresh server instead, routing cancellations
 *   and the client's answers to the server's questions between them (stateless_legacy.ts).
 *
 * Persistent code sessions opened by stateless requests belong to the HTTP caller (whoever holds
 * the token), not to a protocol session.
 *
 * Memory stays flat under churn: an MCP server is built only for a request that starts a
 * session (an initialize POST) or is served statelessly; one that does not become a session is
 * closed at once, and sessions are capped and expire when idle.
 */
import {
  createMcpHandler,
  isInitializeRequest,
  isLegacyRequest,
  type LoggingLevel,
  type ProtocolEra,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";
import type { App } from "../app.ts";
import type { Logger } from "../_util/log.ts";
import { ExecutionLimit } from "./concurrency.ts";
import { callAsEventStream } from "./call_response_mode.ts";
import { allowedFor, checkBind, guardRequest } from "./http_guard.ts";
import type { Host } from "./server.ts";
import { statelessLegacy } from "./stateless_legacy.ts";
import { waitAtMost } from "../_util/wait_at_most.ts";
import { holdsIllFormedId, sendWellFormed, wellFormedResponse } from "./well_formed_answers.ts";
import { serveRelistening } from "./relistening_server.ts";
import { type BodyLimits, RequestBodies } from "./request_bodies.ts";

export interface HttpOptions {
  host: string;
  port: number;
  token?: string;
  stateless: boolean;
  /** Executions running at once, over all sessions. */
  maxConcurrent: number;
  /** Executions running at once in one session. */
  maxPerSession: number;
  /** Executions that may wait for a place, per session and over all (settings.max_waiting). */
  maxWaiting: number;
  /** HTTP sessions open at once; an initialize over the cap gets HTTP 503. */
  maxSessions: number;
  /** A session with no request for this long is closed (with its persistent code sessions). */
  sessionIdleMs: number;
  /** Host names served besides the bound address's own (--allow-host). */
  allowedHosts?: string[];
  /** Origins allowed besides the server's own (e.g. a web client's). */
  allowedOrigins?: string[];
  /** How much of request bodies is read, how fast (default: request_bodies.ts's). */
  bodyLimits?: Partial<BodyLimits>;
  log: Logger;
}

export interface HttpServer {
  /** The port actually bound (useful with port 0). */
  port: number;
  url: string;
  /** HTTP sessions open now. */
  readonly sessions: number;
  /** Stops accepting, cancels running executions, closes every session. */
  shutdown(): Promise<void>;
  /** Resolves once `shutdown` is done. */
  finished: Promise<void>;
}

interface Session {
  /** Owns the persistent code sessions opened in this HTTP session. */
  owner: string;
  transport: WebStandardStreamableHTTPServerTransport;
  host: Host;
  /** Requests whose response is still being sent (an open SSE stream counts). */
  active: number;
  /** When the last request ended (ms since the epoch). */
  lastActive: number;
  /** The ids of its requests being answered (see `requestKeys`). */
  answering: Set<string>;
}

/**
 * An open response stream gets an SSE comment this often, so a 2026-07-28 client that went away
 * (a call cancelled by closing its request) is noticed by a failed write even when the
 * connection's close itself went unseen; the SDK's default is 15 s. (A 2025-11-25 session's call
 * is cancelled by `notifications/cancelled` only: that revision says a closed stream is not a
 * cancellation.)
 */
export const SSE_KEEP_ALIVE_MS = 2000;
/** How long shutdown waits for in-flight requests. */
const SHUTDOWN_GRACE_MS = 5000;

export function serveHttp(app: App, options: HttpOptions): Promise<HttpServer> {
  const refusal = checkBind(options.host, options.token, options.allowedHosts);
  if (refusal) return Promise.reject(new TypeError(refusal));
  const { log } = options;
  const bodies = new RequestBodies(
    (status, message, headers) => Response.json(jsonRpcError(message), { status, headers }),
    log,
    options.bodyLimits,
  );
  const overall = new ExecutionLimit(options.maxConcurrent, "on this server", options.maxWaiting);
  const sessions = new Map<string, Session>();
  /** Initialize requests being answered: sessions about to open. */
  let opening = 0;
  let guard = {
    token: options.token,
    allowedHosts: [] as string[],
    allowedOrigins: [] as string[],
  };

  /** Owns the persistent code sessions of stateless requests: the HTTP caller. */
  const caller = `http:${crypto.randomUUID()}`;
  const callerLimit = new ExecutionLimit(
    options.maxPerSession,
    "for this caller",
    options.maxWaiting,
  );
  const newSessionHost = (owner: string) => {
    const session = new ExecutionLimit(
      options.maxPerSession,
      "in this session",
      options.maxWaiting,
    );
    return app.createHost({ era: "legacy", owner }, {
      executor: session.wrap(overall.wrap(app.executor)),
    });
  };
  /** One instance per stateless request, of either era. */
  const perRequest = (era: ProtocolEra, logLevel?: LoggingLevel) =>
    app.createHost({ era, owner: caller, perRequest: true, logLevel }, {
      executor: callerLimit.wrap(overall.wrap(app.executor)),
    }).server;
  const modernOptions = {
    legacy: "reject" as const,
    keepAliveMs: SSE_KEEP_ALIVE_MS,
    onerror: (error: Error) => log.debug("http request refused", { error: error.message }),
  };
  const modern = createMcpHandler(({ era }) => perRequest(era), modernOptions);
  // A 2026-07-28 client cancels a call by closing its request, and Deno notices a closed
  // connection only once the response has begun (seen: `request.signal` aborted within 15 ms of
  // the close, headers out, nothing written): a call answered in JSON has no response until its
  // result, so a script that prints nothing would run on to its timeout. Calls are answered
  // as an event stream from the start instead (headers at once, then keep-alive comments).
  const modernCalls = createMcpHandler(({ era }) => perRequest(era), {
    ...modernOptions,
    responseMode: "sse",
  });
  const legacyStateless = statelessLegacy(
    (logLevel) => perRequest("legacy", logLevel),
    { keepAliveMs: SSE_KEEP_ALIVE_MS },
  );
  // A 2026-07-28 client learns of tool changes on its subscriptions/listen stream.
  const unwatchCatalog = app.tools.onChange(() => {
    void modern.notify.toolsChanged();
    void modern.notify.resourcesChanged();
  });

  const close = async (session: Session) => {
    await session.transport.close().catch(() => {});
    await session.host.close().catch(() => {});
    await app.sessions.closeOwner(session.owner);
  };

  /** Counts the request against the session until its response has been sent. */
  const track = async (session: Session, respond: () => Promise<Response>, ids: string[] = []) => {
    session.active++;
    for (const id of ids) session.answering.add(id);
    const done = () => {
      session.active--;
      session.lastActive = Date.now();
      for (const id of ids) session.answering.delete(id);
    };
    try {
      return afterBody(await respond(), done);
    } catch (error) {
      done();
      throw error;
    }
  };

  const handleStateless = async (request: Request): Promise<Response> => {
    // No session, so nothing to push: no standalone SSE stream, which would stay open (and
    // hold up shutdown) after its client has gone.
    if (request.method !== "POST") {
      return Response.json(jsonRpcError("Stateless server: only POST is supported"), {
        status: 405,
        headers: { allow: "POST" },
      });
    }
    const body = await readJsonBody(request);
    if ("refusal" in body) {
      return Response.json(jsonRpcError(body.refusal.message, null, body.refusal.code), {
        status: body.refusal.status,
      });
    }
    return await legacyStateless.handle(request, body.json);
  };

  /** A POST without a session id: only an initialize request may start one. */
  const startSession = async (request: Request): Promise<Response> => {
    const body = await readJsonBody(request);
    if ("refusal" in body) {
      return Response.json(jsonRpcError(body.refusal.message, null, body.refusal.code), {
        status: body.refusal.status,
      });
    }
    const messages = Array.isArray(body.json) ? body.json : [body.json];
    if (!messages.some((m) => isInitializeRequest(m))) {
      // E.g. the `server/discover` probe some clients send first: answered without building
      // an MCP server for it.
      return Response.json(
        jsonRpcError(
          "Bad Request: Mcp-Session-Id header is required (a session starts with an initialize request)",
          requestId(body.json),
        ),
        { status: 400 },
      );
    }
    if (sessions.size + opening >= options.maxSessions) {
      log.warn("http session refused: the session cap is reached", { sessions: sessions.size });
      return Response.json(
        jsonRpcError(
          `Cannot open an HTTP session: ${options.maxSessions} sessions are open (the limit, --max-http-sessions); close one (HTTP DELETE with its Mcp-Session-Id) or retry when idle sessions expire (after ${
            options.sessionIdleMs / 1000
          } s)`,
          requestId(body.json),
        ),
        { status: 503 },
      );
    }
    opening++;
    let reserved = true;
    const release = () => {
      if (reserved) opening--;
      reserved = false;
    };
    const owner = crypto.randomUUID();
    const host = newSessionHost(owner);
    const session: Session = {
      owner,
      transport: sendWellFormed(
        new WebStandardStreamableHTTPServerTransport({
          sessionIdGenerator: () => crypto.randomUUID(),
          keepAliveMs: SSE_KEEP_ALIVE_MS,
          onsessioninitialized: (sessionId: string) => {
            release();
            sessions.set(sessionId, session);
            log.info("http session opened", { session: sessionId, sessions: sessions.size });
          },
          onsessionclosed: (sessionId: string) => {
            if (sessions.get(sessionId) === session) sessions.delete(sessionId);
            void close(session);
            log.info("http session closed", { session: sessionId, sessions: sessions.size });
          },
        }),
      ),
      host,
      active: 0,
      lastActive: Date.now(),
      answering: new Set(),
    };
    try {
      await host.server.connect(session.transport);
      return await track(
        session,
        () => session.transport.handleRequest(request, { parsedBody: body.json }),
      );
    } finally {
      release();
      // Refused (wrong Accept header, a batch, …): this server never becomes a session.
      const id = session.transport.sessionId;
      if (id === undefined || sessions.get(id) !== session) void close(session);
    }
  };

  const handle = async (received: Request, info: Deno.ServeHandlerInfo): Promise<Response> => {
    let request = received;
    // Who may talk first: nothing of a refused request is read.
    const refused = guardRequest(request.headers, guard);
    if (refused) {
      // A 401 names the scheme it wants (RFC 9110, 11.6.1).
      const headers = refused.status === 401 ? { "www-authenticate": "Bearer" } : undefined;
      return Response.json(jsonRpcError(refused.message), { status: refused.status, headers });
    }
    // The request's URL is made of its target, or of its Host header when the target is a path:
    // one that is no URL (`POST http://a^b/mcp`, `Host: 127.0.0.1:8788.`) is the client's
    // mistake, not a failure of ours (it was a 500, logged as an error quoting it).
    const path = URL.parse(request.url)?.pathname;
    if (path === undefined) {
      return Response.json(jsonRpcError("Bad Request: the request target is not a URL"), {
        status: 400,
      });
    }
    if (path !== "/mcp") {
      return new Response("Not found: the MCP endpoint is /mcp\n", { status: 404 });
    }
    // Methods are case-sensitive (RFC 9110): `post` is none of these. The SDK upper-cases a
    // method and read such a request's body itself, past the bounds of RequestBodies: 60
    // `post`s of 4 MB that stalled held 520 MB, never timed out, and kept their connections
    // through a shutdown.
    if (!MCP_METHODS.includes(request.method)) {
      return Response.json(
        jsonRpcError(`Method Not Allowed: /mcp takes ${MCP_METHODS.join(", ")}`),
        {
          status: 405,
          headers: { allow: MCP_METHODS.join(", ") },
        },
      );
    }
    if (request.method !== "POST" && carriesBody(request.headers)) {
      return Response.json(jsonRpcError(`Bad Request: a ${request.method} carries no body`), {
        status: 400,
        headers: { connection: "close" },
      });
    }
    /** A POST's body, read. */
    let text = "";
    if (request.method === "POST") {
      const buffered = await bodies.read(request);
      if (buffered instanceof Response) return buffered;
      request = buffered.request;
      text = buffered.text;
      if (holdsIllFormedId(buffered.text)) {
        return Response.json(
          jsonRpcError(
            "Invalid Request: the request id is not well-formed Unicode (it holds half a surrogate pair)",
            null,
            -32600,
          ),
          { status: 400 },
        );
      }
    }
    if (!(await isLegacyRequest(request))) {
      // A client that takes only JSON gets JSON, and a call it abandons runs on to its end.
      if (!callAsEventStream(request.headers)) return await modern.fetch(request);
      // Which connection a call came on and when its response ended: what an operator needs
      // when a cancelled call seems to run on.
      const from = (info.remoteAddr as Deno.NetAddr).port;
      log.debug("http call received", { from });
      info.completed.then(
        () => log.debug("http call ended", { from }),
        () => log.debug("http call broke off", { from }),
      );
      return await modernCalls.fetch(request);
    }
    if (options.stateless) return await handleStateless(request);

    const id = request.headers.get("mcp-session-id");
    if (id) {
      const session = sessions.get(id);
      if (!session) {
        return Response.json(jsonRpcError("Unknown or expired session"), { status: 404 });
      }
      if (request.method !== "POST") {
        return await track(session, () => session.transport.handleRequest(request));
      }
      // Parsed once here, for the transport too. An id the session is still answering is
      // refused: the SDK keeps one response stream per id, so both requests went unanswered,
      // their streams open, and the session never expired.
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        // The transport answers it (Parse error).
        return await track(session, () => session.transport.handleRequest(request));
      }
      const ids = requestKeys(json);
      const taken = firstTakenId(ids, session.answering);
      if (taken !== undefined) {
        return Response.json(
          jsonRpcError(
            `Invalid Request: id ${
              taken.slice(2, 66)
            } is that of a request of this session still being answered, or given twice`,
            null,
            -32600,
          ),
          { status: 400 },
        );
      }
      return await track(
        session,
        () => session.transport.handleRequest(request, { parsedBody: json }),
        ids,
      );
    }
    if (request.method !== "POST") {
      return Response.json(jsonRpcError("A session starts with an initialize POST"), {
        status: 400,
      });
    }
    return await startSession(request);
  };

  // Idle sessions: a client that went away without DELETE leaves nothing behind for long.
  const sweeper = setInterval(() => {
    const now = Date.now();
    for (const [id, session] of sessions) {
      if (session.active === 0 && now - session.lastActive > options.sessionIdleMs) {
        sessions.delete(id);
        log.info("http session expired", {
          session: id,
          idle_s: options.sessionIdleMs / 1000,
          sessions: sessions.size,
        });
        void close(session);
      }
    }
  }, Math.min(30_000, Math.max(250, options.sessionIdleMs / 4)));

  const server = serveRelistening({
    hostname: options.host,
    port: options.port,
    log,
    onError: (error) => {
      // A client that cancelled or went away is no failure of ours.
      const gone = (error as Error | undefined)?.name === "AbortError";
      // Bounded: an error may quote what the client sent.
      log[gone ? "debug" : "error"]("http request failed", { error: String(error).slice(0, 500) });
      return Response.json(jsonRpcError("Internal error", null, -32603), { status: 500 });
    },
  }, async (request, info) => wellFormedResponse(await handle(request, info)));
  const port = server.addr.port;
  guard = {
    token: options.token,
    ...allowedFor(options.host, port, {
      hosts: options.allowedHosts,
      origins: options.allowedOrigins,
    }),
  };
  const shown = options.host.includes(":") ? `[${options.host}]` : options.host;
  const url = `http://${shown}:${port}/mcp`;
  log.info("serving MCP over Streamable HTTP", {
    url,
    hosts: guard.allowedHosts,
    stateless: options.stateless,
    token: options.token ? "required" : "none (loopback only)",
    max_sessions: options.maxSessions,
    session_idle_s: options.sessionIdleMs / 1000,
  });
  if (!options.token) {
    // Loopback only (a wider bind needs a token), but every user of this machine is on it.
    log.warn(
      "no token (CODEMODE_HTTP_TOKEN): every local user and process can connect and run " +
        "scripts; set one on a machine shared with others",
    );
  }

  const finished = Promise.withResolvers<void>();
  async function shutdown(): Promise<void> {
    clearInterval(sweeper);
    unwatchCatalog();
    const closing = server.shutdown();
    // Running executions answer first (CANCELLED, on their own streams): closing a session
    // first ended its calls with no answer, and their clients waited out their timeouts.
    await waitAtMost(app.stopExecutions(), SHUTDOWN_GRACE_MS);
    // Aborts running 2026-07-28 requests, which kills their sandboxes.
    await Promise.all([modern.close(), modernCalls.close()]).catch(() => {});
    // Closing a session aborts its running requests, which kills their sandboxes.
    const open = [...sessions.values()];
    sessions.clear();
    await Promise.all(open.map(close));
    // In-flight requests get a few seconds to finish; a stream a client left open does not
    // keep the server from stopping.
    if (!await waitAtMost(closing, SHUTDOWN_GRACE_MS)) {
      log.warn(`requests still open after ${SHUTDOWN_GRACE_MS / 1000} s; stopping anyway`);
    }
    finished.resolve();
  }

  return Promise.resolve({
    port,
    url,
    get sessions() {
      return sessions.size;
    },
    shutdown,
    finished: finished.promise,
  });
}

/** The HTTP methods of Streamable HTTP, as written. */
const MCP_METHODS = ["POST", "GET", "DELETE"];

/** Whether a request's headers announce a body (a length above 0, or chunks). */
function carriesBody(headers: Headers): boolean {
  return Number(headers.get("content-length") ?? 0) !== 0 || headers.has("transfer-encoding");
}

function jsonRpcError(message: string, id: string | number | null = null, code = -32000) {
  return { jsonrpc: "2.0", error: { code, message }, id };
}

/**
 * The ids of the requests in a POST's JSON (one message or a batch), each keyed with its type
 * (`n:5`, `s:5`: the SDK tells 5 from "5"); notifications and responses have none (pure).
 */
export function requestKeys(json: unknown): string[] {
  const messages = Array.isArray(json) ? json : [json];
  return messages.flatMap((message) => {
    const { id, method } = (message ?? {}) as { id?: unknown; method?: unknown };
    if (typeof method !== "string") return [];
    if (typeof id === "number") return [`n:${id}`];
    return typeof id === "string" ? [`s:${id}`] : [];
  });
}

/** The first of `ids` being answered already, or given before it in the same batch (pure). */
export function firstTakenId(ids: string[], answering: ReadonlySet<string>): string | undefined {
  const seen = new Set<string>();
  for (const id of ids) {
    if (answering.has(id) || seen.has(id)) return id;
    seen.add(id);
  }
  return undefined;
}

/** The id of a single JSON-RPC request, for an error that answers it (else null). */
function requestId(json: unknown): string | number | null {
  const id = (json as { id?: unknown } | null)?.id;
  return typeof id === "string" || typeof id === "number" ? id : null;
}

/** A POST's body (already read by RequestBodies) parsed as JSON, or why it cannot be. */
async function readJsonBody(
  request: Request,
): Promise<{ json: unknown } | { refusal: { status: number; code: number; message: string } }> {
  try {
    return { json: JSON.parse(await request.text()) };
  } catch {
    return { refusal: { status: 400, code: -32700, message: "Parse error: Invalid JSON" } };
  }
}

/** The same response, calling `done` once its body has been sent or abandoned. */
function afterBody(response: Response, done: () => unknown): Response {
  if (!response.body) {
    done();
    return response;
  }
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  void response.body.pipeTo(writable).catch(() => {}).finally(done);
  return new Response(readable, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
