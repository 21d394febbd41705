/**
 * The two edits `import` and `install` make, as pure functions from a parsed file to a new one:
 * imported servers merged into our `mcp_servers.json`, and our server added to a client's list.
 * Every other field of either file is kept as it was, in its place.
 */
import { isRecord, valueAt } from "./client_configs.ts";
import type { ServerEntry } from "./translate.ts";

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
 * `duplicate` (an earlier candidate had the name; `same` says whether its entry was the same).
 */
export type CandidateStatus =
  | { status: "added" | "replaced" | "present" | "kept" }
  | { status: "duplicate"; same: boolean; first: string };

export interface MergePlan {
  /** The new file (equal to the old one when nothing changed). */
  file: Record<string, unknown>;
  /** The key the file keeps its servers under. */
  key: "servers" | "mcpServers";
  statuses: CandidateStatus[];
  changed: boolean;
}

/**
 * Merges `candidates` into our config `existing` (null: no file yet). Entries already there are
 * kept unless `replace` (and never replaced by a project file's); of two candidates with one
 * name, the first wins.
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
  const before = file[key] ?? {};
  if (!isRecord(before)) {
    throw new TypeError(`Cannot merge servers: "${key}" in the file is not an object`);
  }
  const servers: Record<string, unknown> = { ...before };
  const firstFrom = new Map<string, Candidate>();
  let changed = false;
  const statuses = candidates.map((c): CandidateStatus => {
    const first = firstFrom.get(c.name);
    if (first) {
      return { status: "duplicate", same: sameJson(first.entry, c.entry), first: first.from };
    }
    firstFrom.set(c.name, c);
    if (!(c.name in servers)) {
      servers[c.name] = c.entry;
      changed = true;
      return { status: "added" };
    }
    if (sameJson(servers[c.name], c.entry)) return { status: "present" };
    if (!options.replace || c.fromProject) return { status: "kept" };
    servers[c.name] = c.entry;
    changed = true;
    return { status: "replaced" };
  });
  return { file: changed ? { ...file, [key]: servers } : file, key, statuses, changed };
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
  const updated = previous ? { ...previous, ...entry } : entry;
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
