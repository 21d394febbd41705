/**
 * The two edits `import` and `install` make, as pure functions from a parsed file to a new one:
 * imported servers merged into our `mcp_servers.json`, and our server added to a client's list.
 * Every other field of either file is kept as it was, in its place.
 */
import { isRecord, valueAt } from "./client_configs.ts";
import type { ServerEntry } from "./translate.ts";
import { toIdentifier } from "../catalog/identifiers.ts";

/** A server to import, with where it came from (for the report). */
export interface Candidate {
  name: string;
  entry: ServerEntry;
  from: string;
  /** From a file of the current folder: never replaces an entry already there. */
  fromProject?: boolean;
}

/**
 * What became of each candidate: `added`; `replaced` (--replace); `present` (the same entry is
 * already there); `kept` (a different entry of that name is there and was left alone);
 * `duplicate` (an earlier candidate had the name; `same` says whether its entry was the same);
 * `collides` (another server, `other`, has the same Python name: in the sandbox one would
 * shadow the other's module).
 */
export type CandidateStatus =
  | { status: "added" | "replaced" | "present" | "kept" }
  | { status: "duplicate"; same: boolean; first: string }
  | { status: "collides"; other: string; identifier: string };

export interface MergePlan {
  /** The new file (equal to the old one when nothing changed). */
  file: Record<string, unknown>;
  /** The key new servers go under. */
  key: "servers" | "mcpServers";
  statuses: CandidateStatus[];
  changed: boolean;
}

const LISTS = ["servers", "mcpServers"] as const;

/**
 * Merges `candidates` into our config `existing` (null: no file yet). Our config accepts both
 * "servers" and "mcpServers" (a name in both is refused at load), so names are checked against
 * both. Entries already there are kept unless `replace` (and never replaced by a project
 * file's); of two candidates with one name, the first wins; a name whose Python identifier is
 * another server's is refused.
 */
export function mergeServers(
  existing: unknown,
  candidates: Candidate[],
  options: { replace: boolean },
): MergePlan {
  const file = existing === null ? { servers: {} } : existing;
  if (!isRecord(file)) throw new TypeError("Cannot merge servers: the file is not a JSON object");
  // A file in the clients' shape (accepted by our config too) keeps its key.
  const key = "servers" in file || !("mcpServers" in file) ? "servers" : "mcpServers";
  const lists = {} as Record<(typeof LISTS)[number], Record<string, unknown>>;
  for (const list of LISTS) {
    const value = file[list] ?? {};
    if (!isRecord(value)) {
      throw new TypeError(`Cannot merge servers: "${list}" in the file is not an object`);
    }
    lists[list] = { ...value };
  }
  const holder = (name: string) => LISTS.find((list) => Object.hasOwn(lists[list], name));
  // Python identifier -> the server name holding it.
  const identifiers = new Map<string, string>();
  for (const list of LISTS) {
    for (const name of Object.keys(lists[list])) identifiers.set(toIdentifier(name), name);
  }
  const firstFrom = new Map<string, Candidate>();
  const touched = new Set<(typeof LISTS)[number]>();
  const statuses = candidates.map((c): CandidateStatus => {
    const first = firstFrom.get(c.name);
    if (first) {
      return { status: "duplicate", same: sameJson(first.entry, c.entry), first: first.from };
    }
    const list = holder(c.name);
    if (list === undefined) {
      const identifier = toIdentifier(c.name);
      const other = identifiers.get(identifier);
      if (other !== undefined) return { status: "collides", other, identifier };
      firstFrom.set(c.name, c);
      identifiers.set(identifier, c.name);
      lists[key][c.name] = c.entry;
      touched.add(key);
      return { status: "added" };
    }
    firstFrom.set(c.name, c);
    if (sameJson(lists[list][c.name], c.entry)) return { status: "present" };
    if (!options.replace || c.fromProject) return { status: "kept" };
    lists[list][c.name] = c.entry;
    touched.add(list);
    return { status: "replaced" };
  });
  const changed = touched.size > 0;
  const out: Record<string, unknown> = { ...file };
  for (const list of touched) out[list] = lists[list];
  return { file: changed ? out : file, key, statuses, changed };
}

export interface InstallPlan {
  file: Record<string, unknown>;
  /** The server list before and after (names in file order). */
  before: Record<string, unknown>;
  after: Record<string, unknown>;
  change: "added" | "updated" | "none";
  /** The fields of the entry `name` held before an update (names only: values may be secrets). */
  previousFields?: string[];
  /** Of those, the ones kept as they were (the user's env, cwd, ...). */
  keptFields?: string[];
}

/**
 * Puts `entry` as `name` into the server map at `keyPath` of a client's file (null: no file),
 * creating the map (and the objects on the way) when missing. An entry already there keeps its
 * other fields (the user's env, cwd, ...): only the fields of `entry` change. Idempotent.
 */
export function installServer(
  existing: unknown,
  keyPath: string[],
  name: string,
  entry: Record<string, unknown>,
): InstallPlan {
  const file = existing === null ? {} : existing;
  if (!isRecord(file)) throw new TypeError("Cannot install: the file is not a JSON object");
  const current = valueAt(file, keyPath);
  if (current !== undefined && !isRecord(current)) {
    throw new TypeError(`Cannot install: ${keyPath.join(".")} in the file is not an object`);
  }
  const before = current ?? {};
  const previous = isRecord(before[name]) ? before[name] as Record<string, unknown> : null;
  // An entry's own environment (an API key, a proxy) is kept beside the variables ours sets.
  const env = isRecord(previous?.env) && isRecord(entry.env)
    ? { env: { ...previous.env, ...entry.env } }
    : {};
  const updated = previous ? { ...previous, ...entry, ...env } : entry;
  if (sameJson(before[name], updated)) {
    return { file, before, after: before, change: "none" };
  }
  const after = { ...before, [name]: updated };
  return {
    file: setAt(file, keyPath, after),
    before,
    after,
    change: name in before ? "updated" : "added",
    ...(name in before
      ? {
        previousFields: Object.keys(previous ?? {}),
        keptFields: Object.keys(previous ?? {}).filter((k) => !(k in entry)),
      }
      : {}),
  };
}

/** A copy of `obj` with `value` at `keyPath` (existing keys keep their place). */
function setAt(
  obj: Record<string, unknown>,
  keyPath: string[],
  value: unknown,
): Record<string, unknown> {
  const [key, ...rest] = keyPath;
  if (key === undefined) throw new RangeError("Cannot set a value at an empty key path");
  if (rest.length === 0) return { ...obj, [key]: value };
  const inner = isRecord(obj[key]) ? obj[key] as Record<string, unknown> : {};
  return { ...obj, [key]: setAt(inner, rest, value) };
}

/** Whether two JSON values are equal (key order aside). */
export function sameJson(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (isRecord(value)) {
    return `{${
      Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")
    }}`;
  }
  return JSON.stringify(value) ?? "undefined";
}
