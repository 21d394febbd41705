/**
 * Long tool calls as Tasks: the `io.modelcontextprotocol/tasks` extension of MCP 2026-07-28.
 *
 * A client that declares the extension on a `tools/call` gets the result as usual when the call
 * finishes within `afterMs`; a call still running then is answered with a task handle instead,
 * and goes on in the background. The client polls `tasks/get` (status, the output so far, then
 * the result), answers a question the call stops on with `tasks/update`, and may `tasks/cancel`
 * it, which kills its sandbox. A finished task's result is kept for `KEPT_AFTER_MS`.
 *
 * Tasks belong to the caller that started them (the stdio connection, or the HTTP caller): an
 * id from anyone else is an unknown task. Ids are random UUIDs.
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  type McpServer,
  ProtocolError,
  ProtocolErrorCode,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { z } from "zod";
import { type RequestHandler, wrapRequestHandlers } from "./request_handlers.ts";

export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";
/** How often a client is asked to poll. */
export const POLL_INTERVAL_MS = 1000;
/** How long a finished task's result is kept. */
export const KEPT_AFTER_MS = 10 * 60_000;
/** Finished tasks kept at most (the oldest goes first). */
export const MAX_FINISHED = 100;
/** The tail of a running task's output shown when it is polled. */
export const OUTPUT_TAIL_CHARS = 4000;

type Status = "working" | "input_required" | "completed" | "failed" | "cancelled";
type Json = Record<string, unknown>;

/** A tool call's outcome as the SDK hands it back: a result, or a question for the client. */
type CallResult = Json;
type ToolCallHandler = (request: Json, ctx: ServerContext) => Promise<CallResult>;

interface Task {
  id: string;
  owner: string;
  status: Status;
  createdAt: number;
  updatedAt: number;
  output: string;
  result?: Json;
  error?: Json;
  /** The questions outstanding (input_required), keyed uniquely over the task's life. */
  inputRequests?: Json;
  /** Takes the client's answers to the outstanding questions. */
  answer?: (responses: Json) => void;
  abort: AbortController;
  removal?: ReturnType<typeof setTimeout>;
}

/** Every task of this process, shared by the MCP server instances that serve its callers. */
export class TaskStore {
  readonly #tasks = new Map<string, Task>();

  get size(): number {
    return this.#tasks.size;
  }

  create(owner: string, abort: AbortController): Task {
    const now = Date.now();
    const task: Task = {
      id: crypto.randomUUID(),
      owner,
      status: "working",
      createdAt: now,
      updatedAt: now,
      output: "",
      abort,
    };
    this.#tasks.set(task.id, task);
    return task;
  }

  /** The task if it exists and is the caller's. */
  find(id: string, owner: string): Task | undefined {
    const task = this.#tasks.get(id);
    return task && task.owner === owner ? task : undefined;
  }

