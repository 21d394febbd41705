/**
 * The tool catalog: every upstream server's tools as Python modules, stubs, a compact index for
 * the `execute_code` description, and search. Built from a snapshot of the upstream tools; the
 * host rebuilds it when a server's tool list changes.
 */
import { assignIdentifiers } from "./identifiers.ts";
import { matchScore, queryTerms } from "./search_score.ts";
import { PYTHON_EXCEPTIONS } from "../execution/outcomes.ts";
import {
  firstSentence,
  type FunctionSpec,
  functionSpecs,
  type ObservedShape,
  renderModule,
  renderModuleStub,
  renderStub,
  type ToolInfo,
} from "./python_stubs.ts";

export interface ServerTools {
  server: string;
  description: string;
  tools: ToolInfo[];
  /** Why the server has no tools, when it failed to connect. */
  error?: string;
}

export interface ServerEntry {
  server: string;
  moduleName: string;
  description: string;
  specs: FunctionSpec[];
  /** The module the sandbox runs. */
  source: string;
  /** The module as an agent reads it. */
  stub: string;
  error?: string;
}

/** Package-level names of `mcp_tools`: the exception classes and result types. */
const PACKAGE_RESERVED = [...PYTHON_EXCEPTIONS, "Image", "Resource", "report_progress"];
const PACKAGE_INIT = `from _codemode import ${PACKAGE_RESERVED.join(", ")}\n`;

export class Catalog {
  readonly servers: ServerEntry[];
  readonly #byServer: Map<string, ServerEntry>;

  /** `observed`: the observed result shape of a tool, for tools without an outputSchema. */
  constructor(
    servers: readonly ServerTools[],
    observed: (server: string, tool: string) => ObservedShape | undefined = () => undefined,
  ) {
    const modules = assignIdentifiers(servers.map((s) => s.server), { reserved: PACKAGE_RESERVED });
    this.servers = servers.map((s) => {
      const moduleName = modules.get(s.server)!;
      const specs = functionSpecs(s.tools, (tool) => observed(s.server, tool));
      return {
        server: s.server,
        moduleName,
        description: s.description,
        specs,
        source: renderModule(s.description, specs),
        stub: renderModuleStub(moduleName, s.description, specs),
        error: s.error,
      };
    });
    this.#byServer = new Map(this.servers.map((e) => [e.server, e]));
  }

  /** `{ mcp_tools: { __init__, <module>: source } }` for the sandbox. */
  packages(): Record<string, Record<string, string>> {
    const modules: Record<string, string> = { __init__: PACKAGE_INIT };
    for (const entry of this.servers) modules[entry.moduleName] = entry.source;
    return { mcp_tools: modules };
  }

  hasTool(server: string, tool: string): boolean {
    return this.#byServer.get(server)?.specs.some((s) => s.tool === tool) ?? false;
  }

  server(name: string): ServerEntry | undefined {
    return this.#byServer.get(name) ?? this.servers.find((e) => e.moduleName === name);
  }

  /** One line per server and tool: what an agent needs to know what exists. */
  index(): string {
    const lines: string[] = [];
    for (const entry of this.servers) {
      const about = entry.description ? ` (${firstSentence(entry.description, 100)})` : "";
      if (entry.error) {
        lines.push(`${entry.moduleName}: unavailable: ${entry.error}`);
        continue;
      }
      lines.push(`${entry.moduleName}${about}:`);
      for (const spec of entry.specs) {
        lines.push(`  ${spec.pyName}: ${firstSentence(spec.description, 70)}`);
      }
    }
    return lines.join("\n");
  }

  /** Stubs of the tools that best match `query` (words matched in names and descriptions). */
  search(query: string, limit = 8): { name: string; stub: string; score: number }[] {
    const terms = queryTerms(query);
    const hits: { name: string; spec: FunctionSpec; score: number }[] = [];
    for (const entry of this.servers) {
      for (const spec of entry.specs) {
        const score = matchScore(terms, [
          [`${spec.tool} ${spec.pyName}`.toLowerCase(), 3],
          [entry.server.toLowerCase(), 2],
          [spec.doc.toLowerCase(), 1],
        ]);
        if (score > 0) hits.push({ name: `${entry.moduleName}.${spec.pyName}`, spec, score });
      }
    }
    return hits.sort((a, b) => b.score - a.score || a.name.localeCompare(b.name)).slice(0, limit)
      .map(({ name, spec, score }) => ({ name, stub: renderStub(spec), score }));
  }

  /** Full stubs for `module.function` names, or whole modules for bare server names. */
  docs(names: readonly string[]): { name: string; stub: string | null }[] {
    return names.map((name) => {
      const [moduleName, fn] = name.split(".", 2) as [string, string | undefined];
      const entry = this.server(moduleName);
      if (!entry) return { name, stub: null };
      if (fn === undefined) return { name, stub: entry.stub };
      const spec = entry.specs.find((s) =>
        s.pyName === fn || s.pyName + "_async" === fn || s.tool === fn
      );
      return { name, stub: spec ? renderStub(spec) : null };
    });
  }
}
