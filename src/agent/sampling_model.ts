/**
 * The connected MCP client's own model, through `sampling/createMessage`: the agent then works
 * without any API key of its own.
 */
import type { Server } from "@modelcontextprotocol/server";
import type { ChatMessage, ChatModel, ChatReply } from "./chat_model.ts";

export class SamplingChatModel implements ChatModel {
  readonly name = "sampling";
  readonly #server: Server;

  constructor(server: Server) {
    this.#server = server;
  }

  /** Whether the connected client declared the sampling capability. */
  static available(server: Server): boolean {
    return server.getClientCapabilities()?.sampling !== undefined;
  }

  async complete(messages: ChatMessage[], options: { maxTokens: number }): Promise<ChatReply> {
    const system = messages.filter((m) => m.role === "system").map((m) => m.content).join("\n\n");
    const result = await this.#server.createMessage({
      systemPrompt: system || undefined,
      messages: messages.filter((m) => m.role !== "system").map((m) => ({
        role: m.role as "user" | "assistant",
        content: { type: "text" as const, text: m.content },
      })),
      maxTokens: options.maxTokens,
      includeContext: "none",
    });
    const content = result.content as { type: string; text?: string } | {
      type: string;
      text?: string;
    }[];
    const parts = Array.isArray(content) ? content : [content];
    const text = parts.filter((c) => c.type === "text").map((c) => c.text ?? "").join("\n");
    return { text, usage: null, notes: [] };
  }
}
