/**
 * The MCP server the client talks to. `createHost` wires the tools to their dependencies and
 * returns the server with a `close` that tears everything down.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import type { jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation";
import { VERSION } from "../_util/version.ts";
import type { Executor } from "../execution/executor.ts";
import { registerExecuteCodeTool } from "./tools/execute_code.ts";
import { trackLogLevel } from "./log_level.ts";
import { registerToolDiscovery } from "./tools/tool_discovery.ts";
import { registerSkillTools, type SkillToolsOptions } from "./tools/skills.ts";
import { registerSessionTools } from "./tools/sessions.ts";
import type { SessionManager } from "../sandbox/sessions.ts";
import { searchSkills } from "../skills/skill_search.ts";
import { registerGenerateAndExecuteTool } from "./tools/generate_and_execute.ts";
import type { AgentDeps } from "../agent/agent.ts";
import type { ChatModel } from "../agent/chat_model.ts";
import { selectModel } from "../agent/select_model.ts";
import type { OpenAIModelConfig } from "../agent/model_config.ts";
import type { Catalog } from "../catalog/catalog.ts";

export interface HostDeps {
  executor: Executor;
  describeExecuteCode: () => string;
  catalog: () => Catalog;
  /**
   * Subscribes to catalog changes (the execute_code description carries the index); returns
   * the unsubscribe, which the host's `close` calls.
   */
  onCatalogChange: (listener: () => void) => () => void;
  profiles: string[];
  defaultProfile: string;
  /** The agent's API model settings (null: use the client's model through sampling). */
  openAI: OpenAIModelConfig | null;
  agent: (model: ChatModel) => AgentDeps;
  skills: SkillToolsOptions;
  sessions: SessionManager;
}

export interface Host {
  server: McpServer;
  close(): Promise<void>;
}

export function createHost(deps: HostDeps): Host {
  const server = new McpServer(
    { name: "mcp-code-mode", version: VERSION },
    {
      capabilities: { logging: {} },
      jsonSchemaValidator: lazyValidator(),
      instructions:
        "Use execute_code to run Python that calls the listed MCP tools as functions; one script can replace many tool calls.",
    },
  );
  // Sessions belong to the connection that opened them.
  const owner = crypto.randomUUID();
  const wantsLog = trackLogLevel(server);
  const executeCode = registerExecuteCodeTool(server, {
    wantsLog,
    executor: {
      execute: (request, options) => deps.executor.execute(request, { ...options, owner }),
    },
    description: deps.describeExecuteCode,
    profiles: deps.profiles,
    defaultProfile: deps.defaultProfile,
  });
  registerToolDiscovery(server, deps.catalog, (query) => searchSkills(deps.skills.store, query));
  registerSkillTools(server, deps.skills);
  registerSessionTools(server, deps.sessions, owner);
  registerGenerateAndExecuteTool(server, {
    model: () => selectModel(deps.openAI, server.server),
    agent: deps.agent,
    profiles: deps.profiles,
  });
  const unsubscribe = deps.onCatalogChange(() => {
    executeCode.update({ description: deps.describeExecuteCode() });
    if (server.isConnected()) server.sendResourceListChanged();
  });
  let closing: Promise<void> | undefined;
  return {
    server,
    // Once, however many callers (an HTTP session can end by DELETE, idle expiry or shutdown).
    close: () =>
      closing ??= (async () => {
        // The bridge outlives every host: a listener left there would keep this host alive.
        unsubscribe();
        await deps.sessions.closeOwner(owner);
        await server.close();
      })(),
  };
}

/**
 * The SDK's Ajv validator, built on first use. The SDK uses it only to check a client's reply to
 * an elicitation, which this server never asks for; building one for every MCP server (every
 * HTTP session, every stateless request) took about a tenth of the HTTP server's time and much
 * of its garbage.
 */
function lazyValidator(): jsonSchemaValidator {
  let ajv: AjvJsonSchemaValidator | undefined;
  return {
    getValidator: (schema) => (ajv ??= new AjvJsonSchemaValidator()).getValidator(schema),
  };
}
