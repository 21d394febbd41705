/**
 * Cheap tool discovery for agents: `search_tools` (matching stubs), `get_tool_docs` (full
 * stubs), and one MCP resource per server holding its stub file.
 */
import {
  type McpServer,
  ProtocolError,
  ProtocolErrorCode,
  ResourceTemplate,
} from "@modelcontextprotocol/server";
import { z } from "zod";
import { toolArguments } from "./tool_arguments.ts";
import type { Catalog, SearchEntry } from "../../catalog/catalog.ts";
import { counted } from "../../_util/counted.ts";

export function registerToolDiscovery(
  server: McpServer,
  catalog: () => Catalog,
  /** Candidates beyond the catalog's own tools (saved skills). */
  extraEntries: () => SearchEntry[] = () => [],
): void {
  const searchInput = {
    query: z.string().max(1000).describe(
      "What you want to do, in words (e.g. 'list open pull requests'); ranked over tool names, descriptions, parameters and servers.",
    ),
    limit: z.number().int().min(1).max(50).optional().describe("Most results (default 8)."),
  };
  server.registerTool("search_tools", {
    title: "Search the Python tool stubs",
    description:
      "Find upstream tools callable from execute_code. Returns the Python stubs (signature and docstring) of the best matches for the query words.",
    inputSchema: toolArguments(searchInput),
    annotations: { readOnlyHint: true },
  }, (args) => {
    const limit = args.limit ?? 8;
    const hits = catalog().search(args.query, limit, extraEntries());
    const body = hits.map((h) => `# ${h.name}\n${h.stub}`).join("\n");
    const tokens = catalog().tokens(body);
    const down = catalog().unavailableServers();
    const unsearched = down.length === 0
      ? ""
      : ` Not searched, being unavailable: ${down.join(", ")} (get_tool_docs on one says why).`;
    const text = hits.length === 0
      ? `No tool matches "${args.query}". The index is in the execute_code description.${unsearched}`
      : `# ${counted(hits.length, "match", "matches")}, ${tokens} tokens\n${body}`;
    return {
      content: [{ type: "text" as const, text }],
      structuredContent: { matches: hits.map((h) => ({ name: h.name, stub: h.stub })), tokens },
      isError: false,
    };
  });

  const docsInput = { names: z.array(z.string().max(200)).min(1).max(50) };
  server.registerTool("get_tool_docs", {
    title: "Get Python stubs of tools",
    description:
      "Full Python stubs for tools named 'module.function', as search_tools and the execute_code index name them, or of a whole module when given just its name.",
    inputSchema: toolArguments(docsInput),
    annotations: { readOnlyHint: true },
  }, (args) => {
    const docs = catalog().docs(args.names, extraEntries());
    const missing = docs.filter((d) => d.stub === null).map((d) => d.name);
    const body = docs.map((d) => {
      const down = d.unavailable === undefined
        ? []
        : [`# its server is unavailable: ${d.unavailable}`];
      return d.stub !== null
        ? [`# ${d.name}`, ...down, d.stub].join("\n")
        : [`# ${d.name}: not found${d.meant ? `; did you mean ${d.meant}?` : ""}`, ...down]
          .join("\n");
    }).join("\n");
    const tokens = catalog().tokens(body);
    const text = `# ${
      docs.length - missing.length
    } of ${docs.length} found, ${tokens} tokens\n${body}`;
    return {
      content: [{ type: "text" as const, text }],
      structuredContent: { docs, tokens },
      isError: missing.length === docs.length,
    };
  });

  server.registerResource(
    "tool-stubs",
    new ResourceTemplate("codemode://stubs/{module}.pyi", {
      list: () => ({
        resources: catalog().servers.map((s) => ({
          uri: `codemode://stubs/${s.moduleName}.pyi`,
          name: `mcp_tools.${s.moduleName}`,
          description: s.description || `Python stubs of the ${s.server} server's tools`,
          mimeType: "text/x-python",
        })),
      }),
    }),
    { title: "Python stubs of an upstream server", mimeType: "text/x-python" },
    (uri: URL, variables: Record<string, string | string[]>) => {
      const entry = catalog().server(String(variables.module));
      if (!entry) {
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `Cannot read ${uri.href}: no such module`,
        );
      }
      return { contents: [{ uri: uri.href, mimeType: "text/x-python", text: entry.stub }] };
    },
  );
}
