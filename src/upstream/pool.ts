/**
 * One long-lived MCP client session per configured upstream server.
 *
 * All servers connect in parallel at start; one that fails is reported and retried with backoff
 * without holding up the others. A session that drops is reconnected the same way; `session`
 * says why a server cannot take calls meanwhile. `tools/list_changed` refreshes that server's
 * tools. Calls themselves go through the tool gate (src/execution/tool_gate.ts).
 */
import { Client, type ClientOptions } from "@modelcontextprotocol/client";
import { outputValidator } from "./output_validator.ts";
import type {
  HttpServerConfig,
  ServerConfig,
  UnavailableServer,
  UpstreamProtocol,
} from "../config/config.ts";
import type { ServerTools } from "../catalog/catalog.ts";
import type { ToolInfo } from "../catalog/python_stubs.ts";
import type { Logger } from "../_util/log.ts";
import { VERSION } from "../_util/version.ts";
import type { TransportFactory } from "./transport.ts";
import { waitAtMost } from "../_util/wait_at_most.ts";
import { coalesced } from "../_util/coalesced.ts";
import { MAX_CALL_NAME_LENGTH } from "../rpc/sandbox_protocol.ts";
import { quotedName } from "../_util/quoted_name.ts";

/**
 * The least time between two readings of one server's tool list when it keeps announcing
 * changes: a server that sent 100 `list_changed` a second, each for 4,000 tools, held the host's
 * thread (every call took seconds); now it costs one list every gap.
 */
export const LIST_REFRESH_GAP_MS = 2000;

/**
 * The most of one server's tool list (as JSON, over all its pages) the host reads: its tools
 * become a module every sandbox is sent (see MAX_MODULES_CHARS in catalog.ts). Of 31 real
 * servers measured the largest list is about 100 KB.
 */
export const MAX_TOOL_LIST_CHARS = 8 * 1024 * 1024;

export type UpstreamState = "connecting" | "connected" | "reconnecting" | "closed";

/** Where a call to one server goes: its live MCP client session, or why there is none. */
export type UpstreamSession = { client: Client } | { unavailable: string };

export interface UpstreamOptions {
  servers: readonly ServerConfig[];
  /** Servers the config lists that cannot start (shown with their reason; calls get it). */
  unavailable?: readonly UnavailableServer[];
  transports: TransportFactory;
  log: Logger;
  /** How long connecting (initialize + tools/list) may take. */
  connectTimeoutMs?: number;
  /** Called whenever any server's tools change (connect, reconnect, list_changed, failure). */
  onChange?: () => void;
  /**
   * Scrubs secrets from the text the pool writes itself (connection errors, a server's stderr,
   * error replies), before that text is cut to length: a cut could split a secret so that no
   * later scrubbing recognises the part left. Default: none.
   */
  redact?: (text: string) => string;
}

const MAX_BACKOFF_MS = 30_000;
/**
 * A connection that lasted this long starts its reconnections from the shortest delay again; one
 * that dropped sooner goes on from where the last delay was. A server that exited 300 ms after
 * every tool list was reconnected four times a second, each connection rebuilding the catalog
 * (80 % of the host's CPU, stalls of over a second).
 */
const STABLE_CONNECTION_MS = 30_000;
/**
 * How long closing waits for server processes to exit: a connect under way, and the process of a
 * failed one, which the SDK stops with SIGTERM 2 s after closing its stdin, on a timer that does
 * not keep the process alive (this wait does).
 */
const CLOSE_WAIT_MS = 5000;
/** How much of a server's stderr is kept (its last lines go into error messages). */
const STDERR_KEPT_CHARS = 16_384;
/**
 * Once the kept stderr has been cut at its front, this many characters after the cut are never
 * shown: a secret split by the cut (up to this long) cannot be recognised, so it is dropped.
 */
const STDERR_CUT_MARGIN = 4096;

class UpstreamConnection {
  state: UpstreamState = "connecting";
  tools: ToolInfo[] = [];
  /** `tools` as JSON, to tell a changed list from a repeated one. */
  #toolsJson = "[]";
  lastError: string | undefined;
  #client: Client | null = null;
  /**
   * A connect still under way: its server process runs (and during the SDK's `server/discover`
   * probe, a second, probing one that closing the client does not reach), so `close` closes
   * its transport and waits for the attempt to end.
   */
  #connecting: { transport: { close(): Promise<void> }; ended: Promise<void> } | null = null;
  #attempt = 0;
  /** When the current connection was made (performance.now()). */
  #connectedAt = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stderrTail = "";
  #stderrCut = false;
  readonly #firstAttempt = Promise.withResolvers<void>();
  /** Server processes of failed connects that have not exited yet. */
  readonly #exiting = new Set<Promise<void>>();
  /** Resolves once the first connect has succeeded or failed (or the pool closed). */
  readonly firstAttempt = this.#firstAttempt.promise;

