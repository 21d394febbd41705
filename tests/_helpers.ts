/**
 * Test helpers: start the real server over stdio with the SDK's client, and run the CLI.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { fileURLToPath as fromFileUrl } from "node:url";
import type { ExecutionResult } from "../src/execution/execution_result.ts";

export const ROOT = fromFileUrl(new URL("..", import.meta.url));
export const MAIN = fromFileUrl(new URL("../main.ts", import.meta.url));

/**
 * The flags `deno task serve` starts the server with (read from deno.json, so tests start it
 * exactly as users do).
 */
export const SERVE_FLAGS: string[] = (() => {
  const config = JSON.parse(Deno.readTextFileSync(new URL("../deno.json", import.meta.url)));
  const words = (config.tasks.serve as string).split(/\s+/);
  return words.slice(words.indexOf("run") + 1, words.indexOf("main.ts"));
})();

/** The environment a child server needs (the SDK passes only a few defaults otherwise). */
export function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  // NODE_EXTRA_CA_CERTS: on a machine whose TLS goes through an inspecting proxy, a Deno
  // upstream server started outside this checkout (no lock file) fetches its package's
  // metadata on first start and needs the proxy's CA; the host passes it on to its servers.
  for (
    const name of [
      "PATH",
      "HOME",
      "DENO_DIR",
      "XDG_CACHE_HOME",
      "CODEMODE_CACHE_DIR",
      "NODE_EXTRA_CA_CERTS",
    ]
  ) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  return { ...env, NO_COLOR: "1", ...extra };
}

/** Writes `config` as `<dir>/mcp_servers.json` (no servers unless given); returns its path. */
/** The dynamic fixture server (tests/fixtures/dynamic_server.ts) over stdio, as a config entry. */
export function dynamicServer(env: Record<string, string> = {}) {
  return {
    command: "deno",
    args: ["run", "--no-prompt", "-A", `${ROOT}tests/fixtures/dynamic_server.ts`, "stdio"],
    env,
    cwd: ROOT,
  };
}

export async function writeConfig(
  dir: string,
  config: { servers?: Record<string, unknown>; settings?: Record<string, unknown> },
): Promise<string> {
  const path = `${dir}/mcp_servers.json`;
  await Deno.writeTextFile(path, JSON.stringify({ servers: {}, ...config }));
  return path;
}

/** A config entry for the fixture server that serves the tool list in `fixture` verbatim. */
export function catalogServerEntry(fixture: string): { command: string; args: string[] } {
  return {
    command: "deno",
    args: [
      "run",
      "--no-prompt",
      "--allow-read",
      `${ROOT}tests/fixtures/catalog_server.ts`,
      fixture,
    ],
  };
}

export interface TestServer extends AsyncDisposable {
  client: Client;
  execute(
    args: {
      code: string;
      timeout_s?: number;
      profile?: string;
      session_id?: string;
      files?: Record<string, string>;
    },
  ): Promise<
    ExecutionResult & {
      isError: boolean;
      text: string;
    }
  >;
  stderr(): string;
  /** PID of the serving (restricted) host process, the parent of sandboxes and upstreams. */
  pid: number;
}

export const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts `main.ts serve` as a real child process and connects an MCP client to it. */
export async function startServer(
  options: { args?: string[]; env?: Record<string, string> } = {},
): Promise<TestServer> {
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: ["run", ...SERVE_FLAGS, MAIN, "serve", ...(options.args ?? [])],
    env: childEnv(options.env),
    stderr: "pipe",
    cwd: ROOT,
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Uint8Array) => {
    stderr += new TextDecoder().decode(chunk);
  });
  const client = new Client({ name: "test", version: "0" });
  await client.connect(transport);
  return {
    client,
    async execute(args) {
      const reply = await client.callTool({ name: "execute_code", arguments: args }, undefined, {
        timeout: 120_000,
      });
      const content = reply.content as { type: string; text: string }[];
      return {
        ...(reply.structuredContent as unknown as ExecutionResult),
        isError: reply.isError === true,
        text: content[0]?.text ?? "",
      };
    },
    stderr: () => stderr,
    pid: hostPid(transport.pid!),
    async [Symbol.asyncDispose]() {
      await client.close();
    },
  };
}

