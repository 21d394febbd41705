/**
 * The small interface the agent needs from a language model, whatever serves it.
 */

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface ChatReply {
  text: string;
  /** Token counts when the backend reports them. */
  usage: TokenUsage | null;
  /** Anything the backend had to do differently from what was asked, said out loud. */
  notes: string[];
}

export interface CompleteOptions {
  maxTokens: number;
  /** The caller's cancellation: the request to the model is aborted with it. */
  signal?: AbortSignal;
}

export interface ChatModel {
  /** Backend and model, for results and logs (e.g. "openai:gpt-4.1", "sampling"). */
  readonly name: string;
  /** Rejects once `signal` aborts, the request to the model given up. */
  complete(messages: ChatMessage[], options: CompleteOptions): Promise<ChatReply>;
}

/**
 * Neither an API key nor client sampling is available. Without a client (the `agent` command),
 * only the API key is named: sampling needs one.
 */
export class NoModelError extends Error {
  constructor(withClient = true) {
    super(
      "Cannot generate code: no model is available. Set OPENAI_API_KEY (with OPENAI_BASE_URL " +
        "and CODEMODE_MODEL for an OpenAI-compatible API, or the AZURE_OPENAI_* variables for Azure " +
        "OpenAI)" +
        (withClient
          ? ", or connect with an MCP client that supports sampling (sampling/createMessage)."
          : "."),
    );
    this.name = "NoModelError";
  }
}
