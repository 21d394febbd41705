/**
 * Skills: named, documented Python functions kept by the server, one JSON file per skill in the
 * skills folder. Writes are atomic (temporary file + rename); saving over a skill keeps the
 * previous version as `<name>.v<N>.json`; a corrupt file is reported and skipped.
 *
 * Several servers may share the folder (two clients each starting code mode use the default
 * one). A save or delete holds an exclusive lock on the folder's `.lock` file, reads the folder
 * again if another server changed it, and marks its own change in `.generation`; every read
 * first compares that mark with the one it last read, and reads the folder again when it moved.
 * So no server saves over a version it has not seen (the version it replaces is archived), and
 * each one serves what the folder holds.
 */
import { mib } from "../_util/bytes.ts";
import { join } from "node:path";
import type { Catalog } from "../catalog/catalog.ts";
import type { Logger } from "../_util/log.ts";
import { writeFileAtomically } from "../_util/atomic_write.ts";
import { FileLock } from "./file_lock.ts";
import { readPlainTextFileSync } from "../_util/plain_file.ts";

export interface Skill {
  name: string;
  description: string;
  code: string;
  /** `(path, limit=10)`, as written in the code. */
  signature: string;
  /**
   * `(path: str, limit: int = 10) -> str`: the signature with the types inferred from the code
   * and the tools it calls when it was saved (see skill_types.ts); absent in older files.
   */
  typed_signature?: string;
  is_async: boolean;
  /** Upstream tools the code calls, as `server.tool`, with their schema fingerprints. */
  tools: { server: string; tool: string; schema: string }[];
  version: number;
  saved_at: string;
}

export interface SkillStatus {
  stale: boolean;
  /** Why the skill is stale: tools gone or changed since it was saved. */
  reasons: string[];
}

/**
 * A skill's name: a Python name, not a dunder one (the package's own `__getattr__`, `__path__`)
 * nor one of its modules' (`_skill_<name>`, which the package has as an attribute once imported).
 */
export const SKILL_NAME = /^(?!__|_skill_)[a-z_][a-z0-9_]{0,63}$/;

/**
 * How much the skills may hold: every sandbox is sent every skill's code (as JSON, where a
 * control character takes six), so skills without bound made every sandbox larger and slower,
 * for every caller, across restarts. Saving over a skill archives the previous version; the
 * archives kept per skill are bounded too.
 */
export interface SkillLimits {
  skills: number;
  codeBytes: number;
  archivedVersions: number;
}

export const SKILL_LIMITS: SkillLimits = {
  skills: 200,
  codeBytes: 4 * 2 ** 20,
  archivedVersions: 10,
};

/** A save the limits refuse; the message says which and what to do. */
export class SkillLimitError extends Error {}

export class SkillStore {
  readonly dir: string;
  readonly #log: Logger;
  readonly #skills = new Map<string, Skill>();
  /** Files that could not be read, with why. */
  readonly problems: string[] = [];
  #version = 0;
  /** The folder's change mark when this store last read it (undefined: not loaded). */
  #generation: string | undefined;

  readonly #limits: SkillLimits;
  /** The save or delete running now: the next waits for it (see `save`). */
  #turn: Promise<unknown> = Promise.resolve();
  /** The writers' lock, shared with other servers using the folder. */
  readonly #lock: FileLock;

  constructor(
    dir: string,
    log: Logger,
    limits: SkillLimits = SKILL_LIMITS,
    lockWaitMs = LOCK_WAIT_MS,
  ) {
    this.dir = dir;
    this.#log = log;
    this.#limits = limits;
    this.#lock = new FileLock(join(dir, LOCK_FILE), lockWaitMs);
  }

  /** Changes whenever a skill is saved or deleted, here or by another server. */
  get version(): number {
    this.#sync();
    return this.#version;
  }

  /** Reads every `<name>.json` in the folder (creating the folder when missing). */
  async load(): Promise<void> {
    await Deno.mkdir(this.dir, { recursive: true });
    this.#readFolder();
  }

