/**
 * The server a stdio client gets when code mode cannot start (its config is refused): it
 * completes the handshake and offers one tool, `execute_code`, whose description and every call
 * say why, so the reason reaches the person through their client (a desktop client shows a
 * server that exits only as "disconnected", its stderr in a log file).
 */
import { McpServer } from "@modelcontextprotocol/server";
import { z } from "zod";
import { DECLARED_CAPABILITIES, SERVER_INFO } from "./server_identity.ts";

export function unavailableServer(reason: string): McpServer {
  const server = new McpServer({ ...SERVER_INFO }, {
    capabilities: structuredClone(DECLARED_CAPABILITIES),
  });
  const why = `Code mode cannot start: ${reason}\nFix it and restart the server.`;
  server.registerTool("execute_code", {
    title: "Run Python in a sandbox (unavailable)",
    description: why,
    // Whatever a client sends gets the reason, not an argument error.
    inputSchema: z.object({}).passthrough(),
  }, () => ({ content: [{ type: "text" as const, text: why }], isError: true }));
  // Declared (as in every answer to `initialize`), so answered: there are none.
  server.server.setRequestHandler("resources/list", () => ({ resources: [] }));
  return server;
}
