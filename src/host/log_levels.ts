/**
 * MCP log levels (RFC 5424 severities), for filtering where the SDK cannot: a stateless
 * 2025-11-25 request, whose level no session carries.
 */
import type { LoggingLevel } from "@modelcontextprotocol/server";

/** Least severe first. */
const LEVELS: readonly LoggingLevel[] = [
  "debug",
  "info",
  "notice",
  "warning",
  "error",
  "critical",
  "alert",
  "emergency",
];

/** `value` as a log level, if it is one. */
export function asLogLevel(value: unknown): LoggingLevel | undefined {
  return LEVELS.find((level) => level === value);
}

/** Whether a message at `level` is filtered out by a client that asked for `floor` and up. */
export function isBelow(level: LoggingLevel, floor: LoggingLevel): boolean {
  return LEVELS.indexOf(level) < LEVELS.indexOf(floor);
}
