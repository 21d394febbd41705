/**
 * The `execute_code` tool: run a Python script in a fresh sandbox. The MCP handler: the client's
 * arguments (checked against the input schema by the SDK) go to the executor, live output and
 * progress go back as notifications, and the result becomes an MCP tool result.
 */
import { didYouMean } from "../../config/did_you_mean.ts";
import {
  type LoggingLevel,
  type McpServer,
  type ProtocolEra,
  type ServerContext,
} from "@modelcontextprotocol/server";
import type { ApprovalAnswer } from "../../execution/approval.ts";
import { elicitingApprover, InteractiveRun, type ParkedRuns, playRound } from "../approvals.ts";
import { z } from "zod";
import { wellFormed } from "../well_formed_answers.ts";
import { decodeBase64 } from "../../_util/bytes.ts";
import { toolArguments } from "./tool_arguments.ts";
import {
  EXECUTE_REQUEST_SHAPE,
  type ExecuteRequest,
  type Executor,
} from "../../execution/executor.ts";
import type { ProgressParams } from "../../rpc/sandbox_protocol.ts";
import { type ExecutionResult, formatResultText } from "../../execution/execution_result.ts";
import { isText } from "../../execution/mime_types.ts";
import { isBelow } from "../log_levels.ts";

export interface ExecuteCodeToolOptions {
  executor: Executor;
  /** The client's protocol era: how a person is asked about a tool call. */
  era: ProtocolEra;
  /** Who is calling (whose parked runs a 2026-07-28 round may take up). */
  owner: string;
  /** Runs parked on a question to a 2026-07-28 client. */
  parked: ParkedRuns;
  /** The log level where no session carries it (see `requestFeedback`). */
  logLevel?: LoggingLevel;
  /** The tool description (sandbox rules plus the tool index); see `describeExecuteCode`. */
  description: () => string;
  profiles: string[];
  /** What each profile grants, a line each. */
  profileSummary?: string;
  defaultProfile: string;
}

const toolCallRecord = z.object({
  server: z.string(),
  tool: z.string(),
  outcome: z.enum(["ok", "error", "denied", "unfinished"]),
  duration_ms: z.number(),
  error: z.string().optional(),
  approval: z.enum(
    ["approved", "declined", "cancelled", "timed_out", "unavailable"] satisfies [
      ApprovalAnswer,
      ...ApprovalAnswer[],
    ],
  ).optional(),
});

export const executionResultShape = {
  success: z.boolean(),
  stdout: z.string(),
  stderr: z.string(),
  result: z.unknown(),
  duration_ms: z.number(),
  profile: z.string(),
  tool_calls: z.object({ count: z.number(), calls: z.array(toolCallRecord) }),
  protocol_violations: z.number(),
  outputs: z.array(z.object({
    name: z.string(),
    size: z.number(),
    mime_type: z.string(),
    omitted: z.boolean().optional(),
    saved_to: z.string().optional(),
    saved_on_host: z.string().optional(),
  })),
  diagnostics: z.object({
    error_type: z.string(),
    /** "host": a limit or refusal the host enforced; "script": an exception the script raised. */
    reported_by: z.enum(["host", "script"]),
    message: z.string(),
    traceback: z.string().optional(),
    lineno: z.number().nullable().optional(),
  }).nullable(),
  session_id: z.string().optional(),
  truncated: z.array(z.enum(["result", "stdout", "stderr"])).optional(),
};

export function registerExecuteCodeTool(server: McpServer, options: ExecuteCodeToolOptions) {
  const inputSchema = {
    ...EXECUTE_REQUEST_SHAPE,
    // Only the profiles callers may use, by name, so clients can offer them.
    profile: z.enum(options.profiles as [string, ...string[]], {
      // A profile that exists but is not offered reads like a typo without this.
      error: (issue) =>
        `expected one of ${options.profiles.map((p) => JSON.stringify(p)).join(", ")}: the ` +
        "profiles this server lets callers use (settings.allowed_profiles)" +
        (typeof issue.input === "string" ? didYouMean(issue.input, options.profiles) : ""),
    }).optional().describe(
      `Permission profile (default "${options.defaultProfile}").` +
        (options.profileSummary ? `\n${options.profileSummary}` : ""),
    ),
  } satisfies Record<keyof ExecuteRequest, z.ZodType>;
  return server.registerTool("execute_code", {
    title: "Run Python in a sandbox",
    description: options.description(),
    inputSchema: toolArguments(inputSchema),
    outputSchema: z.object(executionResultShape),
    annotations: { openWorldHint: true },
  }, async (args, ctx) => {
    const request: ExecuteRequest = args;
    const { flush, ...live } = liveFeedback(requestFeedback(ctx, options.logLevel));
    if (options.era === "legacy") {
      const result = await options.executor.execute(request, {
        signal: ctx.mcpReq.signal,
        approve: elicitingApprover(server, ctx, options.parked.timeoutMs),
        ...live,
      });
      await flush(); // notifications about a request must reach the client before its result
      return toToolResult(result);
    }
    // 2026-07-28: each round of the call starts the run or answers its question.
    const round = await playRound(ctx, {
      parked: options.parked,
      owner: options.owner,
      start: () => new InteractiveRun((lent) => options.executor.execute(request, lent)),
      feedback: live,
    });
    await flush();
    if ("gone" in round) {
      return { content: [{ type: "text" as const, text: round.gone }], isError: true };
    }
    return "question" in round ? round.question : toToolResult(round.result);
  });
}

