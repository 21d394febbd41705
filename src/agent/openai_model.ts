/**
 * An OpenAI-compatible chat-completions API (OpenAI, Azure OpenAI, or any compatible server)
 * through the `openai` package, loaded on the first request (it is large, and most servers
 * never call a model: this keeps their start fast).
 */
import type OpenAI from "openai";
import type {
  ChatMessage,
  ChatModel,
  ChatReply,
  CompleteOptions,
  TokenUsage,
} from "./chat_model.ts";
import type { OpenAIModelConfig } from "./model_config.ts";

/** Whether an API error says the model wants max_completion_tokens instead of max_tokens. */
export function rejectsMaxTokens(error: unknown): boolean {
  const e = error as { status?: unknown; param?: string | null; message?: string } | null;
  if (!(error instanceof Error) || e?.status !== 400) return false;
  return e.param === "max_tokens" || /max_completion_tokens/.test(error.message);
}

/**
 * The token counts of a reply, as counts (pure). The API's word is not trusted: a count that is
 * no whole number of tokens counts 0 (a string counted would be passed to the client as it is, a
 * secret or megabytes in it, and joined to the next attempt's); no count at all is null.
 */
export function tokenUsage(raw: unknown): TokenUsage | null {
  if (typeof raw !== "object" || raw === null) return null;
  const counts = raw as Record<string, unknown>;
  const count = (value: unknown) =>
    typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : 0;
  return {
    prompt_tokens: count(counts.prompt_tokens),
    completion_tokens: count(counts.completion_tokens),
    total_tokens: count(counts.total_tokens),
  };
}

export class OpenAIChatModel implements ChatModel {
  readonly name: string;
  readonly #config: OpenAIModelConfig;
  #client: Promise<OpenAI> | null = null;
  readonly #model: string;
  #param: "max_tokens" | "max_completion_tokens";
  readonly #auto: boolean;

  constructor(config: OpenAIModelConfig) {
    this.#config = config;
    this.#model = config.model;
    this.name = `${config.kind}:${config.model}`;
    this.#auto = config.tokenLimitParam === "auto";
    this.#param = config.tokenLimitParam === "max_completion_tokens"
      ? "max_completion_tokens"
      : "max_tokens";
  }

  async complete(messages: ChatMessage[], options: CompleteOptions): Promise<ChatReply> {
    const notes: string[] = [];
    let completion;
    try {
      completion = await this.#create(messages, options);
    } catch (error) {
      if (!(this.#auto && this.#param === "max_tokens" && rejectsMaxTokens(error))) throw error;
      // Said out loud in the result and kept for later calls: never a silent fallback.
      this.#param = "max_completion_tokens";
      notes.push(
        "the model rejected max_tokens; the request was repeated with max_completion_tokens " +
          "(set CODEMODE_MAX_TOKENS_PARAM=max_completion_tokens to skip the first try)",
      );
      completion = await this.#create(messages, options);
    }
    const content: unknown = completion.choices?.[0]?.message?.content;
    return {
      text: typeof content === "string" ? content : "",
      usage: tokenUsage(completion.usage),
      notes,
    };
  }

  async #create(messages: ChatMessage[], { maxTokens, signal }: CompleteOptions) {
    this.#client ??= createClient(this.#config);
    return (await this.#client).chat.completions.create({
      model: this.#model,
      messages,
      [this.#param]: maxTokens,
    }, { signal });
  }
}

async function createClient(config: OpenAIModelConfig): Promise<OpenAI> {
  const { default: OpenAI, AzureOpenAI } = await import("openai");
  const fetch = cappedFetch(MAX_MODEL_REPLY_BYTES);
  return config.kind === "azure"
    ? new AzureOpenAI({
      apiKey: config.apiKey,
      endpoint: config.endpoint,
      deployment: config.model,
      apiVersion: config.apiVersion,
      timeout: config.timeoutMs,
      maxRetries: 1,
      fetch,
    })
    : new OpenAI({
      apiKey: config.apiKey,
      baseURL: config.baseURL,
      timeout: config.timeoutMs,
      maxRetries: 1,
      fetch,
    });
}

/**
 * A model API's reply is read up to this many bytes (an answer of the 4,096 tokens asked for is
 * some 20 KB); the client otherwise read any reply whole, into the host's memory.
 */
export const MAX_MODEL_REPLY_BYTES = 8 * 1024 * 1024;

/** `fetch`, with each response's body ending in an error past `limit` bytes. */
function cappedFetch(limit: number): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if (response.body === null) return response;
    let seen = 0;
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.length;
          if (seen > limit) {
            controller.error(new RangeError(`the model API's reply is over ${limit} bytes`));
          } else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}
