/**
 * Asking the MCP client's person about a script's tool call, for each protocol era.
 *
 * - 2025-11-25: the server may send requests to the client during a call, so the approver sends
 *   an elicitation and waits for it; the `execute_code` call stays open meanwhile. Over stateless
 *   HTTP the client's answer finds its way back through src/host/stateless_legacy.ts.
 * - 2026-07-28: a server cannot. The `execute_code` call returns an `input_required` result (the
 *   question) while the script's sandbox stays alive, parked here under an unguessable id sealed
 *   into the request state; the client sends the call again with the answer, and that round
 *   takes the run up where it stopped. Nothing of the script runs twice.
 *
 * A parked run whose question is not answered in time gets "timed_out" (the script goes on and
 * its result waits for the client); one the client never comes back for is killed.
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  createRequestStateCodec,
  inputRequired,
  type InputRequiredResult,
  type McpServer,
  type RequestStateCodec,
  SdkErrorCode,
  type ServerContext,
} from "@modelcontextprotocol/server";
import {
  type ApprovalAnswer,
  type ApprovalQuestion,
  approvalRequest,
  type Approver,
  readElicitAnswer,
} from "../execution/approval.ts";
import type { ExecutionResult } from "../execution/execution_result.ts";
import type { ProgressParams } from "../rpc/sandbox_protocol.ts";

/** How long a parked run whose question has timed out waits for its client to come back. */
export const ABANDONED_AFTER_MS = 60_000;

/**
 * A 2025-11-25 client's person, asked through elicitation during the call, on the call's own
 * response stream. A client that declared no elicitation is not asked; one whose capabilities
 * are unknown (a stateless request: they were declared to another instance) is asked, and
 * "method not found" means it cannot answer.
 */
export function elicitingApprover(
  server: McpServer,
  ctx: ServerContext,
  timeoutMs: number,
): Approver {
  return async (question, withdrawn) => {
    const declared = server.server.getClientCapabilities();
    if (declared !== undefined && declared.elicitation === undefined) return "unavailable";
    // Either ends the question: the client cancelled its call, or the script ended.
    const signal = AbortSignal.any([ctx.mcpReq.signal, withdrawn]);
    try {
      const answer = await ctx.mcpReq.send(
        { method: "elicitation/create", params: approvalRequest(question) },
        { timeout: timeoutMs, signal },
      );
      return readElicitAnswer(answer);
    } catch (error) {
      if (signal.aborted) return "cancelled";
      const code = (error as { code?: unknown }).code;
      return code === SdkErrorCode.RequestTimeout ? "timed_out" : "unavailable";
    }
  };
}

/** A question a run is waiting on. */
export interface PendingQuestion {
  question: ApprovalQuestion;
  /** Settles the question; only its first answer counts. */
  answer(answer: ApprovalAnswer): void;
  /** Resolves on its answer: the person's, or one given for them (timed out, script ended). */
  settled: Promise<void>;
}

/** Where a run's live output goes during the round that is waiting on it. */
export interface RoundFeedback {
  onOutput?(stream: "stdout" | "stderr", text: string): void;
  onProgress?(report: ProgressParams): void;
}

/**
 * One script run that may stop to ask questions, seen by the rounds of a 2026-07-28 call in
 * turn: each round waits for its result or its next question.
 */
export class InteractiveRun {
  readonly #abort = new AbortController();
  readonly #questions: PendingQuestion[] = [];
  #wake: (() => void) | null = null;
  #result: ExecutionResult | null = null;
  #feedback: RoundFeedback = {};

  /** Starts the run; `execute` gets what the run lends the executor. */
  constructor(
    execute: (lent: {
      signal: AbortSignal;
      approve: Approver;
      onOutput: (stream: "stdout" | "stderr", text: string) => void;
      onProgress: NonNullable<RoundFeedback["onProgress"]>;
    }) => Promise<ExecutionResult>,
  ) {
    void execute({
      signal: this.#abort.signal,
      approve: (question, withdrawn) =>
        new Promise<ApprovalAnswer>((resolve) => {
          const settled = Promise.withResolvers<void>();
          const pending: PendingQuestion = {
            question,
            answer: (answer) => {
              resolve(answer);
              settled.resolve();
            },
            settled: settled.promise,
          };
          this.#questions.push(pending);
          // Not yet handed to a round: taken back. Already asked: a late answer goes nowhere.
          withdrawn.addEventListener("abort", () => {
            const waiting = this.#questions.indexOf(pending);
            if (waiting >= 0) this.#questions.splice(waiting, 1);
            pending.answer("cancelled");
          }, { once: true });
          this.#wake?.();
        }),
      onOutput: (stream, text) => this.#feedback.onOutput?.(stream, text),
      onProgress: (report) => this.#feedback.onProgress?.(report),
    }).then((result) => {
      this.#result = result;
      this.#wake?.();
    });
  }

