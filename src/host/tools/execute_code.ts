/**
 * The `execute_code` tool: run a Python script in a fresh sandbox.
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import type { ExecuteRequest, Executor } from "../executor.ts";
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
  }, async (args: ExecuteRequest, extra: { signal: AbortSignal }) => {
    const result = await options.execute(args, { signal: extra.signal });
    return toToolResult(result);
  });
}

export function toToolResult(result: ExecutionResult) {
  return {
    content: [{ type: "text" as const, text: formatResultText(result) }],
    structuredContent: result as unknown as Record<string, unknown>,
    isError: !result.success,
  };
}