  /** Records a task's end; its result is kept for a while, within the cap. */
  finish(task: Task, status: "completed" | "failed" | "cancelled", payload: Json = {}): void {
    if (isFinished(task.status)) return;
    Object.assign(task, payload, {
      status,
      updatedAt: Date.now(),
      inputRequests: undefined,
      answer: undefined,
    });
    task.removal = setTimeout(() => this.#tasks.delete(task.id), KEPT_AFTER_MS);
    const finished = [...this.#tasks.values()].filter((t) => isFinished(t.status));
    for (const old of finished.slice(0, Math.max(0, finished.length - MAX_FINISHED))) {
      clearTimeout(old.removal);
      this.#tasks.delete(old.id);
    }
  }

  /** Cancels the owner's running tasks (its connection ended). */
  closeOwner(owner: string): void {
    for (const task of this.#tasks.values()) {
      if (task.owner === owner && !isFinished(task.status)) task.abort.abort();
    }
  }

  /** Cancels every running task and forgets all (shutdown). */
  close(): void {
    for (const task of this.#tasks.values()) {
      task.abort.abort();
      clearTimeout(task.removal);
    }
    this.#tasks.clear();
  }
}

function isFinished(status: Status): boolean {
  return status === "completed" || status === "failed" || status === "cancelled";
}

/** The wire view of a task (`tasks/get`, and the handle a call returns). */
export function taskView(task: Task): Json {
  const finishedAt = isFinished(task.status) ? task.updatedAt : null;
  return {
    taskId: task.id,
    status: task.status,
    statusMessage: statusMessage(task),
    createdAt: new Date(task.createdAt).toISOString(),
    lastUpdatedAt: new Date(task.updatedAt).toISOString(),
    // Unbounded while it runs (its own limits end it); then kept for KEPT_AFTER_MS.
    ttlMs: finishedAt === null ? null : finishedAt - task.createdAt + KEPT_AFTER_MS,
    pollIntervalMs: POLL_INTERVAL_MS,
    ...(task.status === "completed" ? { result: task.result } : {}),
    ...(task.status === "failed" ? { error: task.error } : {}),
    ...(task.status === "input_required" ? { inputRequests: task.inputRequests } : {}),
  };
}

function statusMessage(task: Task): string {
  const seconds = Math.round((Date.now() - task.createdAt) / 1000);
  switch (task.status) {
    case "working":
      return task.output
        ? `running for ${seconds} s; output so far:\n${task.output}`
        : `running for ${seconds} s`;
    case "input_required":
      return "waiting for a person's answer";
    case "completed":
      return "finished";
    case "failed":
      return "failed";
    case "cancelled":
      return "cancelled: its sandbox was killed";
  }
}

export interface TaskServing {
  store: TaskStore;
  owner: string;
  /** A call still running after this long becomes a task. */
  afterMs: number;
  /** A question unanswered this long goes back to the call unanswered (the approval timeout). */
  questionTimeoutMs: number;
  /** Decodes a request state the call's handler minted (the server's `requestState.verify`). */
  verifyState: (state: string, ctx: ServerContext) => Promise<unknown>;
  /**
   * For a question's decoded request state: resolves when the question no longer waits for the
   * client (the script that asked it ended), so the call goes on without an answer.
   */
  questionSettled?: (state: unknown) => Promise<void> | undefined;
}

/**
 * Makes this (2026-07-28) server answer long `tools/call`s with tasks and serve `tasks/*`.
 * Call it before registering tools: it wraps the `tools/call` handler `McpServer` installs, so
 * a task's result is the one that handler made (checked against the tool's output schema).
 */
export function serveLongCallsAsTasks(server: McpServer, serving: TaskServing): void {
  const low = server.server;
  low.registerCapabilities({ extensions: { [TASKS_EXTENSION]: {} } });
  const setRequestHandler = wrapRequestHandlers(
    server,
    (method, handler) =>
      method === "tools/call"
        ? asTaskWhenLong(handler as ToolCallHandler, serving) as RequestHandler
        : handler,
  );

  const { store, owner } = serving;
  const known = (taskId: string) => {
    const task = store.find(taskId, owner);
    if (!task) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown task: ${taskId}`);
    return task;
  };
  const byId = z.object({ taskId: z.string() });
  const ack = z.looseObject({});
  setRequestHandler(
    "tasks/get",
    { params: byId, result: ack },
    ({ taskId }: { taskId: string }) => Promise.resolve(taskView(known(taskId))),
  );
  setRequestHandler(
    "tasks/update",
    { params: byId, result: ack },
    // The SDK lifts `inputResponses` out of the params, as it does for a retried request.
    ({ taskId }: { taskId: string }, ctx: ServerContext) => {
      known(taskId).answer?.((ctx.mcpReq.inputResponses ?? {}) as Json);
      return Promise.resolve({});
    },
  );
  setRequestHandler(
    "tasks/cancel",
    { params: byId, result: ack },
    ({ taskId }: { taskId: string }) => {
      known(taskId).abort.abort();
      return Promise.resolve({});
    },
  );
}

const STILL_RUNNING = Symbol("still running");

/** A `tools/call` handler that hands back a task when the call outlasts `afterMs`. */
function asTaskWhenLong(handler: ToolCallHandler, serving: TaskServing): ToolCallHandler {
  return async (request, ctx) => {
    if (!declaresTasks(ctx)) return handler(request, ctx);
    const abort = new AbortController();
    const follow = () => abort.abort();
    ctx.mcpReq.signal.addEventListener("abort", follow, { once: true });
    // Until it is a task the call's feedback goes with the request; then into the task.
    const seen: { task?: Task; output: string } = { output: "" };
    const inner: ServerContext = {
      ...ctx,
      mcpReq: {
        ...ctx.mcpReq,
        signal: abort.signal,
        log: (level, data, logger) => {
          seen.output = (seen.output + String(data)).slice(-OUTPUT_TAIL_CHARS);
          if (!seen.task) return ctx.mcpReq.log(level, data, logger);
          seen.task.output = seen.output;
          return Promise.resolve();
        },
        notify: (notification) => seen.task ? Promise.resolve() : ctx.mcpReq.notify(notification),
      },
    };
    const running = handler(request, inner);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const first = await Promise.race([
      running,
      new Promise<typeof STILL_RUNNING>((resolve) => {
        timer = setTimeout(() => resolve(STILL_RUNNING), serving.afterMs);
      }),
    ]).finally(() => clearTimeout(timer));
    ctx.mcpReq.signal.removeEventListener("abort", follow);
    if (first !== STILL_RUNNING) return first;
    const task = seen.task = serving.store.create(serving.owner, abort);
    task.output = seen.output;
    void followToTheEnd(task, running, { handler, request, inner, serving });
    return { resultType: "task", ...taskView(task), content: [] };
  };
}

/**
 * Follows a task's call to its end: each question it stops on becomes the task's
 * `inputRequests` (keys numbered so none is reused), and the client's answer calls the handler
 * again with it, as a retried request would.
 */
async function followToTheEnd(
  task: Task,
  running: Promise<CallResult>,
  call: { handler: ToolCallHandler; request: Json; inner: ServerContext; serving: TaskServing },
): Promise<void> {
  const { store } = call.serving;
  let round = 0;
  try {
    let outcome = await running;
    while (outcome.resultType === "input_required") {
      round++;
      const prefix = `${round}.`;
      const questions = (outcome.inputRequests ?? {}) as Json;
      const state = typeof outcome.requestState === "string"
        ? await call.serving.verifyState(outcome.requestState, call.inner)
        : undefined;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const answers = await new Promise<Json>((resolve) => {
        task.inputRequests = Object.fromEntries(
          Object.entries(questions).map(([key, value]) => [prefix + key, value]),
        );
        task.status = "input_required";
        task.updatedAt = Date.now();
        task.answer = (responses) => {
          const mine = Object.entries(responses).filter(([key]) => key.startsWith(prefix));
          if (mine.length === 0) return;
          resolve(
            Object.fromEntries(mine.map(([key, value]) => [key.slice(prefix.length), value])),
          );
        };
        // No answer in time, cancelled, or no longer asked: the call is asked again with none
        // (it then knows which it was).
        const unanswered = () => resolve({});
        timer = setTimeout(unanswered, call.serving.questionTimeoutMs + 1000);
        task.abort.signal.addEventListener("abort", unanswered, { once: true });
        void call.serving.questionSettled?.(state)?.then(unanswered);
      }).finally(() => clearTimeout(timer));
      task.status = "working";
      task.inputRequests = undefined;
      task.answer = undefined;
      task.updatedAt = Date.now();
      outcome = await call.handler(call.request, {
        ...call.inner,
        mcpReq: { ...call.inner.mcpReq, inputResponses: answers, requestState: () => state },
      } as ServerContext);
    }
    if (task.abort.signal.aborted) store.finish(task, "cancelled");
    else store.finish(task, "completed", { result: { ...outcome, resultType: "complete" } });
  } catch (error) {
    if (task.abort.signal.aborted) store.finish(task, "cancelled");
    else {
      const { code = ProtocolErrorCode.InternalError, message = String(error) } = error as {
        code?: number;
        message?: string;
      };
      store.finish(task, "failed", { error: { code, message } });
    }
  }
}

/** Whether a 2026-07-28 request declares the Tasks extension in its capabilities. */
function declaresTasks(ctx: ServerContext): boolean {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const capabilities = envelope?.[CLIENT_CAPABILITIES_META_KEY] as
    | { extensions?: Record<string, unknown> }
    | undefined;
  return capabilities?.extensions?.[TASKS_EXTENSION] !== undefined;
}
