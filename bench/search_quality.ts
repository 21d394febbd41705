/**
 * Search quality over the captured catalog of real tools (tests/fixtures/tool_catalog/): recall@1,
 * recall@5 and MRR of `search_tools`' ranking for labelled task queries, against plain BM25 over
 * names and descriptions (MiniSearch's defaults, no stemming or synonyms) on the same queries;
 * and the index's token cost at 10, 100 and 500 tools. A held-out query set outside the project
 * runs too when CODEMODE_SEARCH_HELDOUT names it.
 */
import MiniSearch from "minisearch";
import { Catalog, type ServerTools } from "../src/catalog/catalog.ts";
import { INDEX_TOKEN_BUDGET } from "../src/catalog/tool_index.ts";

export interface CatalogFixture {
  package: string;
  version: string;
  server: string;
  description: string;
  tools: ServerTools["tools"];
}

export interface LabelledQuery {
  query: string;
  /** Every correct tool, as `server.tool_name`. */
  expected: string[];
}

export interface Quality {
  queries: number;
  recallAt1: number;
  recallAt5: number;
  mrr: number;
  misses: { query: string; expected: string[]; got: string[] }[];
}

const FIXTURES = new URL("../tests/fixtures/tool_catalog/", import.meta.url);

/** The captured servers (every `*.json` but queries.json), in name order. */
export function loadCatalogFixtures(): CatalogFixture[] {
  return [...Deno.readDirSync(FIXTURES)]
    .filter((e) => e.name.endsWith(".json") && e.name !== "queries.json")
    .map((e) => e.name)
    .sort()
    .map((name) => JSON.parse(Deno.readTextFileSync(new URL(name, FIXTURES))) as CatalogFixture);
}

export function loadQueries(path?: string): LabelledQuery[] {
  const url = path ? path : new URL("queries.json", FIXTURES);
  return JSON.parse(Deno.readTextFileSync(url)) as LabelledQuery[];
}

export function catalogOf(
  fixtures: readonly CatalogFixture[],
  countTokens?: (t: string) => number,
) {
  return new Catalog(
    fixtures.map((f) => ({
      server: f.server,
      description: f.description,
      tools: f.tools.map((t) => ({ ...t, server: f.server })),
    })),
    { countTokens },
  );
}

/** A ranking: the query's results as `server.tool_name`, best first. */
export type Ranker = (query: string) => string[];

/** Our ranking (Catalog.search), mapped back from Python names to MCP tool names. */
export function ourRanker(catalog: Catalog): Ranker {
  const names = new Map<string, string>();
  for (const entry of catalog.servers) {
    for (const spec of entry.specs) {
      names.set(`${entry.moduleName}.${spec.pyName}`, `${entry.server}.${spec.tool}`);
    }
  }
  return (query) => catalog.search(query, 10).map((hit) => names.get(hit.name) ?? hit.name);
}

/** Plain BM25 over names and descriptions: MiniSearch with its default tokenizer. */
export function plainBm25Ranker(fixtures: readonly CatalogFixture[]): Ranker {
  const index = new MiniSearch<{ id: string; name: string; description: string }>({
    fields: ["name", "description"],
  });
  index.addAll(fixtures.flatMap((f) =>
    f.tools.map((t) => ({
      id: `${f.server}.${t.name}`,
      name: t.name,
      description: t.description ?? "",
    }))
  ));
  return (query) => index.search(query).slice(0, 10).map((r) => String(r.id));
}

export function measure(rank: Ranker, queries: readonly LabelledQuery[]): Quality {
  let at1 = 0;
  let at5 = 0;
  let reciprocal = 0;
  const misses: Quality["misses"] = [];
  for (const q of queries) {
    const got = rank(q.query);
    const first = got.findIndex((name) => q.expected.includes(name));
    if (first === 0) at1++;
    if (first !== -1 && first < 5) at5++;
    if (first !== -1) reciprocal += 1 / (first + 1);
    if (first === -1 || first >= 5) {
      misses.push({ query: q.query, expected: q.expected, got: got.slice(0, 5) });
    }
  }
  const n = Math.max(1, queries.length);
  return {
    queries: queries.length,
    recallAt1: at1 / n,
    recallAt5: at5 / n,
    mrr: reciprocal / n,
    misses,
  };
}

/**
 * The index's tokens for the first `n` tools of the catalog (servers in order; past its end the
 * servers come again under other names, `github_2`, so 500 tools are real tools' text).
 */
export function indexTokensAt(
  fixtures: readonly CatalogFixture[],
  n: number,
  countTokens: (t: string) => number,
): { tools: number; tokens: number; level: string } {
  const picked: CatalogFixture[] = [];
  let left = n;
  for (let round = 1; left > 0 && round <= 10; round++) {
    for (const f of fixtures) {
      if (left <= 0) break;
      const server = round === 1 ? f.server : `${f.server}_${round}`;
      picked.push({ ...f, server, tools: f.tools.slice(0, left) });
      left -= Math.min(left, f.tools.length);
    }
  }
  const index = catalogOf(picked, countTokens).index();
  return { tools: n - left, tokens: index.tokens, level: index.level };
}

export { INDEX_TOKEN_BUDGET };
