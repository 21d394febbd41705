/**
 * The `generate_and_execute` tool: a task in plain words -> working Python, run in the sandbox.
 */
import type { McpServer, ServerContext } from "@modelcontextprotocol/server";
import { z } from "zod";
import { toolArguments } from "./tool_arguments.ts";
import { type AgentDeps, type AgentResult, runAgent } from "../../agent/agent.ts";
import type { ChatModel } from "../../agent/chat_model.ts";

export interface GenerateToolOptions {
  /** Picks the model for one call (throws NoModelError when there is none). */
  model: (ctx: ServerContext) => ChatModel;
  agent: (model: ChatModel) => AgentDeps;
  profiles: string[];
}

export function registerGenerateAndExecuteTool(server: McpServer, options: GenerateToolOptions) {
  const inputSchema = {
    task: z.string().min(1).max(20_000).describe("What the script should do."),
    max_attempts: z.number().int().min(1).max(10).optional().describe("Default 3."),
    profile: z.enum(options.profiles as [string, ...string[]]).optional(),
  };
  return server.registerTool("generate_and_execute", {
    title: "Write and run Python for a task",
    description:
      "Describe a task in plain words; a model writes Python against the available tools, it is checked and run in the sandbox, and repaired from the error until it works (up to max_attempts). Uses OPENAI_API_KEY when the server has one, otherwise your client's model through MCP sampling.",
    inputSchema: toolArguments(inputSchema),
    annotations: { openWorldHint: true },
  }, async (args, ctx) => {
    let model: ChatModel;
    try {
      model = options.model(ctx);
    } catch (error) {
      return {
        content: [{ type: "text" as const, text: (error as Error).message }],
        isError: true,
      };
    }
    const result = await runAgent(args, options.agent(model), undefined, ctx.mcpReq.signal);
    return {
      content: [{ type: "text" as const, text: formatAgentResult(result) }],
      structuredContent: result as unknown as Record<string, unknown>,
      isError: !result.success,
    };
  });
}

export function formatAgentResult(result: AgentResult): string {
  const lines = [`${result.success ? "OK" : "FAILED"}: ${result.message} (model ${result.model})`];
  for (const a of result.attempts) {
    lines.push(`--- attempt ${a.attempt}: ${a.error ? `failed at ${a.phase}` : "succeeded"} ---`);
    if (a.code) lines.push(a.code.trimEnd());
    if (a.error) lines.push(`error: ${a.error}`);
    for (const note of a.notes) lines.push(`note: ${note}`);
  }
  const run = result.execution;
  if (run?.stdout) lines.push(`--- stdout ---\n${run.stdout.trimEnd()}`);
  if (run && run.result !== null && run.result !== undefined) {
    lines.push(
      `--- result ---\n${typeof run.result === "string" ? run.result : JSON.stringify(run.result)}`,
    );
  }
  return lines.join("\n");
}
