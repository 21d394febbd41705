/**
 * The `execute_code` tool: run a Python script in a fresh sandbox.
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import type { ExecuteRequest, Executor } from "../executor.ts";
import type { ProgressParams } from "../../rpc/sandbox_protocol.ts";
import { type ExecutionResult, formatResultText } from "../execution_result.ts";

export interface ExecuteCodeToolOptions {
  execute: Executor;
  /** The tool description (sandbox rules plus the tool index); see `describeExecuteCode`. */
  description: () => string;
  profiles: string[];
  defaultProfile: string;
}

const toolCallRecord = z.object({
  server: z.string(),
  tool: z.string(),
  outcome: z.enum(["ok", "error", "denied"]),
  duration_ms: z.number(),
  error: z.string().optional(),
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
  diagnostics: z.object({
    error_type: z.string(),
    message: z.string(),
    traceback: z.string().optional(),
    lineno: z.number().nullable().optional(),
  }).nullable(),
};

export function registerExecuteCodeTool(server: McpServer, options: ExecuteCodeToolOptions) {
  return server.registerTool("execute_code", {
    title: "Run Python in a sandbox",
    description: options.description(),
    inputSchema: {
      code: z.string().describe(
        "Python 3 source. Top-level await is allowed. The value of the last expression is returned as `result`.",
      ),
      timeout_s: z.number().positive().optional().describe(
        "Wall-clock limit in seconds (default from the profile, usually 30).",
      ),
      profile: z.enum(options.profiles as [string, ...string[]]).optional().describe(
        `Permission profile (default "${options.defaultProfile}").`,
      ),
    },
    outputSchema: executionResultShape,
    annotations: { openWorldHint: true },
    // The SDK's inference of these types fails under this TypeScript; they are spelled out.
  }, async (args: ExecuteRequest, extra: RequestExtra) => {
    const live = liveFeedback(extra);
    const result = await options.execute(args, { signal: extra.signal, ...live });
    return toToolResult(result);
  });
}

/** What the SDK hands a tool handler that we use. */
export interface RequestExtra {
  signal: AbortSignal;
  _meta?: { progressToken?: string | number };
  sendNotification: (
    notification: { method: string; params: Record<string, unknown> },
  ) => Promise<void>;
}

/**
 * While a script runs: its output as MCP log messages, and its progress reports as MCP progress
 * notifications when the client sent a progressToken. Both go with the request, so they reach
 * the client on stdio and on HTTP alike.
 */
export function liveFeedback(extra: RequestExtra) {
  const send = (method: string, params: Record<string, unknown>) =>
    void extra.sendNotification({ method, params }).catch(() => {});
  const token = extra._meta?.progressToken;
  return {
    onOutput: (stream: "stdout" | "stderr", text: string) =>
      send("notifications/message", {
        level: stream === "stderr" ? "warning" : "info",
        logger: `execute_code.${stream}`,
        data: text,
      }),
    onProgress: token === undefined
      ? undefined
      : (report: ProgressParams) =>
        send("notifications/progress", { progressToken: token, ...report }),
  };
}

export function toToolResult(result: ExecutionResult) {
  return {
    content: [{ type: "text" as const, text: formatResultText(result) }],
    structuredContent: result as unknown as Record<string, unknown>,
    isError: !result.success,
  };
}
