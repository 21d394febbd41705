/**
 * The tool catalog: every upstream server's tools as Python modules, stubs, a compact index for
 * the `execute_code` description, and search. Built from a snapshot of the upstream tools; the
 * host rebuilds it when a server's tool list changes.
 */
import { mib } from "../_util/bytes.ts";
import { assignIdentifiers } from "./identifiers.ts";
import { closestName } from "../config/did_you_mean.ts";
import { type SearchDocument, ToolSearch } from "./tool_search.ts";
import { estimateTokens } from "./token_count.ts";
import { PYTHON_EXCEPTIONS } from "../execution/outcomes.ts";
import { type ToolIndex, toolIndex } from "./tool_index.ts";
import {
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

/**
 * How much of the tools' Python modules a sandbox is sent: every module goes to every sandbox
 * (a script may import any), and a sandbox holds about seven bytes for each (an upstream's 60 MB
 * of tool descriptions put every sandbox past its 512 MB limit at boot). A server whose module
 * would pass `MAX_SERVER_MODULE_CHARS`, or bring all of them past `MAX_MODULES_CHARS`, has its
 * tools withheld, with the reason. Of 31 real servers measured, the largest module is 87 KB
 * and all 476 tools take 1 MB.
 */
export const MAX_SERVER_MODULE_CHARS = 2 * 1024 * 1024;
export const MAX_MODULES_CHARS = 8 * 1024 * 1024;

/** Package-level names of `mcp_tools`: the exception classes and result types. */
const PACKAGE_RESERVED = [...PYTHON_EXCEPTIONS, "Image", "Resource", "report_progress"];
const PACKAGE_INIT = `from _codemode import ${PACKAGE_RESERVED.join(", ")}\n`;

export interface CatalogOptions {
  /** The observed result shape of a tool, for tools without an outputSchema. */
  observed?: (server: string, tool: string) => ObservedShape | undefined;
  /** Counts tokens (the index's budget, the costs search and docs state); default: estimated. */
  countTokens?: (text: string) => number;
}

/** Why a module of `size` characters is not sent after `sent` of others, or null. */
function withheldBecause(size: number, sent: number): string | null {
  if (size > MAX_SERVER_MODULE_CHARS) {
    return `their Python module would be ${mib(size)}, over the ${
      mib(MAX_SERVER_MODULE_CHARS)
    } one server's may take`;
  }
  if (sent + size > MAX_MODULES_CHARS) {
    return `the modules of the servers listed before it take ${mib(sent)} of the ${
      mib(MAX_MODULES_CHARS)
    } every sandbox is sent`;
  }
  return null;
}

/** A search candidate beyond the catalog's tools (a skill). */
export interface SearchEntry {
  document: SearchDocument;
  stub: string;
}

export interface SearchResult {
  name: string;
  stub: string;
  score: number;
}

export class Catalog {
  readonly servers: ServerEntry[];
  /** The search index, and the extra entries it was built with. */
  #search: { key: string; index: ToolSearch; specs: Map<string, FunctionSpec> } | undefined;
  readonly #byServer: Map<string, ServerEntry>;
  readonly #countTokens: (text: string) => number;

  constructor(servers: readonly ServerTools[], options: CatalogOptions = {}) {
    const observed = options.observed ?? (() => undefined);
    this.#countTokens = options.countTokens ?? estimateTokens;
    const modules = assignIdentifiers(servers.map((s) => s.server), { reserved: PACKAGE_RESERVED });
    let sent = 0;
    this.servers = servers.map((s) => {
      const moduleName = modules.get(s.server)!;
      const render = (specs: FunctionSpec[], error: string | undefined) => ({
        specs,
        error,
        source: renderModule(s.server, s.description, specs, error),
        stub: renderModuleStub(moduleName, s.description, specs),
      });
      let made: ReturnType<typeof render>;
      try {
        made = render(functionSpecs(s.tools, (tool) => observed(s.server, tool)), s.error);
      } catch (failure) {
        // What an upstream's tools say is theirs to choose: one whose schemas break the
        // generator (a schema nested past the stack, say) loses its tools, not the catalog.
        const why = failure instanceof Error ? `${failure.name}: ${failure.message}` : failure;
        made = render([], `its tools could not be made into Python (${why})`.slice(0, 300));
      }
      const withheld = withheldBecause(made.source.length, sent);
      if (withheld) made = render([], `its tools are withheld: ${withheld}`);
      sent += made.source.length;
      return { server: s.server, moduleName, description: s.description, ...made };
    });
    this.#byServer = new Map(this.servers.map((e) => [e.server, e]));
  }

  /** `{ mcp_tools: { __init__, <module>: source } }` for the sandbox. */
  packages(): Record<string, Record<string, string>> {
    const modules: Record<string, string> = { __init__: PACKAGE_INIT };
    for (const entry of this.servers) modules[entry.moduleName] = entry.source;
    return { mcp_tools: modules };
  }

  /** The argument names a tool's input schema declares; null when it takes any (or is unknown). */
  parameterNames(server: string, tool: string): string[] | null {
    const spec = this.#spec(server, tool);
    return spec && !spec.freeForm ? spec.params.map((p) => p.jsonName) : null;
  }

  hasTool(server: string, tool: string): boolean {
    return this.#spec(server, tool) !== undefined;
  }

  /** How scripts name `server`'s tool `tool` (MCP names) in this catalog, if it has it. */
  pythonName(server: string, tool: string): { module: string; function: string } | undefined {
    const spec = this.#spec(server, tool);
    return spec && { module: this.#byServer.get(server)!.moduleName, function: spec.pyName };
  }

  /** The spec of `server`'s tool named `tool` (its MCP name), if the catalog has it. */
  #spec(server: string, tool: string): FunctionSpec | undefined {
    return this.#byServer.get(server)?.specs.find((s) => s.tool === tool);
  }

  server(name: string): ServerEntry | undefined {
    return this.#byServer.get(name) ?? this.servers.find((e) => e.moduleName === name);
  }

  /** What exists, within the index's token budget (see tool_index.ts). */
  index(budget?: number): ToolIndex {
    const servers = this.servers.map((e) => ({
      moduleName: e.moduleName,
      description: e.description,
      error: e.error,
      tools: e.specs.map((s) => ({ pyName: s.pyName, description: s.description })),
    }));
    return toolIndex(servers, this.#countTokens, budget);
  }

  /** Tokens of `text`, as the catalog counts them. */
  tokens(text: string): number {
    return this.#countTokens(text);
  }

  /**
   * Stubs of the tools (and `extra` entries, such as skills) that best match `query`, ranked
   * by tool_search.ts. The index is built at the first search and again only when the extra
   * entries change.
   */
  search(query: string, limit = 8, extra: readonly SearchEntry[] = []): SearchResult[] {
    const key = JSON.stringify(extra.map((e) => e.document));
    if (this.#search?.key !== key) {
      const specs = new Map<string, FunctionSpec>();
      const tools = this.servers.flatMap((entry) =>
        entry.specs.map((spec) => {
          const id = `${entry.moduleName}.${spec.pyName}`;
          specs.set(id, spec);
          return {
            id,
            name: `${spec.tool} ${spec.pyName}`,
            description: spec.description,
            params: spec.params.map((p) => `${p.jsonName} ${p.description}`).join(" "),
            server: entry.server,
            serverDescription: entry.description,
          };
        })
      );
      const index = new ToolSearch([...tools, ...extra.map((e) => e.document)]);
      this.#search = { key, index, specs };
    }
    const { index, specs } = this.#search;
    const extraStubs = new Map(extra.map((e) => [e.document.id, e.stub]));
    return index.search(query, limit).map((hit) => {
      const spec = specs.get(hit.id);
      return {
        name: hit.id,
        stub: spec ? renderStub(spec) : extraStubs.get(hit.id)!,
        score: hit.score,
      };
    });
  }

  /**
   * Full stubs for `module.function` names, or whole modules for bare server names. A name not
   * found carries the name it likely meant, if one is close; a module whose server is
   * unavailable, or a name in it, says why (`unavailable`). `extra`: as `search` is given it
   * (its index is the one a suggestion searches).
   */
  docs(
    names: readonly string[],
    extra: readonly SearchEntry[] = [],
  ): { name: string; stub: string | null; meant?: string; unavailable?: string }[] {
    return names.map((name) => {
      const [moduleName, fn] = name.split(".", 2) as [string, string | undefined];
      const entry = this.server(moduleName);
      const unavailable = entry?.error === undefined ? {} : { unavailable: entry.error };
      const spec = fn === undefined
        ? undefined
        : entry?.specs.find((s) => s.pyName === fn || s.pyName + "_async" === fn || s.tool === fn);
      if (entry && fn === undefined) return { name, stub: entry.stub, ...unavailable };
      if (spec) return { name, stub: renderStub(spec), ...unavailable };
      return { name, stub: null, meant: this.#meant(name, extra), ...unavailable };
    });
  }

  /** The servers whose tools cannot be called now (`docs` says why). */
  unavailableServers(): string[] {
    return this.servers.filter((e) => e.error !== undefined).map((e) => e.server);
  }

  /**
   * The module or `module.function` a name not found likely meant: the one function of that
   * name (`read_file`: `filesystem.read_file`), a name within two edits, else the best search
   * match for the name's words (`memory.create_entity`: `memory.create_entities`;
   * `fs.read_text_file`: `filesystem.read_text_file`).
   */
  #meant(name: string, extra: readonly SearchEntry[]): string | undefined {
    const functions = this.servers.flatMap((e) =>
      e.specs.map((s) => `${e.moduleName}.${s.pyName}`)
    );
    const bare = functions.filter((f) => f.endsWith(`.${name}`));
    if (bare.length === 1) return bare[0];
    const close = closestName(name, [...this.servers.map((e) => e.moduleName), ...functions]);
    if (close !== undefined) return close;
    const known = new Set(functions);
    return this.search(name.replace(/[._-]+/g, " "), 10, extra)
      .map((hit) => hit.name)
      .find((hit) => known.has(hit));
  }
}
