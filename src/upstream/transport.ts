/**
 * Creates the MCP client transport for one configured upstream server.
 */
import { childNesting, NESTING_VARIABLE } from "../config/this_server.ts";
import { readEnv } from "../config/environment.ts";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import {
  SSEClientTransport,
  StreamableHTTPClientTransport,
  type Transport,
} from "@modelcontextprotocol/client";
import type { ServerConfig } from "../config/config.ts";
import { fetchThatAborts } from "../_util/fetch_that_aborts.ts";
import { cappedFetch } from "./capped_fetch.ts";
import { endingAnsweredStreams, RequestStreams } from "./request_streams.ts";
import { flooredReconnects } from "./reconnect_floor.ts";
import { denoCommand } from "./deno_command.ts";
import { serverEnvironment } from "./network_env.ts";
import { MAX_MESSAGE_BYTES, readLinesLinearly } from "../rpc/message_lines.ts";
import { tooLargeReason, unreadReplyAnswer } from "./unread_reply.ts";
import { answersOnlyWhileRead, requestsAtABoundedRate } from "./upstream_requests.ts";

export type TransportFactory = (server: ServerConfig) => {
  transport: Transport;
  /** Lines the server writes to stderr (stdio servers only). */
  onStderr?: (listener: (text: string) => void) => void;
};

/**
 * The real transports. `deno` as a command means the Deno running this server. A stdio child
 * gets the SDK's minimal default environment, `DENO_DIR` when set, the proxy and CA variables
 * (network_env.ts), and its configured `env`. HTTP servers are reached with Deno's fetch, which
 * honours the proxy variables and `DENO_CERT` itself; Streamable HTTP through fetchThatAborts,
 * so a call given up on (its per-call timeout, or its script ended) closes its request, which
 * is how a 2026-07-28 server is told. Every message is bounded, and all that one server's
 * replies hold at once (capped_fetch.ts, reply_budget.ts); a request's event stream ends once
 * it is answered or cancelled (request_streams.ts), and a server's `retry:` is floored
 * (reconnect_floor.ts). A stdio child that stops reading is sent no answers to its own requests,
 * and its requests are taken at a bounded rate (upstream_requests.ts).
 */
export const defaultTransportFactory: TransportFactory = (server) => {
  if (server.kind === "http") {
    const url = new URL(server.url);
    const requestInit = { headers: server.headers };
    if (server.transport === "sse") {
      // Through fetchThatAborts too: a POST given up on (ACKNOWLEDGE_MS) must close its
      // connection, which Deno's own fetch forgets once the response object is collected.
      const fetchCapped = cappedFetch(fetchThatAborts, { answersOnTheStream: true });
      return { transport: new SSEClientTransport(url, { requestInit, fetch: fetchCapped }) };
    }
    const streams = new RequestStreams();
    const transport = new StreamableHTTPClientTransport(url, {
      requestInit,
      fetch: cappedFetch(fetchThatAborts, { streams }),
    });
    return { transport: endingAnsweredStreams(flooredReconnects(transport), streams) };
  }
  const base: Record<string, string> = { ...getDefaultEnvironment() };
  const denoDir = readEnv("DENO_DIR");
  if (denoDir) base.DENO_DIR = denoDir;
  base.NO_COLOR = "1"; // its stderr ends up in reasons and logs, not on a terminal
  const env = serverEnvironment(base, readEnv, server.env);
  // A code mode server down the line knows how deep it is, and refuses an endless chain.
  env[NESTING_VARIABLE] = childNesting(readEnv(NESTING_VARIABLE));
  const stdio = new StdioClientTransport({
    command: denoCommand(server.command),
    args: server.args,
    env,
    cwd: server.cwd,
    stderr: "pipe",
  });
  const child = stdio as unknown as { _process?: { stdin?: { writableNeedDrain: boolean } } };
  // A message past the bound fails the call it answers, as over HTTP (capped_fetch.ts); the
  // SDK's own buffer closed the connection, and the server was restarted, for one large reply.
  const oversized = {
    maxBytes: MAX_MESSAGE_BYTES,
    onOversized: (start: string, end: string) =>
      unreadReplyAnswer(start, end, undefined, tooLargeReason(MAX_MESSAGE_BYTES, "the message")),
    onCostly: (start: string, end: string, why: string) =>
      unreadReplyAnswer(start, end, undefined, `Cannot read the server's reply: ${why}`),
  };
  const transport = requestsAtABoundedRate(answersOnlyWhileRead(
    readLinesLinearly(stdio, undefined, undefined, oversized),
    () => child._process?.stdin?.writableNeedDrain === true,
  ));
  return {
    transport,
    onStderr: (listener) => {
      transport.stderr?.on(
        "data",
        (chunk: Uint8Array) => listener(new TextDecoder().decode(chunk)),
      );
    },
  };
};
