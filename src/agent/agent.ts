/**
 * The code-generation agent: task -> code (model) -> checked (validation) -> run (sandbox),
 * repeated with the error fed back until the code works or the attempts run out.
 */
import { escapeUnsafe } from "../_util/safe_text.ts";
import type { Catalog } from "../catalog/catalog.ts";
import type { ExecutionResult } from "../execution/execution_result.ts";
import type { Executor } from "../execution/executor.ts";
import { ServerStopping, STOPPING_MESSAGE } from "../execution/stopping_executor.ts";
import type { Logger } from "../_util/log.ts";
import type { Redactor } from "../policy/redaction.ts";
import type { ChatModel, TokenUsage } from "./chat_model.ts";
import { extractCode } from "./code_extraction.ts";
import { buildMessages } from "./prompt.ts";
import { type Analysis, checkAnalysis } from "./validation.ts";

/** How much of a model API's error a result shows (its replies are read up to 8 MiB). */
const MAX_MODEL_ERROR_CHARS = 2000;

export const DEFAULT_MAX_ATTEMPTS = 3;

export interface AgentAttempt {
  attempt: number;
  /** Where the attempt stopped: the model call, the checks before running, or the run. */
  phase: "model" | "validation" | "execution";
  code: string;
  error: string | null;
  usage: TokenUsage | null;
  notes: string[];
}

export interface AgentResult {
  success: boolean;
  model: string;
  final_code: string | null;
  attempts: AgentAttempt[];
  /** The last execution's result, when any code ran. */
  execution: ExecutionResult | null;
  usage: TokenUsage;
  message: string;
}

export interface AgentDeps {
  model: ChatModel;
  executor: Executor;
  catalog: () => Catalog;
  /** The sandbox's rules for a profile (the execute_code description). */
  sandboxRules: (profile: string | undefined) => string;
  /** Runs the static analysis of code in a sandbox. */
  analyse: (code: string) => Promise<Analysis>;
  log: Logger;
  /**
   * Scrubs secrets from every message before it goes to the model: the task, tool docs and
   * fed-back errors may hold one, and the model is a third party (an API, or the client's model).
   */
  redact: Redactor;
  maxTokens?: number;
  /** Runs the whole run so that the server's stop cancels it and waits for its answer. */
  guard?: <T>(work: (signal?: AbortSignal) => Promise<T>, signal?: AbortSignal) => Promise<T>;
}

export interface AgentRequest {
  task: string;
  max_attempts?: number;
  profile?: string;
}

/** The longest script a model may answer with; and how much of a longer one is kept. */
export const MAX_MODEL_CODE_CHARS = 100_000;
const SHOWN_LONG_CODE_CHARS = 2000;

export function runAgent(
  request: AgentRequest,
  deps: AgentDeps,
  onAttempt: (attempt: AgentAttempt) => void = () => {},
  signal?: AbortSignal,
): Promise<AgentResult> {
  if (!deps.guard) return attemptUntilItWorks(request, deps, onAttempt, signal);
  return deps.guard((guarded) => attemptUntilItWorks(request, deps, onAttempt, guarded), signal);
}

