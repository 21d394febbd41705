/**
 * What each CLI command does, loaded only when a command runs: `serve` from source first
 * re-starts itself with least privilege (restricted_host.ts), and that launcher should not load
 * the whole server to do so.
 */
import { didYouMean } from "../config/did_you_mean.ts";
import { INDEX_TOKEN_BUDGET } from "../catalog/tool_index.ts";
import { readEnv } from "../config/environment.ts";
import process from "node:process";
import { isAbsolute } from "node:path";
import {
  serveStdio as serveMcpStdio,
  StdioServerTransport,
} from "@modelcontextprotocol/server/stdio";
import type { JSONRPCMessage } from "@modelcontextprotocol/server";
import { sendWellFormed } from "../host/well_formed_answers.ts";
import { dropAnswerTo } from "../host/stdio_opening.ts";
import { asyncStdout } from "../host/async_stdout.ts";
import { waitAtMost } from "../_util/wait_at_most.ts";
import type { RequestId } from "../host/opening_answer.ts";
import { type App, openApp, SERVE_UPSTREAM_WAIT_MS, startApp } from "../app.ts";
import { unavailableServer } from "../host/unavailable_server.ts";
import type { Host } from "../host/server.ts";
import { formatResultText } from "../execution/execution_result.ts";
import { escapeUnsafe } from "../_util/safe_text.ts";
import { runAgent } from "../agent/agent.ts";
import { selectModel } from "../agent/select_model.ts";
import { formatAgentResult } from "../host/tools/generate_and_execute.ts";
import type { Logger } from "../_util/log.ts";
import type { Config } from "../config/config.ts";
import { serveHttp } from "../host/http_server.ts";
import { ExecutionLimit } from "../host/concurrency.ts";
import { checkBind } from "../host/http_guard.ts";
import { UsageError } from "./usage_error.ts";
import { writeAllSync } from "../_util/write_all.ts";
import { readLinesLinearly } from "../rpc/message_lines.ts";
import { costlyAnswer, invalidRequestAnswer, oversizedAnswer } from "../rpc/invalid_request.ts";
import { counted } from "../_util/counted.ts";

export { formatChecks, runDoctor } from "./doctor.ts";

export interface StdioOptions {
  /** The client's opening message, answered already (see stdio_opening.ts). */
  answered?: RequestId | null;
  /**
   * Executions running at once; more wait their turn, behind at most `settings.max_waiting`
   * (each may hold a sandbox of up to its profile's memory limit).
   */
  maxConcurrent: number;
}

/**
 * MCP over stdio, for clients of both protocol eras: the client's opening message picks the era
 * (a 2026-07-28 request, or a 2025-11-25 `initialize`), and one MCP server serves the
 * connection. Its persistent sessions belong to the connection and end with it.
 */
export async function serveStdio(
  configPath: string | undefined,
  log: Logger,
  { answered = null, maxConcurrent }: StdioOptions,
): Promise<number> {
  // Answers the handshake at once; scripts and tool requests wait for the start-up to finish.
  let app: App;
  try {
    app = await openApp({ configPath, log, upstreamWaitMs: SERVE_UPSTREAM_WAIT_MS });
  } catch (error) {
    return await serveUnavailable(error, log, answered);
  }
  const owner = crypto.randomUUID();
  const hosts = new Set<Host>();
  const limit = new ExecutionLimit(
    maxConcurrent,
    "on this connection",
    app.config.settings.max_waiting,
  );
  const executor = limit.wrap(app.executor);
  const { stop, stopped } = stopOnce(log, async () => {
    // Running executions answer first (CANCELLED), while the connection is open.
    await waitAtMost(app.stopExecutions(), CONNECTION_CLOSE_MS);
    // Bounded: closing sends to the client, which may have stopped reading.
    await waitAtMost(connection.close(), CONNECTION_CLOSE_MS);
    await Promise.all([...hosts].map((host) => host.close().catch(() => {})));
    app.tasks.closeOwner(owner);
    await app.sessions.closeOwner(owner);
    await app.close();
  });
  // The SDK reads the connection from its first byte; an opening message answered already
  // (`answered`, see stdio_opening.ts) is not answered twice.
  const wire = stdioWire(log, stop);
  if (answered !== null) {
    dropAnswerTo(
      wire,
      answered,
      (error) => log.error("the opening answer given early differs from the SDK's", { error }),
    );
  }
  const connection = serveMcpStdio(({ era }) => {
    // Also called for a client's `server/discover` probe on a connection it then drops.
    const host = app.createHost({ era, owner }, { executor });
    hosts.add(host);
    log.info("stdio client connected", {
      protocol: era === "legacy" ? "2025-11-25 or earlier" : "2026-07-28",
    });
    return host.server;
  }, {
    transport: wire,
    onerror: (error) => log.warn("stdio protocol error", { error: error.message }),
  });
  stopWhenStdinEnds(stop);
  log.info("serving MCP over stdio", {
    profiles: app.config.settings.allowed_profiles,
    servers: app.config.servers.map((s) => s.name),
  });
  await stopped;
  return 0;
}

