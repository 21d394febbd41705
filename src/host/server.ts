/**
 * The MCP server the client talks to. `createHost` builds one MCP server instance for one
 * serving unit, of either protocol era: a stdio connection, a 2025-11-25 HTTP session, or one
 * stateless HTTP request. It wires the tools to their dependencies and returns the server with a
 * `close` that detaches it from the shared service.
 */
import {
  type jsonSchemaValidator,
  type LoggingLevel,
  McpServer,
  type ProtocolEra,
} from "@modelcontextprotocol/server";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/server/validators/ajv";
import { DECLARED_CAPABILITIES, SERVER_INFO, SERVER_INSTRUCTIONS } from "./server_identity.ts";
import type { Executor } from "../execution/executor.ts";
import { registerExecuteCodeTool } from "./tools/execute_code.ts";
import { answerWellFormed } from "./well_formed_answers.ts";
import { registerToolDiscovery } from "./tools/tool_discovery.ts";
import { registerSkillTools, type SkillToolsOptions } from "./tools/skills.ts";
import { registerSessionTools } from "./tools/sessions.ts";
import type { SessionManager } from "../sandbox/sessions.ts";
import type { ParkedRuns } from "./approvals.ts";
import { serveLongCallsAsTasks, type TaskStore } from "./tasks.ts";
import { holdUntilStarted, type StopGuard } from "./startup_gate.ts";
import { explainUnknownTools } from "./unknown_tools.ts";
import { skillSearchEntries } from "../skills/skill_search.ts";
import { registerGenerateAndExecuteTool } from "./tools/generate_and_execute.ts";
import type { AgentDeps } from "../agent/agent.ts";
import type { ChatModel } from "../agent/chat_model.ts";
import { selectModel } from "../agent/select_model.ts";
import { samplingClient } from "../agent/sampling_model.ts";
import type { OpenAIModelConfig } from "../agent/model_config.ts";
import type { Catalog } from "../catalog/catalog.ts";

export interface HostDeps {
  /**
   * Resolves once the tool catalog and skills are known (the upstream servers connected or
   * failed); tool and resource requests wait for it, the handshake does not.
   */
  started: Promise<void>;
  /** Holds requests so that the server's stop answers them (see holdUntilStarted). */
  guard?: StopGuard;
  executor: Executor;
  describeExecuteCode: () => string;
  catalog: () => Catalog;
  /**
   * Subscribes to catalog changes (the execute_code description carries the index); returns
   * the unsubscribe, which the host's `close` calls.
   */
  onCatalogChange: (listener: () => void) => () => void;
  profiles: string[];
  /** What each of `profiles` grants, a line each (see `profileSummary`). */
  profileSummary?: string;
  defaultProfile: string;
  /** The agent's API model settings (null: use the client's model through sampling). */
  openAI: OpenAIModelConfig | null;
  agent: (model: ChatModel) => AgentDeps;
  skills: SkillToolsOptions;
  sessions: SessionManager;
  /** Runs parked on a question to a 2026-07-28 client (shared by every instance). */
  parked: ParkedRuns;
  /** Tool calls answered as Tasks (shared by every instance). */
  tasks: TaskStore;
  /** A call from a client with the Tasks extension still running after this becomes a task. */
  taskAfterMs: number;
}

/** What one MCP server instance serves. */
export interface HostContext {
  /** The protocol era of its client: "legacy" is 2025-11-25 and before, "modern" 2026-07-28. */
  era: ProtocolEra;
  /**
   * Who owns the persistent sessions opened through it: its connection (stdio, a 2025-11-25
   * HTTP session), or the HTTP caller's credentials (stateless requests). The caller that owns
   * that lifetime closes the owner's sessions when it ends.
   */
  owner: string;
  /**
   * It answers one HTTP request and is then closed by the SDK: it needs no catalog updates (its
   * tool description is read when it is built).
   */
  perRequest?: boolean;
  /**
   * The log level a stateless 2025-11-25 caller set last: no session carries it from its
   * `logging/setLevel` request to the next.
   */
  logLevel?: LoggingLevel;
}

export interface Host {
  server: McpServer;
  /** Detaches this instance from the shared service and closes it (once). */
  close(): Promise<void>;
}

export function createHost(deps: HostDeps, context: HostContext): Host {
  const server = new McpServer(
    { ...SERVER_INFO },
    {
      // `tools` (with listChanged) comes with the first tool: declared here, the SDK would
      // install its tools/call handler at once, before the Tasks wrapping below.
      capabilities: structuredClone(DECLARED_CAPABILITIES),
      jsonSchemaValidator: lazyValidator(),
      // A 2026-07-28 round's request state must be one this process sealed.
      requestState: { verify: deps.parked.verify },
      instructions: SERVER_INSTRUCTIONS,
    },
  );
  const { owner } = context;
  // Before any tool, these: they wrap the handlers the first registration installs.
  answerWellFormed(server);
  holdUntilStarted(server, deps.started, deps.guard);
  explainUnknownTools(server, deps.catalog);
  if (context.era === "modern") {
    serveLongCallsAsTasks(server, {
      store: deps.tasks,
      owner,
      afterMs: deps.taskAfterMs,
      questionTimeoutMs: deps.parked.timeoutMs,
      verifyState: deps.parked.verify,
      questionSettled: (state) => deps.parked.settled(state),
    });
  }
  const executeCode = registerExecuteCodeTool(server, {
    era: context.era,
    owner,
    parked: deps.parked,
    logLevel: context.logLevel,
    executor: {
      execute: (request, options) => deps.executor.execute(request, { ...options, owner }),
    },
    description: deps.describeExecuteCode,
    profiles: deps.profiles,
    profileSummary: deps.profileSummary,
    defaultProfile: deps.defaultProfile,
  });
  registerToolDiscovery(server, deps.catalog, () => skillSearchEntries(deps.skills.store));
  registerSkillTools(server, deps.skills);
  registerSessionTools(server, deps.sessions, owner);
  // The client's model through sampling only where the protocol still has it: without a model
  // API key, a 2026-07-28 client could never use the tool, so it is not offered.
  if (deps.openAI !== null || context.era === "legacy") {
    registerGenerateAndExecuteTool(server, {
      model: (ctx) =>
        selectModel(
          deps.openAI,
          context.era === "legacy" ? samplingClient(server.server, ctx) : null,
        ),
      agent: deps.agent,
      profiles: deps.profiles,
    });
  }
  const unsubscribe = context.perRequest ? () => {} : deps.onCatalogChange(() => {
    executeCode.update({ description: deps.describeExecuteCode() });
    if (server.isConnected()) server.sendResourceListChanged();
  });
  let closing: Promise<void> | undefined;
  // Once, however many callers (a connection can end by DELETE, idle expiry, EOF or shutdown).
  const close = () =>
    closing ??= (async () => {
      // The catalog outlives every host: a listener left there would keep this host alive.
      unsubscribe();
      await server.close();
    })();
  const closedBefore = server.server.onclose;
  server.server.onclose = () => {
    closedBefore?.();
    void close();
  };
  return { server, close };
}

/**
 * The SDK's Ajv validator, built on first use. The SDK uses it only to check a client's answer
 * to an elicitation (an approval); building one for every MCP server instance (every HTTP
 * session, every stateless request) took about a tenth of the HTTP server's time.
 */
function lazyValidator(): jsonSchemaValidator {
  let ajv: AjvJsonSchemaValidator | undefined;
  return {
    getValidator: (schema) => (ajv ??= new AjvJsonSchemaValidator()).getValidator(schema),
  };
}
