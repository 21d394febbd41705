/**
 * The upstream tools as scripts and clients see them: the current `Catalog`, rebuilt from the
 * upstream sessions whenever a server's tool list changes, with a version and change events. It
 * stands apart from the call path: the tool gate only asks it whether a tool exists.
 */
import { Catalog } from "../catalog/catalog.ts";
import type { ServerTools } from "../catalog/catalog.ts";
import type { Redactor } from "../policy/redaction.ts";

export class ToolCatalog {
  #catalog: Catalog;
  #version = 0;
  readonly #snapshot: () => ServerTools[];
  readonly #redact: Redactor;
  readonly #listeners = new Set<(catalog: Catalog) => void>();

  /**
   * `snapshot` reads the upstream servers' tools. `redact` scrubs secrets from it before the
   * catalog is built: tool descriptions, schemas, server descriptions and errors reach sandboxes
   * (docstrings), clients (the index, search, docs, stub resources) and the agent's prompt only
   * through the catalog.
   */
  constructor(snapshot: () => ServerTools[], redact: Redactor) {
    this.#snapshot = snapshot;
    this.#redact = redact;
    this.#catalog = this.#build();
  }

  get current(): Catalog {
    return this.#catalog;
  }

  /** Changes whenever `current` does. */
  get version(): number {
    return this.#version;
  }

  #build(): Catalog {
    return new Catalog(this.#redact.json(this.#snapshot()));
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