async function attemptUntilItWorks(
  request: AgentRequest,
  deps: AgentDeps,
  onAttempt: (attempt: AgentAttempt) => void,
  signal?: AbortSignal,
): Promise<AgentResult> {
  const maxAttempts = Math.max(1, Math.min(10, request.max_attempts ?? DEFAULT_MAX_ATTEMPTS));
  const catalog = deps.catalog();
  const stubs = catalog.search(request.task, 8).map((hit) => hit.stub).join("\n");
  const attempts: AgentAttempt[] = [];
  const usage: TokenUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  let execution: ExecutionResult | null = null;
  const finish = (success: boolean, message: string): AgentResult => ({
    success,
    model: deps.model.name,
    final_code: attempts.at(-1)?.code || null,
    attempts,
    execution,
    usage,
    message,
  });

  for (let n = 1; n <= maxAttempts; n++) {
    if (signal?.aborted) return finish(false, cancelled(signal));
    const messages = buildMessages({
      task: request.task,
      stubs,
      index: catalog.index().text,
      sandboxRules: deps.sandboxRules(request.profile),
      previous: attempts.filter((a) => a.code).map((a) => ({ code: a.code, error: a.error ?? "" })),
    }).map((message) => ({ ...message, content: deps.redact.text(message.content) }));
    let reply;
    try {
      reply = await deps.model.complete(messages, { maxTokens: deps.maxTokens ?? 4096, signal });
    } catch (error) {
      if (signal?.aborted) return finish(false, cancelled(signal));
      // The API's own words, shown to a person: no controls that would act on their terminal,
      // and not megabytes of them (scrubbed before the cut, which could split a secret).
      const said = deps.redact.text(
        `Cannot get code from ${deps.model.name}: ${(error as Error).message}`,
      );
      const message = escapeUnsafe(
        said.length > MAX_MODEL_ERROR_CHARS
          ? `${said.slice(0, MAX_MODEL_ERROR_CHARS)}… (${
            said.length - MAX_MODEL_ERROR_CHARS
          } characters more)`
          : said,
      );
      const failed: AgentAttempt = {
        attempt: n,
        phase: "model",
        code: "",
        error: message,
        usage: null,
        notes: [],
      };
      attempts.push(failed);
      onAttempt(failed);
      return finish(false, message);
    }
    if (reply.usage) {
      usage.prompt_tokens += reply.usage.prompt_tokens;
      usage.completion_tokens += reply.usage.completion_tokens;
      usage.total_tokens += reply.usage.total_tokens;
    }
    // The model's word is scrubbed like everything else: it may echo a secret it was never
    // sent (the model API key), which would reach the sandbox, the result and the log.
    const code = extractCode(deps.redact.text(reply.text));
    const attempt: AgentAttempt = {
      attempt: n,
      phase: "validation",
      code: code.length > MAX_MODEL_CODE_CHARS ? code.slice(0, SHOWN_LONG_CODE_CHARS) : code,
      error: null,
      usage: reply.usage,
      notes: reply.notes.map((note) => deps.redact.text(note).slice(0, 2000)),
    };
    attempts.push(attempt);
    // The answer repeats each attempt's code (and the next prompt too): a model's reply of
    // megabytes, ten times over, took the host past a gigabyte.
    if (code.length > MAX_MODEL_CODE_CHARS) {
      attempt.error = `The script was not run: it has ${code.length} characters, over the ` +
        `${MAX_MODEL_CODE_CHARS} a script may have (its start is kept above)`;
      onAttempt(attempt);
      continue;
    }

    const problems = await validate(code, deps);
    if (problems.length > 0) {
      attempt.error = `The script was not run; checking it found:\n- ${problems.join("\n- ")}`;
      onAttempt(attempt);
      continue;
    }
    attempt.phase = "execution";
    execution = await deps.executor.execute({ code, profile: request.profile }, { signal });
    if (execution.success) {
      onAttempt(attempt);
      return finish(true, `Succeeded on attempt ${n} of ${maxAttempts}`);
    }
    attempt.error = describeFailure(execution);
    onAttempt(attempt);
  }
  return finish(false, `No working code after ${maxAttempts} attempts`);
}

/** Why a run was given up on: the client cancelled it, or the server is stopping. */
function cancelled(signal: AbortSignal | undefined): string {
  return signal?.reason instanceof ServerStopping ? STOPPING_MESSAGE : "Cancelled by the client";
}

async function validate(code: string, deps: AgentDeps): Promise<string[]> {
  let analysis: Analysis;
  try {
    analysis = await deps.analyse(code);
  } catch (error) {
    return [`the code could not be analysed: ${(error as Error).message}`];
  }
  return checkAnalysis(analysis, deps.catalog());
}

/** What the model needs to fix a failed run: the error, its traceback, and the output tail. */
export function describeFailure(result: ExecutionResult): string {
  const d = result.diagnostics;
  const parts = [`${d?.error_type ?? "Error"}: ${d?.message ?? "the script failed"}`];
  if (d?.traceback) parts.push(d.traceback.trim().split("\n").slice(-15).join("\n"));
  if (result.stdout) {
    parts.push(`stdout (last lines):\n${result.stdout.trim().split("\n").slice(-10).join("\n")}`);
  }
  if (result.stderr) {
    parts.push(`stderr (last lines):\n${result.stderr.trim().split("\n").slice(-10).join("\n")}`);
  }
  return parts.join("\n\n");
}
