/**
 * Logging to stderr only: in stdio mode stdout belongs to the MCP protocol.
 */
export type LogLevel = "debug" | "info" | "warn" | "error";

const ORDER: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** A logger that writes one line per record to stderr, at or above `level`. */
export function createLogger(level: LogLevel = "info", write = writeStderr): Logger {
  const emit = (at: LogLevel) => (message: string, fields?: Record<string, unknown>) => {
    if (ORDER[at] < ORDER[level]) return;
    const extra = fields && Object.keys(fields).length > 0 ? " " + JSON.stringify(fields) : "";
    write(`[code-mode] ${at}: ${message}${extra}\n`);
  };
  return { debug: emit("debug"), info: emit("info"), warn: emit("warn"), error: emit("error") };
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

const encoder = new TextEncoder();
function writeStderr(line: string): void {
  Deno.stderr.writeSync(encoder.encode(line));
}

export function parseLogLevel(value: string | undefined): LogLevel {
  if (value === undefined) return "info";
  if (value in ORDER) return value as LogLevel;
  throw new TypeError(`Cannot parse log level: "${value}" is not one of debug, info, warn, error`);
}
