/**
 * argv -> one command. Exit codes: 0 success, 1 the script (or the server) failed, 2 bad usage,
 * 3 `run` could not run its script (config, start-up).
 * Everything but a command's own output goes to stderr.
 */
import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { createLogger, type Logger, parseLogFormat, parseLogLevel } from "./_util/log.ts";
import { VERSION } from "./_util/version.ts";
import { closestName, didYouMean } from "./config/did_you_mean.ts";
import { runRestrictedHost } from "./relaunch/restricted_relaunch.ts";
import { UsageError } from "./commands/usage_error.ts";
import { parseAllowedHost } from "./host/http_guard.ts";
import { writeAllSync } from "./_util/write_all.ts";
import { consoleToStderr } from "./_util/console_redirect.ts";
import { readEnv } from "./config/environment.ts";
import { NESTING_VARIABLE, nestingRefusal } from "./config/this_server.ts";
import { answerOpening } from "./host/stdio_opening.ts";
import process from "node:process";

/** The commands' code (the whole server), loaded when a command runs in this process. */
const commands = () => import("./commands/commands.ts");
/** `import` and `install`, which edit client configs and need none of the server. */
const clientCommands = () => import("./commands/clients.ts");

/** What `serve --http` uses unless told otherwise (written here only; the usage text says them). */
const HTTP_DEFAULTS = {
  host: "127.0.0.1",
  port: 8788,
  maxConcurrent: 8,
  maxPerSession: 4,
  maxSessions: 256,
};
/** Over stdio, one client: its cap is an HTTP session's. */
const STDIO_MAX_CONCURRENT = HTTP_DEFAULTS.maxPerSession;

const USAGE = `mcp-code-mode ${VERSION}: a Code Mode MCP server (Python in Pyodide sandboxes)

Usage:
  mcp-code-mode serve [--config PATH] [--max-concurrent N]
                                                    MCP server over stdio (N executions at once,
                                                    default ${STDIO_MAX_CONCURRENT})
  mcp-code-mode serve --http [--host H] [--port P] [--stateless] [--allow-host NAME]...
                      [--allow-origin URL]... [--max-concurrent N] [--max-per-session N]
                      [--max-http-sessions N] [--http-idle-s S]
                                                    MCP over Streamable HTTP at /mcp (default
                                                    ${HTTP_DEFAULTS.host}:${HTTP_DEFAULTS.port}); any other host requires
                                                    CODEMODE_HTTP_TOKEN (bearer token), and
                                                    0.0.0.0 or :: the --allow-host names
                                                    clients use in the Host header
  mcp-code-mode run FILE.py [--profile P] [--json] [--timeout S] [--config PATH]
                                                    run one script (FILE "-" reads stdin);
                                                    exit 0 on success, 1 when it fails, 2 on
                                                    bad usage, 3 when it cannot run (config,
                                                    start-up)
  mcp-code-mode agent "TASK" [--max-attempts N] [--profile P] [--json] [--config PATH]
                                                    a model writes Python for TASK, runs it and
                                                    repairs it; needs OPENAI_API_KEY (see README)
  mcp-code-mode doctor [--config PATH]              check Deno, Pyodide, the snapshot, a sandbox
                                                    and every configured server
  mcp-code-mode tools [--index] [--config PATH]     print the Python stubs of the configured
                                                    servers' tools (or just the compact index)
  mcp-code-mode import [--from CLIENT]... [--project] [--replace] [--dry-run] [--config PATH]
                                                    copy the MCP servers listed in your
                                                    clients' configs into mcp_servers.json
                                                    (all clients unless --from names some;
                                                    the current folder's files are listed,
                                                    and imported only with --project)
  mcp-code-mode install --client CLIENT [--scope user|project] [--dry-run] [--config PATH]
                                                    add this server to a client's config
                                                    (a backup of the file is kept); with
                                                    --config, the entry serves that config
  mcp-code-mode --help | --version

From a checkout, "deno run -A main.ts" stands for mcp-code-mode (deno task install puts
the command on PATH).

Clients: claude-desktop, claude-code, cursor, vscode (project scope: files in the current folder)

Options:
  --config PATH      mcp_servers.json to use (default: $CODEMODE_CONFIG, then the project's)
  --log-level LEVEL  debug, info, warn or error (default info; logs go to stderr)
  --log-format F     text (default) or json: one JSON object per line
  --no-restrict      keep this process's permissions; otherwise serve, run, agent and tools
                     (from source) re-start themselves with only what their config needs
`;

