/**
 * Tokens as models count them (gpt-tokenizer's o200k encoding), for the token costs that
 * search_tools, get_tool_docs, the tool index and `tools --index` state. The encoder takes
 * ~0.1 s to load, so it loads in the background at start; until then counts are estimated
 * from the length (about four characters a token).
 */
export class TokenCounter {
  #count: ((text: string) => number) | null = null;
  #loading: Promise<void> | null = null;

  /** Loads the encoder (once); never rejects: a failure leaves the estimate in place. */
  load(): Promise<void> {
    this.#loading ??= import("gpt-tokenizer").then(
      (module) => {
        this.#count = (text) => module.countTokens(text);
      },
      () => {},
    );
    return this.#loading;
  }

  /**
   * The tokens of `text`. A run of many characters without a space is estimated, whole text
   * with it: the encoder's cost grows with the square of such a run, and upstream servers choose
   * tool names and descriptions (an attacker's corpus: a 250,000-letter tool name held the host
   * for 20 s at each list change).
   */
  count(text: string): number {
    return this.#count && !LONG_RUN.test(text) ? this.#count(text) : estimateTokens(text);
  }
}

// From a run's start only: `\S{256}` alone tried again at each of a short run's characters.
const LONG_RUN = /(?<!\S)\S{256}/;

/** About four characters a token: the count before the encoder is loaded. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
