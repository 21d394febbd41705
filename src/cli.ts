/**
 * argv -> one command. Exit codes: 0 success, 1 the script (or the server) failed, 2 bad usage.
 * Everything but a command's own output goes to stderr.
 */
import { parseArgs } from "node:util";
import process from "node:process";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { startApp } from "./app.ts";
import { formatResultText } from "./host/execution_result.ts";
import { DEFAULT_MAX_ATTEMPTS, runAgent } from "./agent/agent.ts";
import { selectModel } from "./agent/select_model.ts";
import { formatAgentResult } from "./host/tools/generate_and_execute.ts";
import { createLogger, type Logger, parseLogFormat, parseLogLevel } from "./log.ts";
import { VERSION } from "./version.ts";
import { serveHttp } from "./host/http_server.ts";
import { formatChecks, runDoctor } from "./doctor.ts";
import { checkBind } from "./host/http_guard.ts";
import { runRestrictedHost } from "./restricted_host.ts";

const USAGE = `mcp-code-mode ${VERSION}: a Code Mode MCP server (Python in Pyodide sandboxes)

Usage:
  main.ts serve [--config PATH] [--no-restrict]     MCP server over stdio; from source it
                                                    re-starts itself with only the permissions
                                                    its config needs (--no-restrict: keep this
                                                    process's own permissions)
  main.ts serve --http [--host H] [--port P] [--stateless]
                [--max-concurrent N] [--max-per-session N]
                                                    MCP over Streamable HTTP at /mcp (default
                                                    127.0.0.1:8788); any other host requires
                                                    CODEMODE_HTTP_TOKEN (bearer token)
  main.ts run FILE.py [--profile P] [--json] [--timeout S] [--config PATH]
                                                    run one script (FILE "-" reads stdin);
                                                    exit 0 on success, 1 when it fails
  main.ts agent "TASK" [--max-attempts N] [--profile P] [--json] [--config PATH]
                                                    a model writes Python for TASK, runs it and
                                                    repairs it; needs OPENAI_API_KEY (see README)
  main.ts doctor [--config PATH]                    check Deno, Pyodide, the snapshot, a sandbox
                                                    and every configured server
  main.ts tools [--index] [--config PATH]           print the Python stubs of the configured
                                                    servers' tools (or just the compact index)
  main.ts --help | --version

Options:
  --config PATH      mcp_servers.json to use (default: $CODEMODE_CONFIG, then the project's)
  --log-level LEVEL  debug, info, warn or error (default info; logs go to stderr)
  --log-format F     text (default) or json: one JSON object per line
`;

class UsageError extends Error {}

