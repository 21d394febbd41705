/**
 * What this server says about itself when a client opens a connection: its name and version,
 * its instructions, and the capabilities each protocol era sees. One source for `createHost`
 * (server.ts), which builds its MCP server from these, and for the opening answer
 * (opening_answer.ts), which gives them before the SDK has even loaded. A test compares the two
 * answers.
 */
import { VERSION } from "../_util/version.ts";

export const SERVER_INFO = { name: "mcp-code-mode", version: VERSION } as const;

export const SERVER_INSTRUCTIONS =
  "Use execute_code to run Python that calls the listed MCP tools as functions; one script can replace many tool calls.";

/** Declared when the server is made; the SDK adds `tools` with the first tool. */
export const DECLARED_CAPABILITIES = { logging: {}, resources: { listChanged: true } } as const;

/** The capabilities a client of each era is told, once the tools and their Tasks are in place. */
export const ANNOUNCED_CAPABILITIES = {
  /** 2025-11-25 and before, in the `initialize` result. */
  legacy: { ...DECLARED_CAPABILITIES, tools: { listChanged: true } },
  /** 2026-07-28, in the `server/discover` result: long calls may become Tasks. */
  modern: {
    ...DECLARED_CAPABILITIES,
    extensions: { "io.modelcontextprotocol/tasks": {} },
    tools: { listChanged: true },
  },
} as const;

/** The 2025-era revisions `initialize` accepts as asked (the SDK's); any other gets the first. */
export const LEGACY_VERSIONS = [
  "2025-11-25",
  "2025-06-18",
  "2025-03-26",
  "2024-11-05",
  "2024-10-07",
] as const;

/** The revisions `server/discover` lists (2025-era ones are negotiated by `initialize`). */
export const MODERN_VERSIONS = ["2026-07-28"] as const;
