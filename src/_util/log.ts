/**
 * Logging to stderr only: in stdio mode stdout belongs to the MCP protocol.
 */
import { queuedLines } from "./queued_lines.ts";
import { escapeUnsafe } from "./safe_text.ts";
export type LogLevel = "debug" | "info" | "warn" | "error";

const ORDER: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export type LogFormat = "text" | "json";

/**
 * A logger that writes one line per record to stderr, at or above `level`: readable text with
 * the fields as JSON (controls and invisible characters shown escaped, see safe_text.ts), or
 * (format "json") one JSON object per line for log collectors.
 */
export function createLogger(
  level: LogLevel = "info",
  write = writeStderr,
  format: LogFormat = "text",
): Logger {
  const emit = (at: LogLevel) => (message: string, fields?: Record<string, unknown>) => {
    if (ORDER[at] < ORDER[level]) return;
    if (format === "json") {
      write(
        JSON.stringify({ time: new Date().toISOString(), level: at, msg: message, ...fields }) +
          "\n",
      );
      return;
    }
    const extra = fields && Object.keys(fields).length > 0 ? " " + JSON.stringify(fields) : "";
    // One record, one line, as written: text from elsewhere in a message (a name an upstream
    // gave, an error a model API sent) can neither start a forged line nor drive the terminal.
    write(`[code-mode] ${at}: ${escapeUnsafe(message + extra)}\n`);
  };
  return { debug: emit("debug"), info: emit("info"), warn: emit("warn"), error: emit("error") };
}

/** The same logger with `fixed` fields on every record (e.g. an execution id). */
export function withFields(log: Logger, fixed: Record<string, unknown>): Logger {
  const wrap = (emit: Logger["info"]) => (message: string, fields?: Record<string, unknown>) =>
    emit(message, { ...fixed, ...fields });
  return {
    debug: wrap(log.debug),
    info: wrap(log.info),
    warn: wrap(log.warn),
    error: wrap(log.error),
  };
}

export function parseLogFormat(value: string | undefined): LogFormat {
  if (value === undefined || value === "text" || value === "json") return value ?? "text";
  throw new TypeError(`Cannot parse log format: "${value}" is not text or json`);
}

/** The same logger with `scrub` applied to every message and field. */
export function scrubbedLogger(log: Logger, scrub: (text: string) => string): Logger {
  const wrap = (emit: Logger["info"]) => (message: string, fields?: Record<string, unknown>) =>
    emit(scrub(message), fields && JSON.parse(scrub(JSON.stringify(fields))));
  return {
    debug: wrap(log.debug),
    info: wrap(log.info),
    warn: wrap(log.warn),
    error: wrap(log.error),
  };
}

/** A logger that drops everything (for tests that do not look at logs). */
export const silentLogger: Logger = createLogger("error", () => {});

/** The host's log lines on their way to stderr, never blocking it (queued_lines.ts). */
const stderrLines = queuedLines(Deno.stderr);

function writeStderr(line: string): void {
  stderrLines.write(line);
}

/** Waits, at most `ms`, for the log lines written so far to reach stderr (before an exit). */
export function logWritten(ms: number): Promise<void> {
  return stderrLines.flush(ms);
}

export function parseLogLevel(value: string | undefined): LogLevel {
  if (value === undefined) return "info";
  if (value in ORDER) return value as LogLevel;
  throw new TypeError(`Cannot parse log level: "${value}" is not one of debug, info, warn, error`);
}
