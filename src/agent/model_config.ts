/**
 * The agent's API model settings, read from the environment. Kept apart from the `openai`
 * client so that reading them (e.g. to grant the host network access) loads nothing else.
 */
import type { Env } from "../config/environment.ts";
import { secretProblem } from "../policy/redaction.ts";

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
 * The API key is a secret scrubbed from all output, so one too short to scrub is refused.
 */
export function openAIConfigFromEnv(
  env: Env,
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
    refuseUnsafeKey("AZURE_OPENAI_API_KEY", azureKey);
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
  refuseUnsafeKey("OPENAI_API_KEY", apiKey);
  return {
    kind: "openai",
    apiKey,
    baseURL: env("OPENAI_BASE_URL"),
    model: env("CODEMODE_MODEL") ?? "gpt-4.1-mini",
    tokenLimitParam,
    timeoutMs,
  };
}

function refuseUnsafeKey(name: string, key: string): void {
  const problem = secretProblem(key);
  if (problem) throw new TypeError(`Cannot use ${name}: ${problem}`);
}