/** The exit code of `run` when the script could not be run at all. */
const RUN_COULD_NOT_START = 3;

const COMMANDS = ["serve", "run", "agent", "doctor", "tools", "import", "install"];

/** parseArgs' message for an unknown option, said plainly with the option it is closest to. */
function optionError(error: Error, options: readonly string[]): string {
  const unknown = /^Unknown option '(-{1,2})([^']+)'/.exec(error.message);
  if (!unknown) return error.message;
  const meant = closestName(unknown[2]!, options);
  return `unknown option ${unknown[1]}${unknown[2]}${meant ? `; did you mean --${meant}?` : ""}`;
}

export async function runCli(args: string[], out = writeStdout): Promise<number> {
  consoleToStderr();
  let parsed;
  const options = {
    help: { type: "boolean", short: "h" },
    version: { type: "boolean", short: "V" },
    config: { type: "string" },
    "log-level": { type: "string" },
    "log-format": { type: "string" },
    profile: { type: "string" },
    json: { type: "boolean" },
    timeout: { type: "string" },
    index: { type: "boolean" },
    "max-attempts": { type: "string" },
    http: { type: "boolean" },
    host: { type: "string" },
    port: { type: "string" },
    stateless: { type: "boolean" },
    "max-concurrent": { type: "string" },
    "max-per-session": { type: "string" },
    "allow-origin": { type: "string", multiple: true },
    "allow-host": { type: "string", multiple: true },
    "max-http-sessions": { type: "string" },
    "http-idle-s": { type: "string" },
    "no-restrict": { type: "boolean" },
    from: { type: "string", multiple: true },
    client: { type: "string" },
    scope: { type: "string" },
    "dry-run": { type: "boolean" },
    replace: { type: "boolean" },
    project: { type: "boolean" },
  } as const;
  try {
    parsed = parseArgs({ args, allowPositionals: true, options });
  } catch (error) {
    return usageError(optionError(error as Error, Object.keys(options)), { withUsage: true });
  }
  const { values, positionals } = parsed;
  if (values.help || (positionals.length === 1 && positionals[0] === "help")) {
    out(USAGE);
    return 0;
  }
  if (values.version) {
    out(`${VERSION}\n`);
    return 0;
  }
  let log: Logger;
  try {
    log = createLogger(
      parseLogLevel(values["log-level"]),
      undefined,
      parseLogFormat(values["log-format"]),
    );
  } catch (error) {
    return usageError((error as Error).message);
  }
  const [command, ...rest] = positionals;
  // From source, a command that runs scripts re-starts itself with only the permissions its
  // config needs (plus `extraRead`), and this process just waits for it.
  const restrict = !values["no-restrict"] && !Deno.build.standalone;
  const relaunch = (
    extraRead: string[],
    http: { host: string; port: number } | null = null,
    sayOpenFolders = false,
  ) => runRestrictedHost({ args, configPath: values.config, http, extraRead, sayOpenFolders, log });
  try {
    switch (command) {
      case "serve": {
        if (rest.length > 0) throw new UsageError(`serve takes no arguments, got "${rest[0]}"`);
        const http = values.http
          ? {
            host: values.host ?? HTTP_DEFAULTS.host,
            port: wholeNumber(values.port, "--port", HTTP_DEFAULTS.port, 0, 65535),
            stateless: values.stateless ?? false,
            maxConcurrent: wholeNumber(
              values["max-concurrent"],
              "--max-concurrent",
              HTTP_DEFAULTS.maxConcurrent,
              1,
              256,
            ),
            maxPerSession: wholeNumber(
              values["max-per-session"],
              "--max-per-session",
              HTTP_DEFAULTS.maxPerSession,
              1,
              256,
            ),
            allowedOrigins: values["allow-origin"] ?? [],
            allowedHosts: (values["allow-host"] ?? []).map(allowedHost),
            maxSessions: wholeNumber(
              values["max-http-sessions"],
              "--max-http-sessions",
              HTTP_DEFAULTS.maxSessions,
              1,
              65_536,
            ),
            // Default: settings.session_idle_s, known once the config is loaded.
            sessionIdleS: values["http-idle-s"] === undefined
              ? undefined
              : wholeNumber(values["http-idle-s"], "--http-idle-s", 0, 1, 86_400),
          }
          : null;
        const maxConcurrent = http?.maxConcurrent ??
          wholeNumber(values["max-concurrent"], "--max-concurrent", STDIO_MAX_CONCURRENT, 1, 256);
        const refusal = nestingRefusal(readEnv(NESTING_VARIABLE));
        if (refusal) throw new Error(refusal);
        if (restrict) {
          try {
            return await relaunch([], http, true);
          } catch (error) {
            // The config was refused before a server could start: over stdio, a client is told
            // through the protocol (see serveUnavailable).
            if (http) throw error;
            return await (await commands()).serveUnavailable(error, log);
          }
        }
        // Over stdio, the client's opening message is answered before the server's code loads.
        const answered = http ? null : await answerOpening(process.stdin, writeStdout);
        const { serveOverHttp, serveStdio } = await commands();
        return http
          ? await serveOverHttp(values.config, log, http)
          : await serveStdio(values.config, log, { answered, maxConcurrent });
      }
      case "run": {
        if (rest.length !== 1) throw new UsageError("run takes exactly one FILE.py (or -)");
        const timeout = values.timeout === undefined ? undefined : Number(values.timeout);
        if (timeout !== undefined && !(timeout > 0)) {
          throw new UsageError(`--timeout must be a positive number of seconds`);
        }
        if (restrict) return await relaunch(rest[0] === "-" ? [] : [resolve(rest[0]!)]);
        const { runScript } = await commands();
        return await runScript(rest[0]!, {
          config: values.config,
          profile: values.profile,
          json: values.json ?? false,
          timeout,
          log,
          out,
        });
      }
      case "agent": {
        if (rest.length !== 1) throw new UsageError('agent takes exactly one "TASK" argument');
        const maxAttempts = values["max-attempts"] === undefined
          ? undefined
          : wholeNumber(values["max-attempts"], "--max-attempts", 0, 1, 10);
        if (restrict) return await relaunch([]);
        const { runAgentCommand } = await commands();
        return await runAgentCommand(rest[0]!, {
          config: values.config,
          profile: values.profile,
          json: values.json ?? false,
          maxAttempts,
          log,
          out,
        });
      }
      case "doctor": {
        if (rest.length > 0) throw new UsageError(`doctor takes no arguments, got "${rest[0]}"`);
        const { formatChecks, runDoctor } = await commands();
        const checks = await runDoctor(values.config, log);
        out(formatChecks(checks));
        return checks.every((c) => c.ok) ? 0 : 1;
      }
      case "tools":
        if (rest.length > 0) throw new UsageError(`tools takes no arguments, got "${rest[0]}"`);
        if (restrict) return await relaunch([]);
        return await (await commands()).printTools(values.config, values.index ?? false, log, out);
      // Client configs: no scripts run, so no restricted relaunch (as doctor).
      case "import":
        if (rest.length > 0) throw new UsageError(`import takes no arguments, got "${rest[0]}"`);
        return await (await clientCommands()).importCommand({
          from: values.from ?? [],
          dryRun: values["dry-run"] ?? false,
          replace: values.replace ?? false,
          project: values.project ?? false,
          config: values.config,
        }, out);
      case "install":
        if (rest.length > 0) throw new UsageError(`install takes no arguments, got "${rest[0]}"`);
        return await (await clientCommands()).installCommand({
          client: values.client,
          scope: values.scope,
          dryRun: values["dry-run"] ?? false,
          config: values.config ?? (readEnv("CODEMODE_CONFIG") || undefined),
        }, out);
      case undefined:
        return usageError("a command is required", { withUsage: true });
      default:
        return usageError(`unknown command "${command}"${didYouMean(command, COMMANDS)}`, {
          withUsage: true,
        });
    }
  } catch (error) {
    if (error instanceof UsageError) return usageError(error.message);
    log.error((error as Error).message);
    // `run` is a CI step: a script that could not run at all (a config refused, a start-up that
    // failed) is not a script that failed.
    return command === "run" ? RUN_COULD_NOT_START : 1;
  }
}

/**
 * Exit code 2 with the error; the whole usage text only when the command line itself is
 * unreadable (an unknown flag or command), where it would not push the error off screen.
 */
function usageError(message: string, { withUsage = false } = {}): number {
  const help = withUsage ? `\n${USAGE}` : "(see --help for the usage)\n";
  writeAllSync(Deno.stderr, `error: ${message}\n${help}`);
  return 2;
}

function writeStdout(text: string): void {
  writeAllSync(Deno.stdout, text);
}

function allowedHost(value: string): string {
  try {
    return parseAllowedHost(value);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function wholeNumber(
  value: string | undefined,
  flag: string,
  fallback: number,
  min: number,
  max: number,
): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new UsageError(`${flag} must be a whole number from ${min} to ${max}`);
  }
  return n;
}
