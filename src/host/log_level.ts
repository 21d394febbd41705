/**
 * The client's `logging/setLevel` for one connection: which log messages it wants. Script
 * output is sent as log messages (stdout at "info", stderr at "warning"), so a client that asks
 * for "warning" gets only stderr, and "error" gets neither.
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { SetLevelRequestSchema } from "@modelcontextprotocol/sdk/types.js";

/** RFC 5424 severities, least severe first (the order MCP uses). */
export const LOG_LEVELS = [
  "debug",
  "info",
  "notice",
  "warning",
  "error",
  "critical",
  "alert",
  "emergency",
] as const;

export type LogLevel = (typeof LOG_LEVELS)[number];

/** Whether a message at `level` passes the client's `threshold` (none set: everything). */
export function passes(level: LogLevel, threshold: LogLevel | null): boolean {
  return threshold === null || LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(threshold);
}

/**
 * Records the level the client sets on `server` and answers whether a level is wanted. (The
 * SDK keeps its own record only for its `sendLoggingMessage`, which a tool's request-bound
 * notifications do not go through.)
 */
export function trackLogLevel(server: McpServer): (level: LogLevel) => boolean {
  let threshold: LogLevel | null = null;
  server.server.setRequestHandler(
    SetLevelRequestSchema,
    (request: { params: { level: string } }) => {
      const level = request.params.level as LogLevel;
      if (LOG_LEVELS.includes(level)) threshold = level;
      return {};
    },
  );
  return (level) => passes(level, threshold);
}