export async function runCli(args: string[], out = writeStdout): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
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
        "no-restrict": { type: "boolean" },
      },
    });
  } catch (error) {
    return usageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
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
  try {
    switch (command) {
      case "serve": {
        if (rest.length > 0) throw new UsageError(`serve takes no arguments, got "${rest[0]}"`);
        const http = values.http
          ? {
            host: values.host ?? "127.0.0.1",
            port: wholeNumber(values.port, "--port", 8788, 0, 65535),
            stateless: values.stateless ?? false,
            maxConcurrent: wholeNumber(values["max-concurrent"], "--max-concurrent", 8, 1, 256),
            maxPerSession: wholeNumber(values["max-per-session"], "--max-per-session", 4, 1, 256),
            allowedOrigins: values["allow-origin"] ?? [],
          }
          : null;
        // From source, the server re-starts itself with only the permissions it needs.
        if (!values["no-restrict"] && !Deno.build.standalone) {
          return await runRestrictedHost({ args, configPath: values.config, http, log });
        }
        return http
          ? await serveOverHttp(values.config, log, http)
          : await serve(values.config, log);
      }
      case "run": {
        if (rest.length !== 1) throw new UsageError("run takes exactly one FILE.py (or -)");
        const timeout = values.timeout === undefined ? undefined : Number(values.timeout);
        if (timeout !== undefined && !(timeout > 0)) {
          throw new UsageError(`--timeout must be a positive number of seconds`);
        }
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
        const maxAttempts = wholeNumber(
          values["max-attempts"],
          "--max-attempts",
          DEFAULT_MAX_ATTEMPTS,
          1,
          10,
        );
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
        const checks = await runDoctor(values.config, log);
        out(formatChecks(checks));
        return checks.every((c) => c.ok) ? 0 : 1;
      }
      case "tools":
        if (rest.length > 0) throw new UsageError(`tools takes no arguments, got "${rest[0]}"`);
        return await printTools(values.config, values.index ?? false, log, out);
      case undefined:
        throw new UsageError("a command is required");
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (error) {
    if (error instanceof UsageError) return usageError(error.message);
    log.error((error as Error).message);
    return 1;
  }
}

function usageError(message: string): number {
  Deno.stderr.writeSync(new TextEncoder().encode(`error: ${message}\n\n${USAGE}`));
  return 2;
}

function writeStdout(text: string): void {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  while (offset < bytes.length) offset += Deno.stdout.writeSync(bytes.subarray(offset));
}

async function serve(configPath: string | undefined, log: Logger): Promise<number> {
  const app = await startApp({ configPath, log });
  const host = app.createHost();
  const transport = new StdioServerTransport();
  const closed = Promise.withResolvers<void>();
  let closing = false;
  const shutdown = async (why: string) => {
    if (closing) return;
    closing = true;
    log.info(`shutting down (${why})`);
    await host.close().catch(() => {});
    await app.close();
    closed.resolve();
  };
  transport.onclose = () => void shutdown("transport closed");
  process.stdin.on("end", () => void shutdown("stdin closed"));
  Deno.addSignalListener("SIGINT", () => void shutdown("SIGINT"));
  Deno.addSignalListener("SIGTERM", () => void shutdown("SIGTERM"));
  await host.server.connect(transport);
  log.info("serving MCP over stdio", {
    profiles: app.config.settings.allowed_profiles,
    servers: app.config.servers.map((s) => s.name),
  });
  await closed.promise;
  return 0;
}

interface RunOptions {
  config?: string;
  profile?: string;
  json: boolean;
  timeout?: number;
  log: Logger;
  out: (text: string) => void;
}

async function runScript(file: string, options: RunOptions): Promise<number> {
  let code: string;
  try {
    code = file === "-"
      ? await new Response(Deno.stdin.readable).text()
      : await Deno.readTextFile(file);
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
  }
  await using app = await startApp({ configPath: options.config, log: options.log, poolSize: 0 });
  checkProfileArgument(options.profile, app.config.settings.allowed_profiles);
  const result = await app.execute({ code, profile: options.profile, timeout_s: options.timeout });
  if (options.json) {
    options.out(JSON.stringify(result, null, 2) + "\n");
  } else {
    if (result.stdout) options.out(result.stdout);
    if (result.stderr) Deno.stderr.writeSync(new TextEncoder().encode(result.stderr));
    if (!result.success) {
      const text = formatResultText({ ...result, stdout: "", stderr: "" });
      Deno.stderr.writeSync(new TextEncoder().encode(text + "\n"));
    } else if (result.result !== null && result.result !== undefined) {
      const shown = typeof result.result === "string"
        ? result.result
        : JSON.stringify(result.result);
      options.out(shown + "\n");
    }
  }
  return result.success ? 0 : 1;
}

async function printTools(
  configPath: string | undefined,
  indexOnly: boolean,
  log: Logger,
  out: (text: string) => void,
): Promise<number> {
  await using app = await startApp({ configPath, log, poolSize: 0 });
  const catalog = app.tools.catalog;
  if (indexOnly) {
    out(catalog.index() + "\n");
  } else {
    for (const entry of catalog.servers) {
      out(`# ===== mcp_tools.${entry.moduleName} =====\n`);
      if (entry.error) out(`# unavailable: ${entry.error}\n`);
      out(entry.stub + "\n");
    }
  }
  return catalog.servers.some((s) => s.error) ? 1 : 0;
}

async function runAgentCommand(
  task: string,
  options: Omit<RunOptions, "timeout"> & { maxAttempts?: number },
): Promise<number> {
  await using app = await startApp({ configPath: options.config, log: options.log, poolSize: 1 });
  checkProfileArgument(options.profile, app.config.settings.allowed_profiles);
  const model = selectModel(app.openAI, null);
  const err = (text: string) => Deno.stderr.writeSync(new TextEncoder().encode(text + "\n"));
  const result = await runAgent(
    { task, max_attempts: options.maxAttempts, profile: options.profile },
    app.agentDeps(model),
    (a) => {
      err(
        `--- attempt ${a.attempt} (${model.name}): ${
          a.error ? `failed at ${a.phase}` : "succeeded"
        } ---`,
      );
      if (a.code) err(a.code.trimEnd());
      if (a.error) err(`error: ${a.error}`);
      for (const note of a.notes) err(`note: ${note}`);
    },
  );
  if (options.json) {
    options.out(JSON.stringify(result, null, 2) + "\n");
  } else {
    const run = result.execution;
    if (result.success && run) {
      if (run.stdout) options.out(run.stdout);
      if (run.result !== null && run.result !== undefined) {
        options.out(
          (typeof run.result === "string" ? run.result : JSON.stringify(run.result)) + "\n",
        );
      }
    }
    err(formatAgentResult({ ...result, attempts: [] }).split("\n")[0]!);
  }
  return result.success ? 0 : 1;
}

function checkProfileArgument(profile: string | undefined, allowed: string[]): void {
  if (profile !== undefined && !allowed.includes(profile)) {
    throw new UsageError(`unknown profile "${profile}" (known: ${allowed.join(", ")})`);
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

interface HttpFlags {
  host: string;
  port: number;
  stateless: boolean;
  maxConcurrent: number;
  maxPerSession: number;
  allowedOrigins: string[];
}

async function serveOverHttp(
  configPath: string | undefined,
  log: Logger,
  flags: HttpFlags,
): Promise<number> {
  const token = Deno.env.get("CODEMODE_HTTP_TOKEN") || undefined;
  const refusal = checkBind(flags.host, token);
  if (refusal) throw new UsageError(refusal);
  const app = await startApp({ configPath, log });
  const http = await serveHttp(app, { ...flags, token, log });
  const stopped = Promise.withResolvers<void>();
  let stopping = false;
  const stop = async (why: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`shutting down (${why})`);
    await http.shutdown();
    await app.close();
    stopped.resolve();
  };
  Deno.addSignalListener("SIGINT", () => void stop("SIGINT"));
  Deno.addSignalListener("SIGTERM", () => void stop("SIGTERM"));
  await stopped.promise;
  return 0;
}
