/**
 * Stage: the tool gate. Every tool call a script makes passes here, one execution's gate per
 * run: decide it (the profile's policy and call limit), route it (to the upstream server's live
 * MCP session, when that server is connected and its catalog lists the tool; a few at a time),
 * and record it (for the result and the audit log). The reply goes back to the sandbox scrubbed
 * of secrets. Nothing here trusts the sandbox's request.
 */
import { mib } from "../_util/bytes.ts";
import { type CallToolResult, type Client, SdkErrorCode } from "@modelcontextprotocol/client";
import type { Catalog } from "../catalog/catalog.ts";
import { toIdentifier } from "../catalog/identifiers.ts";
import { decideToolCall } from "../policy/tool_policy.ts";
import type { Redactor } from "../policy/redaction.ts";
import {
  type CallToolParams,
  MAX_CALL_NAME_LENGTH,
  type ToolReply,
} from "../rpc/sandbox_protocol.ts";
import type { Profile } from "../sandbox/profile.ts";
import { errorText, type UpstreamSession } from "../upstream/pool.ts";
import type { ToolCallRecord } from "./execution_result.ts";
import { depthOver } from "./result_mapping.ts";
import { NO_TRACING, type TraceSpan, type Tracing } from "../_util/tracing.ts";
import {
  type Approver,
  denialReason,
  keysScrubbedAlike,
  nobodyToAsk,
  unshowableReason,
} from "./approval.ts";
import { waitAtMost } from "../_util/wait_at_most.ts";
import { Turns } from "../_util/turns.ts";

export interface ToolGateDeps {
  profile: Profile;
  /** The current catalog (which servers and tools exist). */
  catalog: () => Catalog;
  /** The upstream server's session (undefined: no such server). */
  session: (server: string) => Promise<UpstreamSession | undefined>;
  redact: Redactor;
  /** Per-call timeout. */
  callTimeoutMs: number;
  /** Largest tool result passed on to a sandbox, as JSON characters. */
  maxResultChars?: number;
  /** Asks a person about calls the profile's `approve` globs name (absent: nobody to ask). */
  approve?: Approver;
  /** How long a person has to answer, for the denial message. */
  approvalTimeoutMs?: number;
  /** Learns the shape of successful results (observed return types); absent: not observed. */
  observe?: ResultObserver;
  /** Where each call's span goes (absent: nowhere). */
  tracing?: Tracing;
  /**
   * The execution's span, parent of each call's: calls arrive over the sandbox's channel, whose
   * reader was started outside the execution, so the active span there is not the execution's.
   */
  traceParent?: TraceSpan;
}

/** Where successful results are shown (scrubbed), for the observed return types of stubs. */
export interface ResultObserver {
  record(server: string, tool: string, result: Record<string, unknown>): void;
  /** Called once the execution's calls are done. */
  settle(): Promise<void>;
}

/** What the run lends the gate: its time limit stops while a person decides. */
export interface RunClock {
  /** Stops the run's clock; call the returned function to start it again. */
  pause(): () => void;
}

/** How long calls still running when a script ends may take to finish before the result. */
export const PENDING_CALLS_GRACE_MS = 5000;

const DEFAULT_MAX_RESULT_CHARS = 8 * 1024 * 1024;

/**
 * How deep a tool result sent to Python may nest (prelude.py's `_MAX_JSON_DEPTH` keeps a JSON text
 * to the same). Python's JSON reader recursed through 3,000 levels and overflowed at 6,000.
 */
export const MAX_TOOL_RESULT_DEPTH = 500;

export class ToolGate {
  /** Every call the script asked for, in order: allowed or not, finished or not. */
  readonly calls: ToolCallRecord[] = [];
  readonly #deps: ToolGateDeps;
  /** Calls not yet answered: waiting for a person's answer or for their upstream server. */
  readonly #inFlight = new Set<Promise<unknown>>();
  /** Aborted when the script ends: later calls are refused, open questions withdrawn. */
  readonly #ended = new AbortController();
  /** Aborted when the gate gives up on the calls still running: their servers are told to stop. */
  readonly #abandon = new AbortController();
  /** A question of this run went unanswered: the person is not there, so no more are asked. */
  #unanswered = false;
  /** The JSON size of the arguments of this script's calls still running. */
  #argumentBytes = 0;
  /** Places for this script's calls awaiting an upstream answer; the others wait their turn. */
  readonly #upstreamTurns = new Turns(MAX_UPSTREAM_CALLS_AT_ONCE);

  constructor(deps: ToolGateDeps) {
    this.#deps = deps;
  }

