/**
 * Observed result types: for each upstream tool, the merged shape of the results scripts got
 * (keys and value types, never values; see result_shapes.ts) and how many results it is based
 * on. The tool gate records every successful result, after secrets are scrubbed; the catalog
 * shows the shape as the return type of tools that declare no outputSchema. Kept in one JSON
 * file in the cache folder, so stubs stay typed across restarts. Shapes are kept by the server's
 * identity (its name and how it is started), not its name alone: another server under the same
 * name, or another version of it, starts afresh.
 */
import { writeFileAtomically } from "../_util/atomic_write.ts";
import type { Logger } from "../_util/log.ts";
import { mergeShapes, scriptValue, shapeOf } from "./result_shapes.ts";
import type { ObservedShape } from "./python_stubs.ts";
import { TokenBucket } from "../_util/token_bucket.ts";

/**
 * Tools remembered at most, and their shapes' JSON at most, all servers together: past either,
 * the tools recorded least recently are forgotten, of any server, the one recording too. So an
 * upstream that keeps renaming its tools, or returns large shapes from many, cannot grow the file
 * (rewritten as an execution that called a tool ends) nor the host's memory: 2,000 tools of 30 KB
 * shapes were a 61 MB file, and a one-call script took twice as long.
 */
export const MAX_TOOLS = 2000;
export const MAX_KEPT_CHARS = 2 * 1024 * 1024;
/** A tool's recorded shape larger than this, as JSON, is left open (see MAX_SHAPE_NODES). */
export const MAX_SHAPE_CHARS = 32_768;
const FILE_VERSION = 1;
/**
 * New call counts are shown at most this often. Showing them rebuilds the catalog (about 25 ms
 * of the host's thread for 476 tools, and 90 ms for an attacker's largest bounded catalog), and
 * every execution that calls a tool changes a count.
 */
export const COUNTS_SHOWN_EVERY_MS = 60_000;
/**
 * New shapes are shown at once, 20 in a row, then one every 3 s (those waiting together): shapes
 * only widen, but an upstream can widen them call after call (a key more each time, or 1,700
 * tools called once each cost 45 ms of the host's thread a call).
 */
export const SHAPES_SHOWN = { burst: 20, perSecond: 1 / 3 };
/** The file's name in the cache folder. */
export const OBSERVED_RESULTS_FILE = "observed_results.json";

export class ObservedResults {
  readonly #path: string | null;
  readonly #log: Logger;
  readonly #identify: (server: string) => string;
  /** By server, then tool; each in the order recorded, the most recent last. */
  readonly #shapes = new Map<string, Map<string, ObservedShape>>();
  /** Tools kept, and the length of their shapes' JSON. */
  #size = 0;
  #chars = 0;
  readonly #charsOf = new WeakMap<ObservedShape, number>();
  #version = 0;
  /** Counts changed since the last `settle()`. */
  #countsChanged = false;
  /** Counts settled but not shown yet, and when they last were. */
  #countsWaiting = false;
  #countsShownAt = -Infinity;
  /** A shape changed since the catalog last saw one, and how often they may be shown. */
  #shapesWaiting = false;
  readonly #shapeShows: TokenBucket;
  readonly #now: () => number;
  /** Anything changed since the last save. */
  #unsaved = false;

  /**
   * `path`: the file the shapes are kept in (null: kept in memory only). `identify` gives the
   * key a server's shapes are kept under (by default its name).
   */
  constructor(
    path: string | null,
    log: Logger,
    identify: (server: string) => string = (s) => s,
    now: () => number = () => performance.now(),
  ) {
    this.#path = path;
    this.#log = log;
    this.#identify = identify;
    this.#now = now;
    this.#shapeShows = new TokenBucket(SHAPES_SHOWN.burst, SHAPES_SHOWN.perSecond, now);
  }