/**
 * `serve` over stdio as a bare process, for tests that write and read the protocol's bytes
 * themselves: stdin piped, stdout piped unless told, stderr dropped unless told.
 */
export function spawnServe(options: {
  args?: string[];
  env?: Record<string, string>;
  clearEnv?: boolean;
  stdout?: "piped" | "null";
  stderr?: "piped" | "null";
} = {}): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", ...SERVE_FLAGS, MAIN, "serve", ...(options.args ?? [])],
    env: childEnv(options.env),
    clearEnv: options.clearEnv,
    cwd: ROOT,
    stdin: "piped",
    stdout: options.stdout ?? "piped",
    stderr: options.stderr ?? "null",
  }).spawn();
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runCli(args: string[], stdin?: string): Promise<CliResult> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", "--allow-all", MAIN, ...args],
    env: childEnv(),
    clearEnv: true,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    cwd: ROOT,
  }).spawn();
  if (stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(stdin));
    await writer.close();
  }
  const out = await child.output();
  const decoder = new TextDecoder();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

/**
 * The serving process behind `serve` started as `pid`: run from source, `serve` re-starts
 * itself with least privilege, so the host is its only child (itself with --no-restrict).
 */
export function hostPid(pid: number): number {
  const children = childPids(pid);
  if (children.length !== 1) throw new Error(`expected one host under ${pid}, got ${children}`);
  return children[0]!;
}

/** Lists the PIDs of processes whose parent is `ppid` (Linux /proc). */
export function childPids(ppid: number): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[1]) === ppid) pids.push(Number(entry.name));
    } catch {
      // the process ended while we looked
    }
  }
  return pids;
}

/** How many processes have a command line (its arguments) that `matches` (Linux /proc). */
export function countProcesses(matches: (argv: string[]) => boolean): number {
  let count = 0;
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const argv = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).split("\0");
      if (matches(argv)) count++;
    } catch {
      // the process ended while we looked
    }
  }
  return count;
}

/** Whether process `pid` is running (not gone, not a zombie). */
export function isAlive(pid: number): boolean {
  try {
    return !/\) Z /.test(Deno.readTextFileSync(`/proc/${pid}/stat`));
  } catch {
    return false;
  }
}

/** PIDs of the sandbox processes of server `ppid` (children running the sandbox worker). */
export function sandboxPids(ppid: number): number[] {
  return childPids(ppid).filter((pid) => {
    try {
      return /sandbox\/worker/.test(Deno.readTextFileSync(`/proc/${pid}/cmdline`));
    } catch {
      return false;
    }
  });
}

/**
 * Starts tests/fixtures/dynamic_server.ts over HTTP (`http`: Streamable HTTP at /mcp, `sse`: the
 * older HTTP+SSE transport at /sse) on loopback; with `token`, every request must carry it.
 */
export async function startHttpFixture(mode: "http" | "sse" = "http", token?: string) {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--no-prompt",
      "-A",
      `${ROOT}tests/fixtures/dynamic_server.ts`,
      mode,
      ...(token ? [token] : []),
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the HTTP fixture exited");
    text += value;
  }
  reader.releaseLock();
  void child.stdout.cancel().catch(() => {});
  const port = Number(text.trim());
  return {
    port,
    url: `http://127.0.0.1:${port}/${mode === "sse" ? "sse" : "mcp"}`,
    async [Symbol.asyncDispose]() {
      child.kill("SIGKILL");
      await child.status;
    },
  };
}

/** The Deno cache folder this Deno uses (a child given another HOME needs it as DENO_DIR). */
export async function denoDir(): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), { args: ["info", "--json"] }).output();
  return JSON.parse(new TextDecoder().decode(out.stdout)).denoDir;
}

/** The TCP sockets of the given processes (`ss`), to say in a failure which connections stayed open. */
export function tcpSocketsOf(...pids: number[]): string {
  try {
    const out = new Deno.Command("ss", { args: ["-tanpo"], stdout: "piped", stderr: "null" })
      .outputSync();
    const lines = new TextDecoder().decode(out.stdout).split("\n");
    return lines.filter((l) => pids.some((pid) => l.includes(`pid=${pid},`))).join("\n");
  } catch (error) {
    return `(ss failed: ${error})`;
  }
}
