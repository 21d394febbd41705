/**
 * Ranking for `search_tools`: BM25 (MiniSearch's BM25+) over each tool's name split into words
 * (camelCase, snake_case, kebab-case), its description, its parameters' names and descriptions,
 * and its server's name and description, with the name weighing most. Words are compared
 * whole after stemming (Porter), without stop words, and with common software synonyms folded
 * together ("remove" finds `delete_file`, "shelve" finds `git_stash`); a longer word may also
 * match as a prefix or with a typo. Pure: built from documents, no I/O.
 */
import MiniSearch from "minisearch";
import { stemmer } from "stemmer";

export interface SearchDocument {
  /** What a hit returns (`module.function`). */
  id: string;
  name: string;
  description: string;
  params: string;
  server: string;
}

export interface SearchHit {
  id: string;
  score: number;
}

/** How much a match in each field counts. */
const BOOST = { name: 3, description: 1.2, params: 0.6, server: 0.8 };

export class ToolSearch {
  readonly #index: MiniSearch<SearchDocument>;

  constructor(documents: readonly SearchDocument[]) {
    this.#index = new MiniSearch<SearchDocument>({
      fields: ["name", "description", "params", "server"],
      tokenize: splitWords,
      processTerm: normalizeTerm,
      searchOptions: {
        boost: BOOST,
        prefix: (term) => term.length >= 5,
        fuzzy: (term) => (term.length >= 7 ? 1 : false),
        // Looser matches count less than exact ones.
        weights: { prefix: 0.3, fuzzy: 0.2 },
      },
    });
    this.#index.addAll(dedupe(documents));
  }

  /** The best `limit` documents for `query`, best first; none for a query of only stop words. */
  search(query: string, limit: number): SearchHit[] {
    return this.#index.search(query).slice(0, limit).map((r) => ({
      id: String(r.id),
      score: Math.round(r.score * 1000) / 1000,
    }));
  }
}

/** Words of a text: camelCase, snake_case, kebab-case and dotted names split. */
export function splitWords(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
}

/** A word as it is indexed and searched: lowercase, stemmed, folded to its synonym group. */
export function normalizeTerm(word: string): string | null {
  const lower = word.toLowerCase();
  if (lower.length < 2 && !/^[0-9]$/.test(lower)) return null;
  if (STOP_WORDS.has(lower)) return null;
  const stem = stemmer(lower);
  return SYNONYMS.get(stem) ?? stem;
}

function dedupe(documents: readonly SearchDocument[]): SearchDocument[] {
  const seen = new Set<string>();
  return documents.filter((d) => !seen.has(d.id) && seen.add(d.id));
}

const STOP_WORDS = new Set(
  (
    "a an and are as at be been but by can could do does did for from has have having he her " +
    "here him his how i if in into is it its itself me my myself of on once only or other our " +
    "out over own please same she should so some such than that the their them then there " +
    "these they this those through to too under until up very was we were what when where " +
    "which while who whom why will with would you your yours want need like just also using use " +
    "via any each every e g eg ie etc let lets me"
  ).split(" "),
);

/**
 * Groups of words that mean the same in tool descriptions; each word is read as the group's
 * first. General software vocabulary, not tuned to any catalog.
 */
const SYNONYM_GROUPS: string[][] = [
  ["delete", "remove", "erase", "drop", "destroy", "purge", "trash", "discard", "unlink", "rm"],
  ["create", "make", "new", "add", "insert", "generate", "spawn"],
  [
    "get",
    "fetch",
    "retrieve",
    "obtain",
    "read",
    "load",
    "view",
    "show",
    "display",
    "see",
    "inspect",
    "detail",
  ],
  ["list", "enumerate", "all", "browse"],
  ["search", "find", "lookup", "query", "locate", "look", "seek", "grep", "discover", "match"],
  ["update", "edit", "modify", "change", "alter", "patch", "amend", "adjust", "tweak"],
  ["send", "post", "notify", "publish", "dm", "reply"],
  ["run", "execute", "exec", "invoke", "launch", "trigger", "perform"],
  ["stop", "kill", "terminate", "cancel", "halt", "abort", "interrupt", "end"],
  ["write", "save", "store", "persist", "record"],
  ["file", "document", "doc"],
  ["folder", "directory", "dir"],
  ["repo", "repository", "project"],
  ["issue", "ticket", "bug", "incident"],
  ["pr", "pull", "mr"],
  ["stash", "shelve"],
  ["commit", "changeset", "revision"],
  ["screenshot", "capture", "snapshot", "screengrab"],
  ["navigate", "goto", "visit", "go", "open"],
  ["click", "press", "tap"],
  ["page", "tab", "webpage", "website", "site"],
  ["url", "link", "address", "href"],
  ["user", "person", "member", "account", "people", "profile"],
  ["email", "mail", "inbox"],
  ["event", "meeting", "appointment"],
  ["message", "chat", "msg"],
  ["channel", "room", "conversation"],
  ["note", "memo"],
  ["payment", "charge", "pay", "transaction"],
  ["customer", "client", "buyer"],
  ["invoice", "bill", "billing"],
  ["refund", "reimburse", "chargeback"],
  ["database", "db", "sql", "postgres", "schema"],
  ["table", "collection"],
  ["row", "record", "entry"],
  ["text", "string", "content", "contents", "body"],
  ["log", "logs", "trace"],
  ["error", "exception", "failure", "crash"],
  ["container", "pod"],
  ["deploy", "deployment", "release", "rollout", "ship"],
  ["comment", "remark", "annotation"],
  ["label", "tag"],
  ["upload", "attach"],
  ["download", "export"],
  ["move", "rename", "relocate"],
  ["copy", "duplicate", "clone"],
  ["size", "length", "bytes"],
  ["image", "picture", "photo", "png", "jpeg"],
  ["weather", "forecast"],
  ["map", "location", "place", "geocode", "address"],
  ["direction", "route", "navigation"],
  ["knowledge", "graph", "memory", "remember", "memorize", "recall"],
  ["entity", "node"],
  ["relation", "edge", "relationship"],
  ["think", "reason", "thought", "reflect"],
  ["scrape", "crawl", "extract"],
  ["web", "internet", "online"],
  ["count", "number", "total", "sum", "tally"],
  ["time", "date", "clock", "timestamp"],
  ["secret", "credential", "key", "token"],
  ["permission", "access", "role", "grant"],
  ["subscribe", "watch", "follow"],
  ["schedule", "cron", "plan"],
  ["organization", "org", "team", "workspace", "company"],
];

/** Stemmed word -> the stem of its group's first word. */
const SYNONYMS: Map<string, string> = (() => {
  const map = new Map<string, string>();
  for (const group of SYNONYM_GROUPS) {
    const head = stemmer(group[0]!);
    for (const word of group) {
      const stem = stemmer(word);
      if (!map.has(stem)) map.set(stem, head);
    }
  }
  return map;
})();