/** How long shutdown waits for the MCP connection to close (it may send to the client). */
const CONNECTION_CLOSE_MS = 2000;

/**
 * MCP over stdio when code mode cannot start (its config is refused, `error`) and a client, not
 * a person, is on the other end: the reason is logged, and the client is served
 * `unavailableServer`, whose one tool says it, until stdin closes. Exit code 1. At a terminal,
 * `error` is thrown on: the person reads it, and the exit.
 */
export async function serveUnavailable(
  error: unknown,
  log: Logger,
  answered: RequestId | null = null,
): Promise<number> {
  if (Deno.stdin.isTerminal()) throw error;
  const reason = (error as Error).message;
  log.error(reason);
  const { stop, stopped } = stopOnce(
    log,
    () => waitAtMost(connection.close(), CONNECTION_CLOSE_MS).then(() => {}),
  );
  const wire = stdioWire(log, stop);
  if (answered !== null) dropAnswerTo(wire, answered, () => {});
  const connection = serveMcpStdio(() => unavailableServer(reason), { transport: wire });
  stopWhenStdinEnds(stop);
  await stopped;
  return 1;
}

/**
 * The MCP stdio connection: lines read in linear time (one that is not JSON warned of, one that is
 * no JSON-RPC message answered with Invalid Request), messages
 * written without blocking the host (see async_stdout.ts); a client that leaves too much unread
 * is taken to be gone.
 */
function stdioWire(log: Logger, stop: (why: string) => Promise<void>): StdioServerTransport {
  const stdout = asyncStdout({ onGone: (why) => void stop(why) });
  const transport = sendWellFormed(new StdioServerTransport(process.stdin, stdout));
  const answer = (message: JSONRPCMessage | null) => {
    if (message) void transport.send(message).catch(() => {});
  };
  readLinesLinearly(
    transport,
    notJsonWarning(log),
    (value) => answer(invalidRequestAnswer(value)),
    {
      maxBytes: MAX_CLIENT_MESSAGE_BYTES,
      onOversized: (start, end) => {
        log.warn("stdin: a message over the size limit was skipped", {
          bytes: MAX_CLIENT_MESSAGE_BYTES,
        });
        answer(oversizedAnswer(start, end, MAX_CLIENT_MESSAGE_BYTES));
      },
      onCostly: (start, end, why) => {
        log.warn("stdin: a message too costly to read was skipped", { why });
        answer(costlyAnswer(start, end, why));
      },
    },
  );
  // The SDK closes the transport when stdin ends (also when it had ended before the transport
  // started: closed while the opening was read) and on an error of its own, after which it reads
  // no more: either way the client cannot be served, so the server stops. Its `onclose` is the
  // SDK's own (serveStdio sets it), so the close itself is watched.
  const close = transport.close.bind(transport);
  transport.close = async () => {
    await close();
    void stop("the stdio connection closed");
  };
  return transport;
}

/**
 * A client's message over stdio, at most: a request with the most input files (8 MiB, as
 * base64) and code fits.
 */
export const MAX_CLIENT_MESSAGE_BYTES = 16 * 1024 * 1024;

/** Calls `stop` once the client closes stdin (one that stops reading: see async_stdout.ts). */
function stopWhenStdinEnds(stop: (why: string) => Promise<void>): void {
  process.stdin.resume(); // paused if the opening was read early
  process.stdin.on("end", () => void stop("stdin closed"));
}