  constructor(readonly config: ServerConfig, readonly options: UpstreamOptions) {}

  #redact(text: string): string {
    return this.options.redact ? this.options.redact(text) : text;
  }

  /** The last `lines` lines of the server's stderr, scrubbed, then cut to `max` characters. */
  #stderrLines(lines: number, max: number): string {
    let text = this.#redact(this.#stderrTail);
    if (this.#stderrCut) text = text.slice(STDERR_CUT_MARGIN);
    return lastWords(text, lines, max);
  }

  async connect(): Promise<void> {
    if (this.state === "closed") return;
    const { log } = this.options;
    const { transport, onStderr } = this.options.transports(this.config);
    onStderr?.((text) => {
      const tail = this.#stderrTail + text;
      this.#stderrCut ||= tail.length > STDERR_KEPT_CHARS;
      this.#stderrTail = tail.slice(-STDERR_KEPT_CHARS);
    });
    // A server may send list_changed as often as it likes: one list at a time, one per gap.
    const refresh = coalesced(
      () =>
        this.#refreshTools(client).catch((error) =>
          log.warn("cannot refresh tools", { server: this.config.name, error: String(error) })
        ),
      LIST_REFRESH_GAP_MS,
    );
    const client: Client = new Client({ name: "mcp-code-mode", version: VERSION }, {
      capabilities: {},
      jsonSchemaValidator: outputValidator(),
      versionNegotiation: versionNegotiation(this.config.protocol),
      // A 2025-11-25 server's list_changed notification, or a 2026-07-28 server's event on the
      // subscription the SDK opens: either way the list is read again here.
      listChanged: {
        tools: {
          autoRefresh: false,
          debounceMs: 0,
          onChanged: () => refresh.request(),
        },
      },
    });
    let connected = false;
    const exited = Promise.withResolvers<void>();
    client.onclose = () => {
      refresh.close();
      exited.resolve();
      if (!connected || this.#client !== client) return;
      this.#client = null;
      this.#dropped("the session closed");
    };
    const attempt = { transport, ended: Promise.withResolvers<void>() };
    this.#connecting = { transport, ended: attempt.ended.promise };
    try {
      const timeout = this.options.connectTimeoutMs ?? 30_000;
      await client.connect(transport, { timeout });
      await this.#refreshTools(client);
      if (this.#isClosed()) {
        await client.close();
        return;
      }
      connected = true;
      this.#client = client;
      this.#connectedAt = performance.now();
      this.state = "connected";
      this.lastError = undefined;
      log.info("upstream server connected", { server: this.config.name, tools: this.tools.length });
      this.options.onChange?.();
    } catch (error) {
      await client.close().catch(() => {});
      this.#exiting.add(exited.promise);
      void exited.promise.then(() => this.#exiting.delete(exited.promise));
      // Closing the pool stopped this connect: the server is shutting down, nothing failed.
      if (this.#isClosed()) return;
      const stderr = this.#stderrLines(3, 500);
      const previous = this.lastError;
      const why = this.config.kind !== "stdio"
        ? remoteRefusal(errorText(error), this.config)
        : /\bENOENT\b/.test(errorText(error))
        ? `command "${this.config.command}" not found (not on the PATH code mode was started ` +
          "with, or not installed)"
        : /Connection closed/.test(errorText(error))
        ? `${errorText(error)}: "${this.config.command}" ended before it answered the MCP ` +
          "handshake (is it an MCP server over stdio, and are its args right?)"
        : errorText(error);
      this.lastError = cutReason(`${this.#redact(why)}${stderr ? ` (stderr: ${stderr})` : ""}`);
      // Each retry failing the same way is news once; the rest go to the debug log.
      log[this.lastError === previous ? "debug" : "error"]("cannot connect upstream server", {
        server: this.config.name,
        error: this.lastError,
      });
      this.#scheduleReconnect();
    } finally {
      if (this.#connecting?.transport === transport) this.#connecting = null;
      attempt.ended.resolve();
      this.#firstAttempt.resolve();
    }
  }

  #dropped(reason: string): void {
    if (this.state === "closed") return;
    if (performance.now() - this.#connectedAt >= STABLE_CONNECTION_MS) this.#attempt = 0;
    const stderr = this.#stderrLines(2, 300);
    this.lastError = cutReason(`${reason}${stderr ? ` (stderr: ${stderr})` : ""}`);
    const said = { server: this.config.name, reason: this.lastError };
    // Said as the reconnection starts, not at once: a Ctrl-C in a terminal stops code mode and
    // its stdio servers together, and a server's end often came first, read as a fault just
    // before "shutting down (SIGINT)" (newcomer 65). A stop before then says nothing of it.
    this.#scheduleReconnect(() =>
      this.options.log.warn("upstream server disconnected; reconnecting", said)
    );
  }

  /** Connects again after the backoff; `notice`, if given, is said just before. */
  #scheduleReconnect(notice?: () => void): void {
    if (this.state === "closed") return;
    this.state = "reconnecting";
    this.options.onChange?.();
    const delay = Math.min(MAX_BACKOFF_MS, 250 * 2 ** this.#attempt++);
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      notice?.();
      void this.connect();
    }, delay);
  }

  async #refreshTools(client: Client): Promise<void> {
    const tools: ToolInfo[] = [];
    const overlong: string[] = [];
    let cursor: string | undefined;
    let size = 0;
    for (let page = 0; page < 100; page++) {
      const result = await client.listTools(cursor ? { cursor } : {});
      size += JSON.stringify(result.tools).length;
      if (size > MAX_TOOL_LIST_CHARS) {
        throw new RangeError(
          `Cannot list the server's tools: they take more than ${
            MAX_TOOL_LIST_CHARS / (1024 * 1024)
          } MiB of JSON`,
        );
      }
      for (const tool of result.tools) {
        // A call names its tool in at most MAX_CALL_NAME_LENGTH characters: a longer name
        // listed would be a function no script can call (the host refuses the call's shape).
        if (tool.name.length > MAX_CALL_NAME_LENGTH) {
          overlong.push(tool.name);
          continue;
        }
        tools.push({
          server: this.config.name,
          name: tool.name,
          description: tool.description,
          inputSchema: tool.inputSchema as Record<string, unknown>,
          outputSchema: tool.outputSchema as Record<string, unknown> | undefined,
        });
      }
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    if (overlong.length > 0) {
      this.options.log.warn("upstream tools left out: their names are too long to call", {
        server: this.config.name,
        tools: overlong.length,
        first: quotedName(this.#redact(overlong[0]!)),
        limit: MAX_CALL_NAME_LENGTH,
      });
    }
    const json = JSON.stringify(tools);
    const changed = json !== this.#toolsJson;
    this.tools = tools;
    this.#toolsJson = json;
    if (changed && this.state === "connected") this.options.onChange?.();
  }

  #isClosed(): boolean {
    return this.state === "closed";
  }

  /** The live session, or why there is none. */
  session(): UpstreamSession {
    const client = this.#client;
    if (this.state === "connected" && client !== null) return { client };
    const why = this.lastError ? `: ${this.lastError}` : "";
    return { unavailable: `server "${this.config.name}" is not connected (${this.state})${why}` };
  }

  async close(): Promise<void> {
    this.state = "closed";
    this.#firstAttempt.resolve();
    clearTimeout(this.#timer);
    const client = this.#client;
    const connecting = this.#connecting;
    this.#client = this.#connecting = null;
    await client?.close().catch(() => {});
    await connecting?.transport.close().catch(() => {});
    const exits = [connecting?.ended, ...this.#exiting].filter((p) => p !== undefined);
    if (exits.length > 0) await waitAtMost(Promise.all(exits), CLOSE_WAIT_MS);
  }
}

export class UpstreamPool implements AsyncDisposable {
  readonly #connections: Map<string, UpstreamConnection>;
  readonly #unavailable: Map<string, UnavailableServer>;

  constructor(options: UpstreamOptions) {
    this.#connections = new Map(
      options.servers.map((server) => [server.name, new UpstreamConnection(server, options)]),
    );
    this.#unavailable = new Map((options.unavailable ?? []).map((s) => [s.name, s]));
  }

  /**
   * Connects every server in parallel; resolves when each has connected or failed once, or
   * after `waitMs` (servers still connecting then go on in the background, and `onChange` says
   * when they are done: one slow server does not hold up a client's tools/list).
   */
  async start(options: { waitMs?: number } = {}): Promise<void> {
    const all = Promise.all([...this.#connections.values()].map((c) => c.connect()));
    if (options.waitMs === undefined) await all;
    else await waitAtMost(all, options.waitMs);
  }

  /**
   * Where a call to `server` goes, once its first connect has ended (a call made while a server
   * is still connecting at start waits for it, rather than failing as unavailable).
   */
  async settledSession(server: string): Promise<UpstreamSession | undefined> {
    await this.#connections.get(server)?.firstAttempt;
    return this.session(server);
  }

  /**
   * Every server with its tools and, when it is not connected, why. A server that dropped keeps
   * its last known tools, so scripts still import them and get a clear error when calling.
   */
  snapshot(): ServerTools[] {
    const connections = [...this.#connections.values()].map((c) => ({
      server: c.config.name,
      description: c.config.description,
      tools: c.tools,
      error: c.state === "connected" ? undefined : c.lastError ?? c.state,
    }));
    const unavailable = [...this.#unavailable.values()].map((s) => ({
      server: s.name,
      description: s.description,
      tools: [],
      error: `not started: ${s.reason}`,
    }));
    return [...connections, ...unavailable];
  }

  state(server: string): UpstreamState | undefined {
    return this.#connections.get(server)?.state;
  }

  /** Where a call to `server` goes (undefined: no server of that name is configured). */
  session(server: string): UpstreamSession | undefined {
    const unavailable = this.#unavailable.get(server);
    if (unavailable) {
      return { unavailable: `server "${server}" not started: ${unavailable.reason}` };
    }
    return this.#connections.get(server)?.session();
  }

  async close(): Promise<void> {
    await Promise.all([...this.#connections.values()].map((c) => c.close()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/**
 * How the client picks the protocol revision. The `server/discover` probe of "auto" gets a short
 * timeout: a 2025-11-25 stdio server that never answers it is treated as one after that.
 */
function versionNegotiation(protocol: UpstreamProtocol): ClientOptions["versionNegotiation"] {
  switch (protocol) {
    case "auto":
      return { mode: "auto", probe: { timeoutMs: 5000 } };
    case "2025-11-25":
      return { mode: "legacy" };
    case "2026-07-28":
      return { mode: { pin: "2026-07-28" } };
  }
}

/**
 * Why a remote server did not connect, and, when it wants authorization (HTTP 401 or 403),
 * what to do: code mode sends the entry's `headers` and does not sign in with OAuth.
 */
export function remoteRefusal(text: string, config: HttpServerConfig): string {
  if (!/\b(HTTP )?40[13]\b|Unauthorized|Forbidden/i.test(text)) return text;
  const advice = Object.keys(config.headers).some((h) => /^authorization$/i.test(h))
    ? 'check the token in the entry\'s "headers"'
    : 'give the entry "headers": {"Authorization": "Bearer ${YOUR_TOKEN}"} (set YOUR_TOKEN ' +
      "where code mode starts)";
  return `${text}. The server wants authorization: ${advice}; code mode does not sign in with OAuth`;
}

/**
 * A reason a server is unavailable, cut to what an error message, the index and a log line can
 * carry (an upstream's 9 MiB refusal reached every script that called it). Scrubbed already.
 */
function cutReason(reason: string): string {
  return reason.length > MAX_REASON_CHARS ? `${reason.slice(0, MAX_REASON_CHARS)}…` : reason;
}

const MAX_REASON_CHARS = 2000;

/** An error's message, with its causes' ("fetch failed: tcp connect error: refused"). */
export function errorText(error: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = error, depth = 0; e !== undefined && depth < 4; depth++) {
    const message = e instanceof Error ? e.message : String(e);
    if (message && !parts.some((p) => p.includes(message))) parts.push(message);
    e = e instanceof Error ? e.cause : undefined;
  }
  return parts.join(": ");
}

const TERMINAL_COLOUR = new RegExp(String.fromCharCode(27) + "\\[[0-9;]*[A-Za-z]", "g");

/**
 * The last `lines` different lines of a server's stderr that say something, joined: without
 * terminal colours, the frames of a stack trace (after which the error's own line would be cut
 * off), and a line said again (each failed start of a server says the same). The reason a
 * server is unavailable reaches the agent through the tool index.
 */
export function lastWords(stderr: string, lines: number, max: number): string {
  const said = stderr.replace(TERMINAL_COLOUR, "").split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !/^at [^ ]/.test(line));
  const last = new Set<string>();
  for (let i = said.length - 1; i >= 0 && last.size < lines; i--) last.add(said[i]!);
  return [...last].reverse().join(" | ").slice(0, max);
}