  /**
   * Decides, routes and records one call. Never throws: failures come back as `{ error }`.
   * A call that needs approval waits for a person's answer with the run's clock stopped.
   * Traced as a span "tool_call" (active while the upstream call runs, so an HTTP upstream gets
   * its `traceparent`) with the server, tool, decision and outcome; never arguments or results.
   */
  call(params: CallToolParams, clock?: RunClock): Promise<ToolReply> {
    const tracing = this.#deps.tracing ?? NO_TRACING;
    return tracing.span("tool_call", async (span) => {
      const record: ToolCallRecord = {
        server: params.server.slice(0, MAX_CALL_NAME_LENGTH),
        tool: params.tool.slice(0, MAX_CALL_NAME_LENGTH),
        outcome: "denied",
        duration_ms: 0,
      };
      const answered = this.#call(params, record, clock);
      this.#inFlight.add(answered);
      const reply = await answered.finally(() => this.#inFlight.delete(answered));
      const attributes = toolCallAttributes(record, reply);
      span.set(attributes);
      if (attributes["codemode.outcome"] !== "ok") span.fail();
      return reply;
    }, this.#deps.traceParent);
  }

  async #call(
    params: CallToolParams,
    record: ToolCallRecord,
    clock?: RunClock,
  ): Promise<ToolReply> {
    const { profile } = this.#deps;
    const decision = this.#ended.signal.aborted
      ? { allowed: false as const, reason: "the script has already ended" }
      : decideToolCall(
        params.server,
        params.tool,
        {
          name: profile.name,
          allowed_tools: profile.allowed_tools,
          approve: profile.approve,
          tool_calls: profile.limits.tool_calls,
        },
        this.calls.length,
        this.#pythonNames(params.server, params.tool),
      );
    this.calls.push(record);
    if (!decision.allowed) return denied(record, decision.reason);
    // What the host holds of a call while it runs is a few times its arguments: bounded across
    // the calls a script keeps in flight (an attacker's corpus: 162 MB of arguments in 108
    // calls left unanswered took the host from 160 to 948 MB).
    const bytes = argumentBytes(params.arguments);
    if (this.#argumentBytes + bytes > MAX_ARGUMENT_BYTES_IN_FLIGHT) {
      return denied(
        record,
        `the arguments of this script's calls still running would pass ${
          MAX_ARGUMENT_BYTES_IN_FLIGHT / 2 ** 20
        } MiB; wait for some of them first`,
      );
    }
    this.#argumentBytes += bytes;
    try {
      return await this.#approveAndRoute(params, record, decision.needsApproval, clock);
    } finally {
      this.#argumentBytes -= bytes;
    }
  }

  /**
   * How scripts may name `server.tool`: its names made identifiers (`my_db.run_query` for
   * `my-db.run-query`), which no catalog change or race moves, and the names the current catalog
   * gives it, which a clash may have suffixed (`run_query_2`). A sandbox's modules were made
   * from an earlier catalog, so neither alone is the name its script used.
   */
  #pythonNames(server: string, tool: string): { module: string; function: string }[] {
    const listed = this.#deps.catalog().pythonName(server, tool);
    const made = { module: toIdentifier(server), function: toIdentifier(tool) };
    return listed ? [made, listed] : [made];
  }