  list(): Skill[] {
    this.#sync();
    return [...this.#skills.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  get(name: string): Skill | undefined {
    this.#sync();
    return this.#skills.get(name);
  }

  /** Reads the folder again when another server changed it since this one last read it. */
  #sync(): void {
    if (this.#generation !== undefined && readGeneration(this.dir) !== this.#generation) {
      this.#readFolder();
    }
  }

  /**
   * Reads every skill file. The mark is read first: a change made while the files are read
   * moves it, and the next read of the store reads them again.
   */
  #readFolder(): void {
    this.#generation = readGeneration(this.dir);
    this.#skills.clear();
    this.problems.length = 0;
    // In name order, so which skills a folder past the limits keeps does not depend on the listing.
    const names = [...Deno.readDirSync(this.dir)].filter((e) => e.isFile).map((e) => e.name).sort();
    let bytes = 0;
    // All files read together: the code's limit, and a share of the rest for each skill kept.
    let unread = this.#limits.codeBytes + this.#limits.skills * MAX_SKILL_FIELDS_BYTES;
    const pastLimits = new SkillLimitError(
      `past the skills' limits (${this.#limits.skills} skills, ` +
        `${mib(this.#limits.codeBytes)} of code): not loaded`,
    );
    for (const name of names) {
      const match = /^([a-z_][a-z0-9_]*)\.json$/.exec(name);
      if (!match) continue;
      const file = join(this.dir, name);
      try {
        // Files put there by hand, or by another user who can write the folder, are held to the
        // limits a save is (every sandbox is sent them all), and past the count not even read.
        if (this.#skills.size >= this.#limits.skills) throw pastLimits;
        // Not waiting on what a neighbour may have swapped in since the listing (a FIFO).
        const text = readPlainTextFileSync(
          file,
          Math.min(unread, this.#limits.codeBytes + MAX_SKILL_FIELDS_BYTES),
        );
        unread -= new TextEncoder().encode(text).length;
        const skill = parseSkill(JSON.parse(text));
        if (skill.name !== match[1]) throw new TypeError(`it names "${skill.name}"`);
        const withThis = bytes + codeBytes(skill.code);
        if (withThis > this.#limits.codeBytes) throw pastLimits;
        bytes = withThis;
        this.#skills.set(skill.name, skill);
      } catch (error) {
        if ((error as { code?: string }).code === "ENOENT") continue; // deleted by another server
        const problem = `Cannot load skill file ${file}: ${(error as Error).message}`;
        this.problems.push(problem);
        this.#log.warn(problem);
      }
    }
    this.#version++;
  }

  /**
   * Saves a new version of a skill, keeping the previous one beside it (and at most
   * `archivedVersions` of them). Throws SkillLimitError past the limits. Saves and deletes run
   * one at a time, so that two saves cannot both pass the limits' check.
   */
  save(skill: Omit<Skill, "version" | "saved_at">): Promise<Skill> {
    return this.#inTurn(() => this.#save(skill));
  }

  /**
   * Runs a change after the one before it, holding the folder's lock (other servers sharing the
   * folder wait for it, up to `LOCK_WAIT_MS`: then LockTimeoutError), on the folder as it is now;
   * then marks the change for them.
   */
  #inTurn<T>(work: () => Promise<T>): Promise<T> {
    const locked = async () => {
      using _lock = await this.#lock.take();
      this.#sync();
      const before = this.#version;
      const result = await work();
      if (this.#version !== before) {
        this.#generation = crypto.randomUUID();
        await writeFileAtomically(join(this.dir, GENERATION_FILE), this.#generation);
      }
      return result; // closing the file releases the lock
    };
    const done = this.#turn.then(locked, locked);
    this.#turn = done.catch(() => {});
    return done;
  }

  async #save(skill: Omit<Skill, "version" | "saved_at">): Promise<Skill> {
    this.#checkRoomFor(skill);
    const previous = this.#skills.get(skill.name);
    const saved: Skill = {
      ...skill,
      version: (previous?.version ?? 0) + 1,
      saved_at: new Date().toISOString(),
    };
    if (previous) {
      await writeFileAtomically(
        join(this.dir, `${skill.name}.v${previous.version}.json`),
        toJson(previous),
      );
    }
    await writeFileAtomically(join(this.dir, `${skill.name}.json`), toJson(saved));
    this.#skills.set(skill.name, saved);
    this.#version++;
    if (previous) await this.#pruneArchives(skill.name, saved.version);
    return saved;
  }

  #checkRoomFor(skill: { name: string; code: string }): void {
    const others = [...this.#skills.values()].filter((s) => s.name !== skill.name);
    if (others.length >= this.#limits.skills) {
      throw new SkillLimitError(
        `the server keeps at most ${this.#limits.skills} skills, and has them; delete one ` +
          "with delete_skill first",
      );
    }
    const bytes = others.reduce((n, s) => n + codeBytes(s.code), codeBytes(skill.code));
    if (bytes > this.#limits.codeBytes) {
      throw new SkillLimitError(
        `the skills' code would come to ${mib(bytes)} as every sandbox receives it (JSON), ` +
          `over the limit of ${mib(this.#limits.codeBytes)}; delete skills with delete_skill, ` +
          "or shorten this one",
      );
    }
  }

  /**
   * Removes archived versions of `name` older than the newest `archivedVersions` below
   * `current` (all of them for Infinity); then the oldest archives of any skill while all of
   * them together take more than the skills' code may (`codeBytes`): archives are not sent to
   * sandboxes, but they are kept on disk across restarts.
   */
  async #pruneArchives(name: string, current: number): Promise<void> {
    const oldestKept = current - this.#limits.archivedVersions;
    const kept: { path: string; bytes: number; changed: number }[] = [];
    for await (const entry of Deno.readDir(this.dir)) {
      const match = /^([a-z_][a-z0-9_]*)\.v(\d+)\.json$/.exec(entry.name);
      if (!entry.isFile || !match) continue;
      const path = join(this.dir, entry.name);
      if (match[1] === name && Number(match[2]) < oldestKept) {
        await Deno.remove(path).catch(() => {});
        continue;
      }
      const info = await Deno.stat(path).catch(() => null);
      if (info) kept.push({ path, bytes: info.size, changed: info.mtime?.getTime() ?? 0 });
    }
    let total = kept.reduce((n, a) => n + a.bytes, 0);
    for (const archive of kept.sort((a, b) => a.changed - b.changed)) {
      if (total <= this.#limits.codeBytes) break;
      await Deno.remove(archive.path).catch(() => {});
      total -= archive.bytes;
    }
  }

  /**
   * Deletes a skill and its archived versions (kept, they would let a caller fill the disk by
   * saving and deleting names). Returns whether it existed.
   */
  delete(name: string): Promise<boolean> {
    return this.#inTurn(async () => {
      if (!this.#skills.has(name)) return false;
      await Deno.remove(join(this.dir, `${name}.json`));
      this.#skills.delete(name);
      this.#version++;
      await this.#pruneArchives(name, Infinity);
      return true;
    });
  }

