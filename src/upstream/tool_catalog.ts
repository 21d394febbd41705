/**
 * The upstream tools as scripts and clients see them: the current `Catalog`, rebuilt from the
 * upstream sessions whenever a server's tool list changes, with a version and change events. It
 * stands apart from the call path: the tool gate only asks it whether a tool exists.
 */
import { Catalog } from "../catalog/catalog.ts";
import type { ServerTools } from "../catalog/catalog.ts";
import type { ObservedShape } from "../catalog/python_stubs.ts";
import type { Redactor } from "../policy/redaction.ts";

/** The observed result shapes the catalog shows (see ObservedResults). */
export interface ObservedShapes {
  /** Changes whenever `get` would answer differently. */
  readonly version: number;
  get(server: string, tool: string): ObservedShape | undefined;
}

export class ToolCatalog {
  #catalog: Catalog;
  #version = 0;
  readonly #snapshot: () => ServerTools[];
  readonly #redact: Redactor;
  readonly #observed: ObservedShapes | undefined;
  readonly #countTokens: ((text: string) => number) | undefined;
  #observedVersion = 0;
  readonly #listeners = new Set<(catalog: Catalog) => void>();

  /**
   * `snapshot` reads the upstream servers' tools. `redact` scrubs secrets from it before the
   * catalog is built: tool descriptions, schemas, server descriptions and errors reach sandboxes
   * (docstrings), clients (the index, search, docs, stub resources) and the agent's prompt only
   * through the catalog.
   */
  constructor(
    snapshot: () => ServerTools[],
    redact: Redactor,
    options: { observed?: ObservedShapes; countTokens?: (text: string) => number } = {},
  ) {
    this.#snapshot = snapshot;
    this.#redact = redact;
    this.#observed = options.observed;
    this.#countTokens = options.countTokens;
    this.#catalog = this.#build();
  }

  /**
   * The catalog now. A newly observed result type rebuilds it here (no change event: the tools
   * are the same, only their stubs' return types and counts differ).
   */
  get current(): Catalog {
    if (this.#observed && this.#observed.version !== this.#observedVersion) {
      this.#catalog = this.#build();
      this.#version++;
    }
    return this.#catalog;
  }

  /** Changes whenever `current` does. */
  get version(): number {
    void this.current; // brings a newly observed type in first
    return this.#version;
  }

  #build(): Catalog {
    const observed = this.#observed;
    this.#observedVersion = observed?.version ?? 0;
    return new Catalog(this.#redact.json(this.#snapshot()), {
      observed: observed ? (server, tool) => observed.get(server, tool) : undefined,
      countTokens: this.#countTokens,
    });
  }

  /** Rebuilds the catalog from the upstream sessions and tells the listeners. */
  refresh(): void {
    this.#catalog = this.#build();
    this.#version++;
    for (const listener of this.#listeners) listener(this.#catalog);
  }

  /**
   * Calls `listener` after every catalog change, until the returned function unsubscribes it
   * (each MCP host subscribes while it is open: one per stdio client or HTTP session).
   */
  onChange(listener: (catalog: Catalog) => void): () => void {
    // A wrapper of our own, so subscribing the same function twice needs two unsubscribes.
    const entry = (catalog: Catalog) => listener(catalog);
    this.#listeners.add(entry);
    return () => {
      this.#listeners.delete(entry);
    };
  }
}
