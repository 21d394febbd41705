/**
 * The client's `logging/setLevel` for one connection: which log messages it wants. Script
 * output is sent as log messages (stdout at "info", stderr at "warning"), so a client that asks
 * for "warning" gets only stderr, and "error" gets neither.
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import {
  type LoggingLevel,
  LoggingLevelSchema,
  SetLevelRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

/** MCP's severities (RFC 5424), least severe first, as the SDK lists them. */
const SEVERITY_ORDER: readonly LoggingLevel[] = LoggingLevelSchema.options;

/** Whether a message at `level` passes the client's `threshold` (none set: everything). */
export function passes(level: LoggingLevel, threshold: LoggingLevel | null): boolean {
  return threshold === null || SEVERITY_ORDER.indexOf(level) >= SEVERITY_ORDER.indexOf(threshold);
}

/**
 * Records the level the client sets on `server` and answers whether a level is wanted. (The
 * SDK keeps its own record only for its `sendLoggingMessage`, which a tool's request-bound
 * notifications do not go through.)
 */
export function trackLogLevel(server: McpServer): (level: LoggingLevel) => boolean {
  let threshold: LoggingLevel | null = null;
  server.server.setRequestHandler(
    SetLevelRequestSchema,
    (request: { params: { level: string } }) => {
      const parsed = LoggingLevelSchema.safeParse(request.params.level);
      if (parsed.success) threshold = parsed.data;
      return {};
    },
  );
  return (level) => passes(level, threshold);
}