  /** Whether the tools a skill calls still exist with the schemas it was saved against. */
  status(skill: Skill, catalog: Catalog): SkillStatus {
    const reasons: string[] = [];
    for (const used of skill.tools) {
      const spec = catalog.server(used.server)?.specs.find((s) => s.tool === used.tool);
      if (!spec) reasons.push(`${used.server}.${used.tool} no longer exists`);
      else if (spec.schemaHash !== used.schema) {
        reasons.push(`${used.server}.${used.tool} changed its schema`);
      }
    }
    return { stale: reasons.length > 0, reasons };
  }

  /**
   * The `skills` package for the sandbox: one lazily compiled module per skill, as saved. A
   * stale skill's warning is given by the package as the skill is imported: put before the
   * skill's own code, it broke a skill that starts with `from __future__ import ...`.
   */
  packages(catalog: Catalog): Record<string, Record<string, string>> {
    const modules: Record<string, string> = {};
    const warnings: Record<string, string> = {};
    for (const skill of this.list()) {
      const { stale, reasons } = this.status(skill, catalog);
      if (stale) warnings[skill.name] = `skill ${skill.name} may be stale: ${reasons.join("; ")}`;
      modules[`_skill_${skill.name}`] = skill.code;
    }
    return { skills: { __init__: skillsInit(warnings), ...modules } };
  }

