/**
 * An OpenAI-compatible chat-completions API (OpenAI, Azure OpenAI, or any compatible server)
 * through the `openai` package.
 */
import OpenAI, { AzureOpenAI } from "openai";
import type { ChatMessage, ChatModel, ChatReply } from "./chat_model.ts";

/** Which request field carries the output-token limit. */
export type TokenLimitParam = "max_tokens" | "max_completion_tokens" | "auto";

export interface OpenAIModelConfig {
  kind: "openai" | "azure";
  apiKey: string;
  model: string;
  /** OpenAI-compatible base URL (kind "openai"). */
  baseURL?: string;
  /** Azure endpoint and API version (kind "azure"); `model` is the deployment. */
  endpoint?: string;
  apiVersion?: string;
  tokenLimitParam: TokenLimitParam;
  timeoutMs: number;
}

/**
 * The model settings from the environment, or null when no API key is set:
 * OPENAI_API_KEY, OPENAI_BASE_URL, CODEMODE_MODEL (default gpt-4.1-mini); or
 * AZURE_OPENAI_API_KEY, AZURE_OPENAI_ENDPOINT, AZURE_OPENAI_DEPLOYMENT, OPENAI_API_VERSION.
 * CODEMODE_MAX_TOKENS_PARAM picks max_tokens, max_completion_tokens or auto (the default).
 */
export function openAIConfigFromEnv(
  env: (name: string) => string | undefined,
): OpenAIModelConfig | null {
  const param = env("CODEMODE_MAX_TOKENS_PARAM") ?? "auto";
  if (!["max_tokens", "max_completion_tokens", "auto"].includes(param)) {
    throw new TypeError(
      `Cannot read CODEMODE_MAX_TOKENS_PARAM: "${param}" is not max_tokens, max_completion_tokens or auto`,
    );
  }
  const tokenLimitParam = param as TokenLimitParam;
  const timeoutMs = Number(env("CODEMODE_MODEL_TIMEOUT_S") ?? "120") * 1000;
  const azureKey = env("AZURE_OPENAI_API_KEY");
  if (azureKey) {
    const endpoint = env("AZURE_OPENAI_ENDPOINT");
    const deployment = env("AZURE_OPENAI_DEPLOYMENT");
    if (!endpoint || !deployment) {
      throw new TypeError(
        "Cannot use Azure OpenAI: AZURE_OPENAI_ENDPOINT and AZURE_OPENAI_DEPLOYMENT must be set with AZURE_OPENAI_API_KEY",
      );
    }
    return {
      kind: "azure",
      apiKey: azureKey,
      endpoint,
      model: deployment,
      apiVersion: env("OPENAI_API_VERSION") ?? "2024-10-21",
      tokenLimitParam,
      timeoutMs,
    };
  }
  const apiKey = env("OPENAI_API_KEY");
  if (!apiKey) return null;
  return {
    kind: "openai",
    apiKey,
    baseURL: env("OPENAI_BASE_URL"),
    model: env("CODEMODE_MODEL") ?? "gpt-4.1-mini",
    tokenLimitParam,
    timeoutMs,
  };
}

/** Whether an API error says the model wants max_completion_tokens instead of max_tokens. */
export function rejectsMaxTokens(error: unknown): boolean {
  if (!(error instanceof OpenAI.APIError) || error.status !== 400) return false;
  const e = error as { param?: string | null; message: string };
  return e.param === "max_tokens" || /max_completion_tokens/.test(e.message);
}

export class OpenAIChatModel implements ChatModel {
  readonly name: string;
  readonly #client: OpenAI;
  readonly #model: string;
  #param: "max_tokens" | "max_completion_tokens";
  readonly #auto: boolean;

  constructor(config: OpenAIModelConfig) {
    this.#client = config.kind === "azure"
      ? new AzureOpenAI({
        apiKey: config.apiKey,
        endpoint: config.endpoint,
        deployment: config.model,
        apiVersion: config.apiVersion,
        timeout: config.timeoutMs,
        maxRetries: 1,
      })
      : new OpenAI({
        apiKey: config.apiKey,
        baseURL: config.baseURL,
        timeout: config.timeoutMs,
        maxRetries: 1,
      });
    this.#model = config.model;
    this.name = `${config.kind}:${config.model}`;
    this.#auto = config.tokenLimitParam === "auto";
    this.#param = config.tokenLimitParam === "max_completion_tokens"
      ? "max_completion_tokens"
      : "max_tokens";
  }

  async complete(messages: ChatMessage[], options: { maxTokens: number }): Promise<ChatReply> {
    const notes: string[] = [];
    let completion;
    try {
      completion = await this.#create(messages, options.maxTokens);
    } catch (error) {
      if (!(this.#auto && this.#param === "max_tokens" && rejectsMaxTokens(error))) throw error;
      // Said out loud in the result and kept for later calls: never a silent fallback.
      this.#param = "max_completion_tokens";
      notes.push(
        "the model rejected max_tokens; the request was repeated with max_completion_tokens " +
          "(set CODEMODE_MAX_TOKENS_PARAM=max_completion_tokens to skip the first try)",
      );
      completion = await this.#create(messages, options.maxTokens);
    }
    const text = completion.choices[0]?.message?.content ?? "";
    const usage = completion.usage
      ? {
        prompt_tokens: completion.usage.prompt_tokens,
        completion_tokens: completion.usage.completion_tokens,
        total_tokens: completion.usage.total_tokens,
      }
      : null;
    return { text, usage, notes };
  }

  #create(messages: ChatMessage[], maxTokens: number) {
    return this.#client.chat.completions.create({
      model: this.#model,
      messages,
      [this.#param]: maxTokens,
    });
  }
}
