/**
 * Picks the agent's model: a configured OpenAI-compatible API first, else the connected client's
 * model through MCP sampling (unless the client declared it has none), else a clear error
 * naming both options.
 */
import { type ChatModel, NoModelError } from "./chat_model.ts";
import { OpenAIChatModel } from "./openai_model.ts";
import type { OpenAIModelConfig } from "./model_config.ts";
import { SamplingChatModel, type SamplingClient } from "./sampling_model.ts";

export function selectModel(
  openAI: OpenAIModelConfig | null,
  client: SamplingClient | null,
): ChatModel {
  if (openAI) return new OpenAIChatModel(openAI);
  if (client && client.declared !== false) return new SamplingChatModel(client);
  throw new NoModelError(client !== null);
}