  /** Reads the kept shapes (a missing or unreadable file starts empty, with a warning). */
  async load(): Promise<void> {
    if (this.#path === null) return;
    let text: string;
    try {
      text = await Deno.readTextFile(this.#path);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) {
        this.#log.warn("Cannot read observed result types; starting afresh", {
          path: this.#path,
          error: (error as Error).message,
        });
      }
      return;
    }
    this.#load(text, this.#path);
    this.#version++;
  }

  /**
   * Changes when a recorded shape does (see `SHAPES_SHOWN`), and for counts after `settle()`, at
   * most every `COUNTS_SHOWN_EVERY_MS`. Whatever is shown shows all that waits.
   */
  get version(): number {
    const shapes = this.#shapesWaiting && this.#shapeShows.take();
    const counts = this.#countsWaiting &&
      this.#now() - this.#countsShownAt >= COUNTS_SHOWN_EVERY_MS;
    if (shapes || counts) {
      if (this.#countsWaiting) this.#countsShownAt = this.#now();
      this.#shapesWaiting = false;
      this.#countsWaiting = false;
      this.#version++;
    }
    return this.#version;
  }

  get(server: string, tool: string): ObservedShape | undefined {
    return this.#shapes.get(this.#identify(server))?.get(tool);
  }

  /**
   * Records one successful result of `server`'s `tool`. Never throws. Past MAX_TOOLS or
   * MAX_KEPT_CHARS, the tools recorded least recently are forgotten first.
   */
  record(serverName: string, tool: string, result: Record<string, unknown>): void {
    const got = scriptValue(result);
    if (got === undefined) return;
    const server = this.#identify(serverName);
    const shape = shapeOf(got.value);
    const tools = this.#shapes.get(server) ?? new Map<string, ObservedShape>();
    const known = tools.get(tool);
    const merged = known ? mergeShapes(known.schema, shape) : shape;
    // Merging adds up shapes of different branches: past a size, the shape is left open (Any).
    const mergedText = JSON.stringify(merged);
    const open = mergedText.length > MAX_SHAPE_CHARS;
    const schema = open ? {} : merged;
    const changed = known === undefined ||
      (open ? "{}" : mergedText) !== JSON.stringify(known.schema);
    // Most recent last: a Map keeps insertion order.
    if (known) this.#forget(tools, tool, known);
    this.#keep(
      tools,
      tool,
      { schema, calls: (known?.calls ?? 0) + 1 },
      open ? 2 : mergedText.length,
    );
    this.#shapes.delete(server);
    this.#shapes.set(server, tools);
    this.#forgetOldest();
    this.#unsaved = true;
    // A new shape shows at once; a new count with the next settle (once per execution).
    if (changed) this.#shapesWaiting = true;
    else this.#countsChanged = true;
  }

  #keep(tools: Map<string, ObservedShape>, tool: string, shape: ObservedShape, chars: number) {
    tools.set(tool, shape);
    this.#charsOf.set(shape, chars);
    this.#size++;
    this.#chars += chars;
  }

  #forget(tools: Map<string, ObservedShape>, tool: string, shape: ObservedShape) {
    tools.delete(tool);
    this.#size--;
    this.#chars -= this.#charsOf.get(shape) ?? 0;
  }

  /** Forgets the tools recorded least recently while there are too many (never the last one). */
  #forgetOldest(): void {
    for (const [server, tools] of this.#shapes) {
      for (const [tool, shape] of tools) {
        if ((this.#size <= MAX_TOOLS && this.#chars <= MAX_KEPT_CHARS) || this.#size === 1) return;
        this.#forget(tools, tool, shape);
      }
      if (tools.size === 0) this.#shapes.delete(server);
    }
  }

  /** Publishes new counts and saves what changed (called when an execution ends). */
  async settle(): Promise<void> {
    if (this.#countsChanged) {
      this.#countsChanged = false;
      this.#countsWaiting = true;
    }
    if (!this.#unsaved || this.#path === null) return;
    this.#unsaved = false;
    const tools: Record<string, Record<string, ObservedShape>> = {};
    for (const [server, shapes] of this.#shapes) tools[server] = Object.fromEntries(shapes);
    try {
      await writeFileAtomically(this.#path, JSON.stringify({ version: FILE_VERSION, tools }));
    } catch (error) {
      this.#log.warn("Cannot save observed result types", {
        path: this.#path,
        error: (error as Error).message,
      });
    }
  }

  #load(text: string, path: string): void {
    try {
      const data = JSON.parse(text) as { version?: unknown; tools?: unknown };
      if (data.version !== FILE_VERSION || !isRecord(data.tools)) throw new Error("unknown format");
      for (const [server, tools] of Object.entries(data.tools)) {
        if (!isRecord(tools)) continue;
        const shapes = new Map<string, ObservedShape>();
        for (const [tool, entry] of Object.entries(tools)) {
          if (!isRecord(entry) || !isRecord(entry.schema)) continue;
          if (!Number.isSafeInteger(entry.calls) || (entry.calls as number) < 1) continue;
          const kept = { schema: entry.schema, calls: entry.calls as number };
          this.#keep(shapes, tool, kept, JSON.stringify(entry.schema).length);
        }
        this.#shapes.set(server, shapes);
      }
      this.#forgetOldest();
    } catch (error) {
      this.#log.warn("Cannot read observed result types; starting afresh", {
        path,
        error: (error as Error).message,
      });
    }
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