/** Warns of lines on stdin that are not JSON (the first few): MCP takes one message a line. */
function notJsonWarning(log: Logger, most = 5): (start: string) => void {
  let told = 0;
  return (start) => {
    if (told++ >= most) return;
    log.warn(
      "stdin: a line that is not JSON was ignored (MCP over stdio is one JSON-RPC message per line)",
      { line: start, ...(told === most ? { note: "further ones are not logged" } : {}) },
    );
  };
}

/**
 * Shutdown that runs once: on the first `stop(why)` or SIGINT/SIGTERM it logs why and runs
 * `teardown`; `stopped` resolves when that is done.
 */
function stopOnce(log: Logger, teardown: () => Promise<void>) {
  const stopped = Promise.withResolvers<void>();
  let stopping = false;
  const stop = async (why: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`shutting down (${why})`);
    await teardown();
    stopped.resolve();
  };
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    Deno.addSignalListener(signal, () => void stop(signal));
  }
  return { stop, stopped: stopped.promise };
}

export interface RunOptions {
  config?: string;
  profile?: string;
  json: boolean;
  timeout?: number;
  log: Logger;
  out: (text: string) => void;
}

export async function runScript(file: string, options: RunOptions): Promise<number> {
  let code: string;
  try {
    code = file === "-"
      ? await new Response(Deno.stdin.readable).text()
      : await Deno.readTextFile(file);
  } catch (error) {
    // `deno task` runs in the checkout, wherever it was typed: say where a relative path led.
    const from = isAbsolute(file) ? "" : ` (a relative path starts from ${Deno.cwd()})`;
    throw new UsageError(`cannot read ${file}${from}: ${(error as Error).message}`);
  }
  await using app = await startApp({
    configPath: options.config,
    log: options.log,
    poolSize: 0,
    checkArguments: (config) => checkProfileArgument(options.profile, config),
  });
  const result = await app.executor.execute({
    code,
    profile: options.profile,
    timeout_s: options.timeout,
  });
  if (options.json) {
    options.out(JSON.stringify(result, null, 2) + "\n");
  } else {
    if (result.stdout) options.out(result.stdout);
    if (result.stderr) writeAllSync(Deno.stderr, result.stderr);
    if (!result.success) {
      // The script's own output is passed as it is, as an interpreter would; what this command
      // says about the failure (the error's message, a crash's last words) has its control
      // characters escaped: a script could otherwise clear or rewrite the operator's terminal.
      const text = formatResultText({ ...result, stdout: "", stderr: "" });
      writeAllSync(Deno.stderr, escapeUnsafe(text, { keepNewlines: true }) + "\n");
    } else if (result.result !== null && result.result !== undefined) {
      const shown = typeof result.result === "string"
        ? result.result
        : JSON.stringify(result.result);
      options.out(shown + "\n");
    }
  }
  return result.success ? 0 : 1;
}

export async function printTools(
  configPath: string | undefined,
  indexOnly: boolean,
  log: Logger,
  print: (text: string) => void,
): Promise<number> {
  // Upstream servers write these stubs and reasons: escaped for the terminal.
  const out = (text: string) => print(escapeUnsafe(text, { keepNewlines: true }));
  await using app = await startApp({ configPath, log, poolSize: 0 });
  const catalog = app.tools.current;
  if (indexOnly) {
    const index = catalog.index();
    const stubs = catalog.tokens(catalog.servers.map((e) => e.stub).join("\n"));
    const tools = catalog.servers.reduce((n, e) => n + e.specs.length, 0);
    out(index.text + "\n");
    out(
      `# ${counted(tools, "tool")}: index ${index.tokens} tokens (budget ${INDEX_TOKEN_BUDGET}, ` +
        `${index.level}); all stubs ${stubs} tokens (o200k)\n`,
    );
  } else {
    for (const entry of catalog.servers) {
      out(`# ===== mcp_tools.${entry.moduleName} =====\n`);
      if (entry.error) out(`# unavailable: ${entry.error}\n`);
      out(entry.stub + "\n");
    }
  }
  return catalog.servers.some((s) => s.error) ? 1 : 0;
}