const RESULT_GAP_MS = 20;

/** Where a request's live feedback goes: what the SDK hands a tool handler, narrowed. */
export interface FeedbackChannel {
  progressToken?: string | number;
  /** A log message about this request; the SDK applies the client's level filter. */
  log(level: LoggingLevel, data: string, logger: string): Promise<void>;
  /** A notification about this request (progress). */
  notify(notification: { method: string; params: Record<string, unknown> }): Promise<void>;
}

/**
 * The request's channel. The level filter is the client's `logging/setLevel` for a 2025-11-25
 * client, and the request's own `logLevel` for a 2026-07-28 client (none given: no log
 * messages, as that revision says). `floor` is a level set where no session carries it (a
 * stateless 2025-11-25 request: the caller's last `logging/setLevel`).
 */
export function requestFeedback(ctx: ServerContext, floor?: LoggingLevel): FeedbackChannel {
  return {
    progressToken: ctx.mcpReq._meta?.progressToken,
    log: (level, data, logger) =>
      floor !== undefined && isBelow(level, floor)
        ? Promise.resolve()
        : ctx.mcpReq.log(level, data, logger),
    notify: (notification) => ctx.mcpReq.notify(notification),
  };
}

/**
 * While a script runs: its output as MCP log messages, and its progress reports as MCP progress
 * notifications when the client sent a progressToken. Both go with the request, so they reach
 * the client on stdio and on HTTP alike.
 */
/** The longest progress token a client's progress is reported under. */
export const MAX_PROGRESS_TOKEN_CHARS = 256;

export function liveFeedback(channel: FeedbackChannel) {
  const pending = new Set<Promise<void>>();
  let lastProgress = 0;
  const track = (sent: Promise<void>) => {
    const settled = sent.catch(() => {});
    pending.add(settled);
    void settled.finally(() => pending.delete(settled));
  };
  // Each report carries the token again: a long one (a client's 2 MiB token times a script's
  // reports, buffered for a client that does not read) gets no progress.
  const token = typeof channel.progressToken === "string" &&
      channel.progressToken.length > MAX_PROGRESS_TOKEN_CHARS
    ? undefined
    : channel.progressToken;
  return {
    onOutput: (stream: "stdout" | "stderr", text: string) => {
      const level = stream === "stderr" ? "warning" : "info";
      track(channel.log(level, text.toWellFormed(), `execute_code.${stream}`));
    },
    onProgress: token === undefined ? undefined : (report: ProgressParams) => {
      lastProgress = performance.now();
      track(
        channel.notify({
          method: "notifications/progress",
          params: wellFormed({ progressToken: token, ...report }),
        }),
      );
    },
    /**
     * Waits until every notification is sent, and after progress leaves a short gap before the
     * result: the SDK's client handles notifications a tick after a response read in the same
     * chunk, and drops progress for a request that has already been answered.
     */
    flush: async () => {
      await Promise.all([...pending]);
      const gap = RESULT_GAP_MS - (performance.now() - lastProgress);
      if (lastProgress > 0 && gap > 0) await new Promise((resolve) => setTimeout(resolve, gap));
    },
  };
}

/**
 * The MCP result: a text block, then each returned file (images as image content, others as
 * embedded resources); structured content lists the files without their data.
 */
export function toToolResult(result: ExecutionResult) {
  const files = result.outputs.filter((f) => f.data !== undefined).map((f) => {
    if (/^image\/(png|jpeg|gif|webp)$/.test(f.mime_type)) {
      return { type: "image" as const, data: f.data!, mimeType: f.mime_type };
    }
    const uri = `codemode://outputs/${f.name}`;
    const resource = isText(f.mime_type)
      ? { uri, mimeType: f.mime_type, text: new TextDecoder().decode(decodeBase64(f.data!)) }
      : { uri, mimeType: f.mime_type, blob: f.data! };
    return { type: "resource" as const, resource };
  });
  const listed = result.outputs.map(({ data: _, ...meta }) => meta);
  return {
    content: [{ type: "text" as const, text: formatResultText(result) }, ...files],
    structuredContent: { ...result, outputs: listed } as unknown as Record<string, unknown>,
    isError: !result.success,
  };
}
