/**
 * A `tools/call` naming a tool this server does not have. The SDK answers only "Tool x not
 * found". The commonest such call to a code-mode server names one of its upstream servers'
 * tools, which are not MCP tools here but Python functions inside `execute_code`: the answer
 * then says how to call it; otherwise it names the tool a typo meant, and the tools there are.
 */
import { type McpServer, ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server";
import { closestName } from "../config/did_you_mean.ts";
import { QUOTED_NAME_CHARS, quotedName } from "../_util/quoted_name.ts";
import type { Catalog } from "../catalog/catalog.ts";
import { wrapRequestHandlers } from "./request_handlers.ts";

/** An upstream tool found by its MCP name: the Python call that runs it. */
export interface UpstreamFunction {
  server: string;
  module: string;
  function: string;
}

/**
 * Makes `server` answer a `tools/call` for a tool it has not registered with
 * `unknownToolMessage`. Call it before registering any tool: it wraps the `tools/call` handler
 * and `registerTool` as they are installed and used.
 */
export function explainUnknownTools(
  server: McpServer,
  catalog: () => Catalog,
): void {
  const own: string[] = [];
  const register = server.registerTool.bind(server);
  server.registerTool = ((name: string, ...rest: unknown[]) => {
    own.push(name);
    return (register as (...args: unknown[]) => unknown)(name, ...rest);
  }) as typeof server.registerTool;
  wrapRequestHandlers(server, (method, handler) =>
    method === "tools/call"
      ? (...args) => {
        const name = (args[0] as { params?: { name?: unknown } })?.params?.name;
        if (typeof name === "string" && !own.includes(name)) {
          throw new ProtocolError(
            ProtocolErrorCode.InvalidParams,
            unknownToolMessage(name, own, upstreamFunction(catalog(), name)),
          );
        }
        return handler(...args);
      }
      : handler);
}

/**
 * The upstream tool a client's name means (pure): the tool name itself, or a spelling a client
 * may have made of it, `mcp__filesystem__read_file` (Claude Code's) or `filesystem.read_file`;
 * of several servers' tools so named, the one whose server the name names.
 */
export function upstreamFunction(catalog: Catalog, name: string): UpstreamFunction | undefined {
  const tool = name.split(/__|\./).filter((part) => part !== "").at(-1) ?? name;
  const found = catalog.servers.flatMap((entry) =>
    entry.specs.filter((spec) => spec.tool === tool).map((spec) => ({
      server: entry.server,
      module: entry.moduleName,
      function: spec.pyName,
    }))
  );
  return found.find((f) => name !== tool && name.includes(f.server)) ?? found[0];
}

/** The answer to a call of tool `name`, not one of `own` (pure). */
export function unknownToolMessage(
  name: string,
  own: readonly string[],
  upstream: UpstreamFunction | undefined,
): string {
  const quoted = quotedName(name);
  if (upstream) {
    return `Unknown tool ${quoted}: it is a tool of the upstream server "${upstream.server}", ` +
      `which this server offers as a Python function, not as an MCP tool. Call it from a ` +
      `script: execute_code with "from mcp_tools import ${upstream.module}\\n` +
      `${upstream.module}.${upstream.function}(...)" (get_tool_docs gives its parameters)`;
  }
  const meant = name.length <= QUOTED_NAME_CHARS ? closestName(name, own) : undefined;
  return `Unknown tool ${quoted}` + (meant ? `; did you mean "${meant}"?` : ".") +
    ` This server's tools: ${own.join(", ")}`;
}
