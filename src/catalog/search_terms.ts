/**
 * The vocabulary of tool search: how a text splits into words, which words are too common to
 * count (stop words), how a word is reduced to its stem (Porter), and which stems mean the same
 * (synonym groups). Pure tables and functions.
 */
import { stemmer } from "stemmer";

/**
 * Words of a text: camelCase, snake_case, kebab-case and dotted names split. Linear: the texts
 * are upstream descriptions of up to megabytes, and `([A-Z]+)([A-Z][a-z])` backtracked over a
 * run of capitals (60,000 held the host 5.8 s as the search index was built).
 */
export function splitWords(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/(?<=[A-Z])(?=[A-Z][a-z])/g, " ")
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
}

/** A word as it is indexed and searched: lowercase and stemmed; null for a stop word. */
export function normalizeTerm(word: string): string | null {
  const lower = word.toLowerCase();
  if (lower.length < 2 && !/^[0-9]$/.test(lower)) return null;
  if (STOP_WORDS.has(lower)) return null;
  return stemmer(lower);
}

/** The other stems of a stem's synonym group (none for a word in no group). */
export function synonymsOf(stem: string): readonly string[] {
  return SYNONYMS.get(stem) ?? [];
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
 * Groups of words that mean the same in tool descriptions. General software vocabulary, not
 * tuned to any catalog.
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

/** Stemmed word -> the other stems of every group it is in. */
const SYNONYMS: Map<string, string[]> = (() => {
  const map = new Map<string, string[]>();
  for (const group of SYNONYM_GROUPS) {
    const stems = [...new Set(group.map((word) => stemmer(word)))];
    for (const stem of stems) {
      const others = map.get(stem) ?? [];
      for (const other of stems) if (other !== stem && !others.includes(other)) others.push(other);
      map.set(stem, others);
    }
  }
  return map;
})();