  async #approveAndRoute(
    params: CallToolParams,
    record: ToolCallRecord,
    needsApproval: boolean,
    clock?: RunClock,
  ): Promise<ToolReply> {
    if (needsApproval) {
      const declared = this.#deps.catalog().parameterNames(record.server, record.tool);
      const question = {
        server: record.server,
        tool: record.tool,
        arguments: this.#deps.redact.json(params.arguments),
        undeclared: declared === null
          ? []
          : Object.keys(params.arguments).filter((key) => !declared.includes(key)),
      };
      // Scrubbing writes a secret in a key as a marker: two keys can read alike, and the
      // question would not show which is which.
      const unshowable = keysScrubbedAlike(params.arguments, this.#deps.redact.text)
        ? "two of its argument names read alike once their secrets are scrubbed, so a person " +
          "could not tell them apart"
        : unshowableReason(question);
      if (unshowable) {
        record.approval = "unavailable";
        return denied(record, `the call needs a person's approval, and ${unshowable}`);
      }
      if (this.#unanswered) {
        record.approval = "timed_out";
        return denied(
          record,
          "an earlier approval request of this script went unanswered; later calls are not asked",
        );
      }
      const ask = this.#deps.approve ?? nobodyToAsk;
      const resume = clock?.pause();
      record.approval = await ask(question, this.#ended.signal)
        .catch(() => "unavailable" as const)
        .finally(resume);
      if (record.approval === "timed_out") this.#unanswered = true;
      if (this.#ended.signal.aborted) {
        // Whatever the answer, nobody is left to make the call for.
        return denied(
          record,
          record.approval === "approved"
            ? "the script has already ended"
            : "the script ended before the call was decided",
        );
      }
      if (record.approval !== "approved") {
        const seconds = (this.#deps.approvalTimeoutMs ?? 0) / 1000;
        return denied(record, denialReason(record.approval, seconds));
      }
    }
    // The server's session (one still connecting is waited for), then a turn: each answer may
    // be up to 10 MiB, held a few times over while it is read, bounded across the calls a script
    // gathers (an attacker's control case: 40 answers of 9.9 MiB at once took the host to 1.3
    // GB). A call given up on before either is recorded as never sent.
    const session = await Promise.race([
      this.#deps.session(params.server),
      abortOf(this.#abandon.signal).then((): typeof GIVEN_UP => GIVEN_UP),
    ]);
    if (session === GIVEN_UP) {
      return denied(
        record,
        "the script ended before the call's server was ready; it was never sent",
      );
    }
    if (!await this.#upstreamTurns.take(this.#abandon.signal)) {
      return denied(record, "the script ended before the call's turn came; it was never sent");
    }
    record.outcome = "unfinished"; // until the upstream answers
    const started = performance.now();
    let reply: ToolReply;
    try {
      reply = this.#deps.redact.json(await this.#route(params, session));
    } finally {
      this.#upstreamTurns.release();
    }
    record.duration_ms = Math.round((performance.now() - started) * 10) / 10;
    // Given up on by close(): nobody reads this answer, and the record stays "unfinished" (its
    // duration: how long it ran before that).
    if (this.#abandon.signal.aborted && "error" in reply) return reply;
    record.outcome = "error" in reply ? "error" : "ok";
    if ("error" in reply) record.error = reply.error.message.slice(0, 500);
    else this.#deps.observe?.record(record.server, record.tool, reply.result);
    return reply;
  }

  /**
   * Called when the script has ended: refuses calls from now on and withdraws the questions
   * still open (their calls are denied), then waits a little for the calls still running (a
   * script may start calls it never waits for), so that the result and the audit log say what
   * happened. Any still running after the grace, or once `cancelled` aborts (the client gave up
   * on the execution), are recorded "unfinished" and cancelled: the SDK tells their servers to
   * stop (`notifications/cancelled`, or the request's stream closed on 2026-07-28), since nobody
   * will read their answers. A server may finish the work anyway.
   */
  async close(graceMs = PENDING_CALLS_GRACE_MS, cancelled?: AbortSignal): Promise<void> {
    this.#ended.abort();
    if (this.#inFlight.size > 0) {
      await waitAtMost(
        Promise.race([Promise.allSettled([...this.#inFlight]), abortOf(cancelled)]),
        graceMs,
      );
      if (this.#inFlight.size > 0) {
        this.#abandon.abort(new Error("the script has ended"));
        // The calls fail at once; their records are final before the result is made.
        await waitAtMost(Promise.allSettled([...this.#inFlight]), 1000);
      }
    }
    if (this.calls.length > 0) await this.#deps.observe?.settle();
  }

  /** To the upstream session that has the tool, or an error saying why there is none. */
  #route(
    { server, tool, arguments: args }: CallToolParams,
    session: UpstreamSession | undefined,
  ): Promise<ToolReply> {
    if (session === undefined) return invalid(`no server named "${server}"`);
    // A server that is down keeps its last known tools in the catalog; its outage is the news.
    if ("unavailable" in session) return unavailable(session.unavailable);
    if (!this.#deps.catalog().hasTool(server, tool)) {
      // A connected server whose tools the catalog withholds (too large): its reason.
      const withheld = this.#deps.catalog().server(server)?.error;
      return withheld
        ? unavailable(`server "${server}": ${withheld}`)
        : invalid(`server "${server}" has no tool "${tool}"`);
    }
    return this.#callUpstream(session.client, server, tool, args);
  }

  async #callUpstream(
    client: Client,
    server: string,
    tool: string,
    args: Record<string, unknown>,
  ): Promise<ToolReply> {
    const { callTimeoutMs, redact } = this.#deps;
    let result: CallToolResult;
    try {
      result = await client.callTool({ name: tool, arguments: args }, {
        timeout: callTimeoutMs,
        signal: this.#abandon.signal,
      });
    } catch (error) {
      // By code, not class: the client and server packages each bundle their own SdkError.
      const code = (error as { code?: unknown } | null)?.code;
      if (code === SdkErrorCode.RequestTimeout) {
        const seconds = callTimeoutMs / 1000;
        return {
          error: {
            kind: "timeout",
            message: `no answer within the ${seconds} s per-call timeout (settings.tool_timeout_s)`,
          },
        };
      }
      const gone = code === SdkErrorCode.ConnectionClosed || code === SdkErrorCode.NotConnected ||
        (error instanceof Error && error.message === "Not connected");
      if (gone) {
        return unavailable(`server "${server}" went away during the call`);
      }
      // Scrubbed before it is cut: a cut could split a secret so that no later scrub finds it.
      // An HTTP upstream's error body is part of the message, and may be 10 MiB: only its start
      // is scrubbed, far enough past the cut for any secret.
      const text = errorText(error).slice(0, 16 * MAX_ERROR_CHARS);
      return {
        error: { kind: "tool_error", message: redact.text(text).slice(0, MAX_ERROR_CHARS) },
      };
    }
    if (result.isError) {
      const message = contentText(result, redact.text);
      return { error: { kind: "tool_error", message: message || "the tool reported an error" } };
    }
    // Python's JSON reader recurses once per level, and past a few thousand the interpreter's
    // stack overflows, which ends the sandbox (and a session's state) past any `except`.
    if (depthOver(result, MAX_TOOL_RESULT_DEPTH)) {
      return {
        error: {
          kind: "tool_error",
          message: `result nested deeper than ${MAX_TOOL_RESULT_DEPTH} levels`,
        },
      };
    }
    const max = this.#deps.maxResultChars ?? DEFAULT_MAX_RESULT_CHARS;
    const size = JSON.stringify(result).length;
    if (size > max) {
      return {
        error: {
          kind: "tool_error",
          message: `the tool's result is ${mib(size)} as JSON, and a script is given at most ` +
            `${mib(max)} of one result`,
        },
      };
    }
    return { result: result as unknown as Record<string, unknown> };
  }
}

/**
 * A call's span attributes: who was called, what the host decided ("allow", "deny", or
 * "approve" when a person was to be asked; `codemode.approval` says how it went) and how it
 * ended ("ok", "error", "timeout", "denied", "unfinished").
 */
export function toolCallAttributes(
  record: ToolCallRecord,
  reply: ToolReply,
): Record<string, string> {
  const decision = record.approval !== undefined
    ? "approve"
    : record.outcome === "denied"
    ? "deny"
    : "allow";
  const kind = "error" in reply ? reply.error.kind : undefined;
  return {
    "mcp.server": record.server,
    "mcp.tool": record.tool,
    "codemode.decision": decision,
    "codemode.outcome": kind === "timeout" ? "timeout" : record.outcome,
    ...(record.approval ? { "codemode.approval": record.approval } : {}),
    ...(kind ? { "codemode.error_kind": kind } : {}),
  };
}

/** Settles when `signal` aborts (at once if it has); never, without one. */
function abortOf(signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return new Promise(() => {});
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) =>
    signal.addEventListener("abort", () => resolve(), { once: true })
  );
}

/** What waiting for a call's server gives when the call is given up on first. */
const GIVEN_UP: unique symbol = Symbol("given up");

/** See `#argumentBytes`. */
export const MAX_ARGUMENT_BYTES_IN_FLIGHT = 32 * 2 ** 20;

/** See `#upstreamTurns`. */
export const MAX_UPSTREAM_CALLS_AT_ONCE = 10;

/** The size of a call's arguments as JSON (what the sandbox sent, about). */
function argumentBytes(args: unknown): number {
  try {
    return JSON.stringify(args ?? null).length;
  } catch {
    return 0; // not JSON: the call is refused on its way upstream
  }
}

function denied(record: ToolCallRecord, reason: string): ToolReply {
  record.outcome = "denied";
  record.error = reason.slice(0, 500);
  return { error: { kind: "denied", message: `denied: ${reason}` } };
}

function invalid(message: string): Promise<ToolReply> {
  return Promise.resolve({ error: { kind: "invalid", message } });
}

function unavailable(message: string): Promise<ToolReply> {
  return Promise.resolve({ error: { kind: "unavailable", message } });
}

/** The text of an error result, scrubbed before it is cut to length. */
function contentText(result: CallToolResult, redact: (text: string) => string): string {
  const content = (result.content ?? []) as { type: string; text?: string }[];
  const text = content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("\n");
  return redact(text).slice(0, MAX_ERROR_CHARS);
}

/** The longest error message of an upstream passed on to a script. */
const MAX_ERROR_CHARS = 4000;
