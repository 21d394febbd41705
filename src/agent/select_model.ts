/**
 * Picks the agent's model: a configured OpenAI-compatible API first, else the connected client's
 * model through MCP sampling, else a clear error naming both options.
 */
import type { Server } from "@modelcontextprotocol/server";
import { type ChatModel, NoModelError } from "./chat_model.ts";
import { OpenAIChatModel } from "./openai_model.ts";
import type { OpenAIModelConfig } from "./model_config.ts";
import { SamplingChatModel } from "./sampling_model.ts";

export function selectModel(openAI: OpenAIModelConfig | null, client: Server | null): ChatModel {
  if (openAI) return new OpenAIChatModel(openAI);
  if (client && SamplingChatModel.available(client)) return new SamplingChatModel(client);
  throw new NoModelError();
}
