/**
 * 2025-11-25 requests served without a protocol session (`--stateless`): each POST is answered
 * by a fresh MCP server over a transport of its own, closed when its response ends. What a
 * session would carry between POSTs is routed here instead:
 *
 * - A request the server sends the client during a call (an approval's elicitation, sampling)
 *   goes out on that call's own response stream under an unguessable id. The client answers
 *   with a POST of its own; the answer is handed to the server instance that asked, by that id.
 *   Ids are rewritten on the way out because every fresh server numbers its requests from 0.
 * - A `notifications/cancelled` POST stops the one running request with that id by ending its
 *   response, which aborts the call and kills its sandbox. Ids come from each client, so one
 *   shared by two running requests is ambiguous: left alone.
 * - The level of a `logging/setLevel` POST is kept for the requests that follow. Like the
 *   persistent code sessions of these requests, it belongs to the HTTP caller (the token).
 *
 * Such a request carries no client capabilities (they were declared in an `initialize` answered
 * by another instance), so the server cannot know what the client offers: it asks, and a
 * "method not found" answer means the client cannot (see src/host/approvals.ts).
 */
import {
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type LoggingLevel,
  type McpServer,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";
import { asLogLevel } from "./log_levels.ts";
import { sendWellFormed } from "./well_formed_answers.ts";

type RequestId = string | number;

/** A server-to-client request waiting for the client's answer. */
interface Awaiting {
  transport: WebStandardStreamableHTTPServerTransport;
  /** The id the asking server gave it. */
  id: RequestId;
}

export interface StatelessLegacy {
  /** Answers one POST whose body is already parsed. */
  handle(request: Request, body: unknown): Promise<Response>;
  /** Requests running now (for tests and logs). */
  readonly running: number;
}

/** `serve` builds the MCP server for one request, given the caller's log level. */
export function statelessLegacy(
  serve: (logLevel: LoggingLevel | undefined) => McpServer,
  options: { keepAliveMs: number },
): StatelessLegacy {
  const awaiting = new Map<string, Awaiting>();
  const running = new Map<RequestId, Set<AbortController>>();
  let logLevel: LoggingLevel | undefined;

  const handle = async (request: Request, body: unknown): Promise<Response> => {
    const messages = Array.isArray(body) ? body : [body];
    if (messages.length > 0 && messages.every(isAnswer)) {
      for (const answer of messages) deliver(answer);
      return new Response(null, { status: 202 });
    }
    const cancelled = cancelledRequestId(body);
    if (cancelled !== undefined) {
      const stops = running.get(cancelled);
      if (stops?.size === 1) { for (const stop of stops) stop.abort(); }
      return new Response(null, { status: 202 });
    }

    logLevel = levelSetBy(body) ?? logLevel;
    const server = serve(logLevel);
    const transport = sendWellFormed(
      new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        keepAliveMs: options.keepAliveMs,
      }),
    );
    const asked = new Map<RequestId, string>();
    const send = transport.send.bind(transport);
    transport.send = (message, options) => send(routeOut(message, asked), options);
    const teardown = () => {
      for (const routed of asked.values()) awaiting.delete(routed);
      void transport.close().catch(() => {});
      void server.close().catch(() => {});
    };
    await server.connect(transport);
    let response: Response;
    try {
      response = await transport.handleRequest(request, { parsedBody: body });
    } catch (error) {
      teardown();
      throw error;
    }
    if (!response.body) {
      teardown();
      return response;
    }
    const id = requestIdOf(body);
    const stop = new AbortController();
    const stops = id === null ? new Set<AbortController>() : running.get(id) ?? new Set();
    if (id !== null) running.set(id, stops.add(stop));
    return whenEnded(response, stop.signal, () => {
      stops.delete(stop);
      if (id !== null && stops.size === 0 && running.get(id) === stops) running.delete(id);
      teardown();
    });

    /**
     * A request to the client leaves under a fresh unguessable id, remembered with the
     * instance that asked; a cancellation of it names that same id.
     */
    function routeOut(message: JSONRPCMessage, asked: Map<RequestId, string>): JSONRPCMessage {
      if (isJSONRPCRequest(message)) {
        const routed = `r_${crypto.randomUUID()}`;
        asked.set(message.id, routed);
        awaiting.set(routed, { transport, id: message.id });
        return { ...message, id: routed };
      }
      const cancelledId = cancelledRequestId(message);
      const routed = cancelledId === undefined ? undefined : asked.get(cancelledId);
      if (routed === undefined) return message;
      const { params } = message as { params: Record<string, unknown> };
      return { ...message, params: { ...params, requestId: routed } } as JSONRPCMessage;
    }
  };

  /** Hands the client's answer to the server that asked (an unknown id is dropped). */
  const deliver = (answer: JSONRPCMessage & { id: RequestId }) => {
    const asked = awaiting.get(String(answer.id));
    if (!asked) return;
    awaiting.delete(String(answer.id));
    asked.transport.onmessage?.({ ...answer, id: asked.id } as JSONRPCMessage);
  };

  return {
    handle,
    get running() {
      return running.size;
    },
  };
}

/** A JSON-RPC response: the client answering a request the server sent it. */
function isAnswer(message: unknown): message is JSONRPCMessage & { id: RequestId } {
  return isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message);
}

/** The id a `notifications/cancelled` names, if that is what `json` is. */
function cancelledRequestId(json: unknown): RequestId | undefined {
  const message = json as { method?: unknown; params?: { requestId?: unknown } } | null;
  if (message?.method !== "notifications/cancelled") return undefined;
  const id = message.params?.requestId;
  return typeof id === "string" || typeof id === "number" ? id : undefined;
}

/** The level a `logging/setLevel` request sets, if that is what `json` is (and it is valid). */
function levelSetBy(json: unknown): LoggingLevel | undefined {
  const message = json as { method?: unknown; params?: { level?: unknown } } | null;
  if (message?.method !== "logging/setLevel") return undefined;
  return asLogLevel(message.params?.level);
}

/** The id of a single JSON-RPC request (else null). */
function requestIdOf(json: unknown): RequestId | null {
  const id = (json as { id?: unknown } | null)?.id;
  return typeof id === "string" || typeof id === "number" ? id : null;
}

/**
 * The same response, whose body `signal` can end (as a client closing the stream would, which
 * aborts the request it answers); `done` runs once the body is sent, abandoned or ended.
 */
function whenEnded(response: Response, signal: AbortSignal, done: () => void): Response {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  void response.body!.pipeTo(writable, { signal }).catch(() => {}).finally(done);
  return new Response(readable, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