export async function runAgentCommand(
  task: string,
  options: Omit<RunOptions, "timeout"> & { maxAttempts?: number },
): Promise<number> {
  await using app = await startApp({
    configPath: options.config,
    log: options.log,
    poolSize: 1,
    checkArguments: (config) => checkProfileArgument(options.profile, config),
  });
  const model = selectModel(app.openAI, null);
  const err = (text: string) => writeAllSync(Deno.stderr, text + "\n");
  // The model's code and the errors it led to are escaped as `run` escapes what it says about a
  // failure: a model (or the script it wrote) could otherwise drive the operator's terminal.
  const said = (text: string) => err(escapeUnsafe(text, { keepNewlines: true }));
  const result = await runAgent(
    { task, max_attempts: options.maxAttempts, profile: options.profile },
    app.agentDeps(model),
    (a) => {
      err(
        `--- attempt ${a.attempt} (${model.name}): ${
          a.error ? `failed at ${a.phase}` : "succeeded"
        } ---`,
      );
      if (a.code) said(a.code.trimEnd());
      if (a.error) said(`error: ${a.error}`);
      for (const note of a.notes) said(`note: ${note}`);
    },
  );
  if (options.json) {
    options.out(JSON.stringify(result, null, 2) + "\n");
  } else {
    const run = result.execution;
    if (result.success && run) {
      // Unlike `run`'s script, this one is the model's: its output is escaped too.
      const shown = (text: string) => options.out(escapeUnsafe(text, { keepNewlines: true }));
      if (run.stdout) shown(run.stdout);
      if (run.result !== null && run.result !== undefined) {
        shown((typeof run.result === "string" ? run.result : JSON.stringify(run.result)) + "\n");
      }
    }
    said(formatAgentResult({ ...result, attempts: [] }).split("\n")[0]!);
  }
  return result.success ? 0 : 1;
}

function checkProfileArgument(profile: string | undefined, config: Config): void {
  const allowed = config.settings.allowed_profiles;
  if (profile !== undefined && !allowed.includes(profile)) {
    throw new UsageError(
      `unknown profile "${profile}" (known: ${allowed.join(", ")})${didYouMean(profile, allowed)}`,
    );
  }
}

export interface HttpFlags {
  host: string;
  port: number;
  stateless: boolean;
  maxConcurrent: number;
  maxPerSession: number;
  allowedOrigins: string[];
  /** Host names served besides the bound address's own (--allow-host). */
  allowedHosts: string[];
  /** HTTP sessions open at once (--max-http-sessions). */
  maxSessions: number;
  /** Idle seconds before an HTTP session is closed (default: settings.session_idle_s). */
  sessionIdleS?: number;
}

/** Refuses an address this process cannot listen on (taken, or not this machine's), plainly. */
function checkListenable(host: string, port: number): void {
  let listener: Deno.Listener | undefined;
  try {
    listener = Deno.listen({ hostname: host, port });
  } catch (error) {
    const where = `${host.includes(":") ? `[${host}]` : host}:${port}`;
    if (error instanceof Deno.errors.AddrInUse) {
      // Not a usage error (exit 1): the same command works once the port is free.
      throw new Error(`cannot listen on ${where}: the address is in use (pick another --port)`);
    }
    if (error instanceof Deno.errors.AddrNotAvailable) {
      throw new UsageError(`cannot listen on ${where}: not an address of this machine (--host)`);
    }
    throw error;
  } finally {
    listener?.close();
  }
}

export async function serveOverHttp(
  configPath: string | undefined,
  log: Logger,
  flags: HttpFlags,
): Promise<number> {
  const token = readEnv("CODEMODE_HTTP_TOKEN") || undefined;
  const refusal = checkBind(flags.host, token, flags.allowedHosts);
  if (refusal) throw new UsageError(refusal);
  // Before anything starts: a taken port is said at once, not after sandboxes have booted.
  checkListenable(flags.host, flags.port);
  const app = await openApp({ configPath, log, upstreamWaitMs: SERVE_UPSTREAM_WAIT_MS });
  const { sessionIdleS, ...options } = flags;
  const idleS = sessionIdleS ?? app.config.settings.session_idle_s;
  let http;
  try {
    http = await serveHttp(app, {
      ...options,
      sessionIdleMs: idleS * 1000,
      maxWaiting: app.config.settings.max_waiting,
      token,
      log,
    });
  } catch (error) {
    await app.close(); // e.g. the port is taken: leave no sandbox behind
    throw error;
  }
  const { stopped } = stopOnce(log, async () => {
    await http.shutdown();
    await app.close();
  });
  await stopped;
  return 0;
}