  /** The stub of a skill as agents read it. */
  stub(skill: Skill): string {
    const doc = skill.description.replace(/\\/g, "\\\\").replace(/"""/g, '\\"\\"\\"');
    return `${skill.is_async ? "async def" : "def"} ${skill.name}${
      skill.typed_signature ?? skill.signature
    }:\n    """${doc}\n    (skill v${skill.version}: from skills import ${skill.name}; types inferred from its code and the tools it calls)\n    """\n    ...\n`;
  }
}

/** Files of the skills folder that are not skills: the writers' lock and the change mark. */
const LOCK_FILE = ".lock";
const GENERATION_FILE = ".generation";

/** How long a save or delete waits for another server's hold on the lock. */
const LOCK_WAIT_MS = 10_000;
/** What a skill file may hold besides its code (description, signature, tools). */
const MAX_SKILL_FIELDS_BYTES = 64 * 1024;

/**
 * The folder's change mark: what the last save or delete wrote ("" before any, or when it cannot
 * be read: serving the skills read last beats failing every execution).
 */
function readGeneration(dir: string): string {
  const path = join(dir, GENERATION_FILE);
  try {
    // Only a plain file, opened without waiting: a FIFO a neighbour put there (even between a
    // check and the read) would block the host's thread.
    return readPlainTextFileSync(path, 100);
  } catch {
    return "";
  }
}

/**
 * The `skills` package's `__init__`: `from skills import name` imports the skill's module (and
 * warns, once, when `stale` holds a warning for it). The warnings are JSON, which Python reads.
 */
function skillsInit(stale: Record<string, string>): string {
  // No name of its own but `__getattr__`, or it would stand for a skill of that name.
  return `def __getattr__(name, _stale=${JSON.stringify(stale)}):
    import importlib, warnings
    try:
        module = importlib.import_module(f"skills._skill_{name}")
    except ModuleNotFoundError:
        raise AttributeError(f"no skill named {name!r}") from None
    if name in _stale:
        warnings.warn(_stale.pop(name), stacklevel=2)
    return getattr(module, name)
`;
}

function parseSkill(raw: unknown): Skill {
  if (typeof raw !== "object" || raw === null) throw new TypeError("not a JSON object");
  const r = raw as Record<string, unknown>;
  for (const key of ["name", "description", "code", "signature", "saved_at"]) {
    if (typeof r[key] !== "string") throw new TypeError(`field "${key}" must be a string`);
  }
  if (!SKILL_NAME.test(r.name as string)) {
    throw new TypeError(`"${r.name}" is not a valid skill name`);
  }
  if (typeof r.version !== "number") throw new TypeError(`field "version" must be a number`);
  if (!Array.isArray(r.tools)) throw new TypeError(`field "tools" must be an array`);
  return {
    name: r.name as string,
    description: r.description as string,
    code: r.code as string,
    signature: r.signature as string,
    ...(typeof r.typed_signature === "string" && r.typed_signature.length <= 2000 &&
        !/[\r\n]/.test(r.typed_signature)
      ? { typed_signature: r.typed_signature }
      : {}),
    is_async: r.is_async === true,
    tools: (r.tools as { server: string; tool: string; schema: string }[]).map((t) => ({
      server: String(t.server),
      tool: String(t.tool),
      schema: String(t.schema),
    })),
    version: r.version,
    saved_at: r.saved_at as string,
  };
}

function codeBytes(code: string): number {
  return new TextEncoder().encode(JSON.stringify(code)).length;
}

function toJson(skill: Skill): string {
  return JSON.stringify(skill, null, 2) + "\n";
}
