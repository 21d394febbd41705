/**
 * The connected MCP client's own model, through `sampling/createMessage`: the agent then works
 * without any API key of its own. Only 2025-11-25 clients have sampling.
 */
import {
  type CreateMessageRequestParams,
  ProtocolErrorCode,
  type Server,
  type ServerContext,
} from "@modelcontextprotocol/server";
import {
  type ChatMessage,
  type ChatModel,
  type ChatReply,
  type CompleteOptions,
  NoModelError,
} from "./chat_model.ts";

/** What the agent needs of the client to use its model. */
export interface SamplingClient {
  /**
   * Whether the client declared sampling; undefined when that is unknown (a stateless request:
   * its client declared its capabilities to another instance).
   */
  declared: boolean | undefined;
  /** Asks the client; `signal` (with the tool call's own) withdraws the question. */
  createMessage(params: CreateMessageRequestParams, signal?: AbortSignal): Promise<unknown>;
}

/** The client of one tool call, asked on that call's own response stream. */
export function samplingClient(server: Server, ctx: ServerContext): SamplingClient {
  const capabilities = server.getClientCapabilities();
  return {
    declared: capabilities === undefined ? undefined : capabilities.sampling !== undefined,
    createMessage: (params, signal) =>
      ctx.mcpReq.send({ method: "sampling/createMessage", params }, {
        signal: signal ? AbortSignal.any([ctx.mcpReq.signal, signal]) : ctx.mcpReq.signal,
      }),
  };
}

export class SamplingChatModel implements ChatModel {
  readonly name = "sampling";
  readonly #client: SamplingClient;

  constructor(client: SamplingClient) {
    this.#client = client;
  }

  async complete(messages: ChatMessage[], options: CompleteOptions): Promise<ChatReply> {
    const system = messages.filter((m) => m.role === "system").map((m) => m.content).join("\n\n");
    let result;
    try {
      result = await this.#client.createMessage({
        systemPrompt: system || undefined,
        messages: messages.filter((m) => m.role !== "system").map((m) => ({
          role: m.role as "user" | "assistant",
          content: { type: "text" as const, text: m.content },
        })),
        maxTokens: options.maxTokens,
        includeContext: "none",
      }, options.signal);
    } catch (error) {
      // A client whose capabilities were unknown, asked anyway: it has no model to lend.
      if ((error as { code?: unknown }).code === ProtocolErrorCode.MethodNotFound) {
        throw new NoModelError();
      }
      throw error;
    }
    const content = (result as { content?: unknown }).content as
      | { type: string; text?: string }
      | { type: string; text?: string }[];
    const parts = Array.isArray(content) ? content : [content];
    const text = parts.filter((c) => c.type === "text").map((c) => c.text ?? "").join("\n");
    return { text, usage: null, notes: [] };
  }
}
