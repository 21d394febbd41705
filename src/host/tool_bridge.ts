/**
 * The upstream tools as scripts see them: the current catalog (rebuilt when upstream tool lists
 * change) and the gate every call passes through before it reaches an upstream session.
 */
import { Catalog } from "../catalog/catalog.ts";
import type { ToolReply } from "../rpc/sandbox_protocol.ts";
import type { UpstreamPool } from "../upstream/pool.ts";
import type { ToolBridge } from "../execution/executor.ts";
import type { Redactor } from "../policy/redaction.ts";

export class UpstreamToolBridge implements ToolBridge {
  #catalog: Catalog;
  #version = 0;
  readonly #upstream: UpstreamPool;
  readonly #listeners = new Set<(catalog: Catalog) => void>();

  readonly #redact: Redactor;

  /**
   * `redact` scrubs secrets from every tool reply before a sandbox can see it, and from the
   * upstream snapshot the catalog is built from: tool descriptions, schemas, server descriptions
   * and errors reach sandboxes (docstrings), clients (the index, search, docs, stub resources)
   * and the agent's prompt only through the catalog.
   */
  constructor(upstream: UpstreamPool, redact: Redactor) {
    this.#upstream = upstream;
    this.#redact = redact;
    this.#catalog = this.#build();
  }

  get catalog(): Catalog {
    return this.#catalog;
  }

  #build(): Catalog {
    return new Catalog(this.#redact.json(this.#upstream.snapshot()));
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

  get version(): number {
    return this.#version;
  }

  packages(): Record<string, Record<string, string>> {
    return this.#catalog.packages();
  }

  async call(server: string, tool: string, args: Record<string, unknown>): Promise<ToolReply> {
    return this.#redact.json(await this.#route(server, tool, args));
  }

  #route(server: string, tool: string, args: Record<string, unknown>): Promise<ToolReply> {
    if (!this.#catalog.hasTool(server, tool)) {
      const state = this.#upstream.state(server);
      if (state !== undefined && state !== "connected") {
        return this.#upstream.call(server, tool, args); // reports the outage clearly
      }
      const message = state === undefined
        ? `no server named "${server}"`
        : `server "${server}" has no tool "${tool}"`;
      return Promise.resolve({ error: { kind: "invalid", message } });
    }
    return this.#upstream.call(server, tool, args);
  }
}
