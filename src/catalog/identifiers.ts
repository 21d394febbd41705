/**
 * MCP names -> valid, collision-free Python identifiers. Tool names may hold `-`, `.`, `/` and
 * start with digits; schema properties may be Python keywords. The mapping is deterministic
 * (same names in, same identifiers out) so stubs stay stable between starts.
 */

const PYTHON_KEYWORDS = new Set([
  "False",
  "None",
  "True",
  "and",
  "as",
  "assert",
  "async",
  "await",
  "break",
  "class",
  "continue",
  "def",
  "del",
  "elif",
  "else",
  "except",
  "finally",
  "for",
  "from",
  "global",
  "if",
  "import",
  "in",
  "is",
  "lambda",
  "nonlocal",
  "not",
  "or",
  "pass",
  "raise",
  "return",
  "try",
  "while",
  "with",
  "yield",
  "match",
  "case",
  "type",
  "_",
]);

export function isPythonKeyword(name: string): boolean {
  return PYTHON_KEYWORDS.has(name);
}

/** Soft keywords (`match`, `case`, `type`, `_`) are valid names where a field is declared. */
const SOFT_KEYWORDS = new Set(["match", "case", "type", "_"]);

/** A keyword that can never name a field or variable. */
export function isHardKeyword(name: string): boolean {
  return PYTHON_KEYWORDS.has(name) && !SOFT_KEYWORDS.has(name);
}

/** One name as a Python identifier (not yet made unique). */
export function toIdentifier(name: string): string {
  let id = name.replace(/[^A-Za-z0-9_]/g, "_").replace(/_+/g, "_");
  if (id === "" || id === "_") id = "tool";
  if (/^[0-9]/.test(id)) id = "_" + id;
  if (PYTHON_KEYWORDS.has(id)) id += "_";
  return id;
}

/**
 * Assigns each name a unique identifier. `reserved` identifiers are never handed out, and when
 * `withAsync` is set, `<id>_async` must be free too (every tool gets both forms).
 */
export function assignIdentifiers(
  names: readonly string[],
  options: { reserved?: Iterable<string>; withAsync?: boolean } = {},
): Map<string, string> {
  const taken = new Set(options.reserved ?? []);
  const result = new Map<string, string>();
  const free = (id: string) => !taken.has(id) && !(options.withAsync && taken.has(`${id}_async`));
  // Names that are already valid identifiers claim first, so `foo_bar` keeps its name over `foo-bar`.
  const ordered = [...new Set(names)].sort((a, b) => {
    const aExact = toIdentifier(a) === a ? 0 : 1;
    const bExact = toIdentifier(b) === b ? 0 : 1;
    return aExact - bExact || (a < b ? -1 : a > b ? 1 : 0);
  });
  // Where each base's search for a free suffix goes on: names that all map to one base (an
  // attacker's corpus: 8,000 of them) would otherwise try every suffix again, quadratically.
  const nextSuffix = new Map<string, number>();
  for (const name of ordered) {
    const base = toIdentifier(name);
    let id = base;
    let n = nextSuffix.get(base) ?? 2;
    while (!free(id)) id = `${base}_${n++}`;
    nextSuffix.set(base, n);
    taken.add(id);
    if (options.withAsync) taken.add(`${id}_async`);
    result.set(name, id);
  }
  return result;
}