  /**
   * Waits, on behalf of one round, for the run's result or its next question. The round's
   * cancellation kills the run; its feedback gets the live output meanwhile.
   */
  async next(
    signal: AbortSignal,
    feedback: RoundFeedback,
  ): Promise<{ result: ExecutionResult } | { pending: PendingQuestion }> {
    const cancel = () => this.#abort.abort();
    signal.addEventListener("abort", cancel, { once: true });
    if (signal.aborted) cancel();
    this.#feedback = feedback;
    try {
      while (true) {
        if (this.#result) return { result: this.#result };
        const pending = this.#questions.shift();
        if (pending) return { pending };
        await new Promise<void>((resolve) => this.#wake = resolve);
      }
    } finally {
      this.#wake = null;
      this.#feedback = {};
      signal.removeEventListener("abort", cancel);
    }
  }

  /** Kills the run (its client is gone). */
  abandon(): void {
    this.#abort.abort();
  }
}

interface Parked {
  run: InteractiveRun;
  pending: PendingQuestion;
  owner: string;
  timers: ReturnType<typeof setTimeout>[];
}

/** What a 2026-07-28 round echoes back: which parked run it answers. */
interface ParkedState {
  parked: string;
}

/** How a 2026-07-28 round ends: the run's result, its next question, or no run to continue. */
export type RoundEnd =
  | { result: ExecutionResult }
  | { question: InputRequiredResult }
  | { gone: string };

/**
 * One round of a 2026-07-28 call. A first round starts the run; a later one hands the answer it
 * carries to the question its run is parked on (the run named by the round's request state).
 * Then it waits for the run's result or its next question: the run is parked on that question,
 * which the round returns. A client that cannot show a form gets "unavailable" for each.
 */
export async function playRound(
  ctx: ServerContext,
  options: {
    parked: ParkedRuns;
    owner: string;
    start: () => InteractiveRun;
    feedback: RoundFeedback;
  },
): Promise<RoundEnd> {
  const state = ctx.mcpReq.requestState<ParkedState>();
  let run: InteractiveRun;
  if (state === undefined) {
    run = options.start();
  } else {
    const parked = options.parked.take(state, options.owner);
    if (!parked) {
      return {
        gone:
          "Cannot continue the script: the approval it waited for is unknown, already answered or expired (its sandbox is gone); run it again",
      };
    }
    parked.pending.answer(readElicitAnswer(ctx.mcpReq.inputResponses?.approval));
    run = parked.run;
  }
  const canAsk = clientCanElicit(ctx);
  while (true) {
    const step = await run.next(ctx.mcpReq.signal, options.feedback);
    if ("result" in step) return { result: step.result };
    if (!canAsk) {
      step.pending.answer("unavailable");
      continue;
    }
    return {
      question: inputRequired({
        inputRequests: { approval: inputRequired.elicit(approvalRequest(step.pending.question)) },
        requestState: await options.parked.park(run, step.pending, options.owner),
      }),
    };
  }
}

/** Whether a 2026-07-28 request says its client can show a form (its declared capabilities). */
function clientCanElicit(ctx: ServerContext): boolean {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const capabilities = envelope?.[CLIENT_CAPABILITIES_META_KEY] as
    | { elicitation?: unknown }
    | undefined;
  return capabilities?.elicitation !== undefined;
}

/** The runs parked on a question, shared by every MCP server instance of this process. */
export class ParkedRuns {
  readonly #parked = new Map<string, Parked>();
  readonly #codec: RequestStateCodec<ParkedState>;
  readonly timeoutMs: number;

  constructor(options: { timeoutMs: number }) {
    this.timeoutMs = options.timeoutMs;
    this.#codec = createRequestStateCodec<ParkedState>({
      key: crypto.getRandomValues(new Uint8Array(32)),
      ttlSeconds: Math.ceil((options.timeoutMs + ABANDONED_AFTER_MS) / 1000),
    });
  }

  /** For `ServerOptions.requestState.verify`: refuses state this process did not seal. */
  readonly verify = (state: string, ctx: ServerContext) => this.#codec.verify(state, ctx);

  get size(): number {
    return this.#parked.size;
  }

  /** Parks `run` on its question; returns the sealed request state that names it. */
  park(run: InteractiveRun, pending: PendingQuestion, owner: string): Promise<string> {
    const id = crypto.randomUUID();
    const parked: Parked = { run, pending, owner, timers: [] };
    parked.timers.push(
      setTimeout(() => pending.answer("timed_out"), this.timeoutMs),
      setTimeout(() => {
        this.#parked.delete(id);
        run.abandon();
      }, this.timeoutMs + ABANDONED_AFTER_MS),
    );
    this.#parked.set(id, parked);
    return this.#codec.mint({ parked: id });
  }

  /**
   * Resolves once the question a round's verified state names has its answer without its
   * client (timed out, or withdrawn because the script ended): a task waiting for the client can
   * go on to the result. Undefined for no such question.
   */
  settled(state: unknown): Promise<void> | undefined {
    const id = (state as Partial<ParkedState> | undefined)?.parked;
    return typeof id === "string" ? this.#parked.get(id)?.pending.settled : undefined;
  }

  /** The parked run a round's verified state names, if it is still there and the caller's. */
  take(state: ParkedState, owner: string): Parked | undefined {
    const parked = this.#parked.get(state.parked);
    if (!parked || parked.owner !== owner) return undefined;
    this.#parked.delete(state.parked);
    for (const timer of parked.timers) clearTimeout(timer);
    return parked;
  }

  /** Kills every parked run (shutdown). */
  close(): void {
    for (const [id, parked] of this.#parked) {
      for (const timer of parked.timers) clearTimeout(timer);
      parked.run.abandon();
      this.#parked.delete(id);
    }
  }
}
