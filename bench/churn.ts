/**
 * The HTTP churn soak: many short Streamable HTTP sessions (initialize, one tools/list, DELETE),
 * stateless requests, and rejected `server/discover` probes through `serve --http`, with the
 * serving host's resident memory after a warm-up and at the end. Raw fetch() keeps the client
 * cheap, so the figures are the server's.
 */
import { childEnv, hostPid, MAIN, ROOT, SERVE_FLAGS, writeConfig } from "../tests/_helpers.ts";
import { statusKb } from "./proc_status.ts";
import { closeRawSession, DISCOVER, INITIALIZE, post } from "../tests/_http.ts";

export interface ChurnPhase {
  name: string;
  /** Requests (or cycles) measured after the warm-up. */
  total: number;
  seconds: number;
  rssStartKb: number;
  rssEndKb: number;
  /** After each tenth of `total`. */
  rssKb: number[];
  /** Answers that were not what a healthy server gives (first few). */
  failures: string[];
  failureCount: number;
}

export interface ChurnOptions {
  /** Cycles (or requests) per phase after the warm-up. */
  total: number;
  warmUp: number;
  concurrency: number;
}

interface ChurnServer extends AsyncDisposable {
  url: string;
  /** The serving host (the launcher's child that runs --no-restrict). */
  pid: number;
}

/** `serve --http` on loopback as users start it (through the restricted-host launcher). */
async function startServer(config: string, extra: string[]): Promise<ChurnServer> {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...SERVE_FLAGS,
      MAIN,
      "serve",
      "--http",
      "--port",
      String(port),
      "--config",
      config,
      "--log-level",
      "warn",
      ...extra,
    ],
    env: childEnv(),
    clearEnv: true,
    cwd: ROOT,
    stdin: "null",
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  const url = `http://127.0.0.1:${port}/mcp`;
  for (let i = 0;; i++) {
    try {
      const reply = await fetch(`http://127.0.0.1:${port}/`);
      await reply.body?.cancel();
      break;
    } catch (error) {
      if (i > 600) throw new Error(`the server did not start: ${error}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    pid: hostPid(child.pid),
    async [Symbol.asyncDispose]() {
      child.kill("SIGTERM");
      await child.status;
    },
  };
}

const INITIALIZED = { jsonrpc: "2.0", method: "notifications/initialized" };
const TOOLS_LIST = { jsonrpc: "2.0", id: 2, method: "tools/list" };

/** One whole session: initialize, initialized, tools/list, DELETE. Throws what went wrong. */
async function sessionCycle(url: string): Promise<void> {
  const init = await post(url, INITIALIZE);
  const session = init.headers.get("mcp-session-id");
  const initText = await init.text();
  if (init.status !== 200 || !session) {
    throw new Error(`initialize: ${init.status} ${initText.slice(0, 200)}`);
  }
  const initialized = await post(url, INITIALIZED, session);
  await initialized.body?.cancel();
  if (initialized.status !== 202) throw new Error(`initialized: ${initialized.status}`);
  const list = await post(url, TOOLS_LIST, session);
  const listText = await list.text();
  if (list.status !== 200 || !listText.includes("execute_code")) {
    throw new Error(`tools/list: ${list.status} ${listText.slice(0, 200)}`);
  }
  const ended = await closeRawSession(url, session);
  if (ended !== 200) throw new Error(`DELETE: ${ended}`);
}

/** One stateless request (the server answers it with a fresh, short-lived MCP server). */
async function statelessRequest(url: string): Promise<void> {
  const list = await post(url, TOOLS_LIST);
  const text = await list.text();
  if (list.status !== 200 || !text.includes("execute_code")) {
    throw new Error(`stateless tools/list: ${list.status} ${text.slice(0, 200)}`);
  }
}

/** A probe current Python clients send before initialize; the server refuses it. */
async function discoverProbe(url: string): Promise<void> {
  const reply = await post(url, DISCOVER);
  const text = await reply.text();
  if (reply.status !== 400 || !text.includes('"error"')) {
    throw new Error(`server/discover: ${reply.status} ${text.slice(0, 200)}`);
  }
}

async function measure(
  name: string,
  server: ChurnServer,
  step: (url: string) => Promise<void>,
  options: ChurnOptions,
): Promise<ChurnPhase> {
  const failures: string[] = [];
  let failureCount = 0;
  const run = async (total: number) => {
    let next = 0;
    await Promise.all(Array.from({ length: options.concurrency }, async () => {
      while (next < total) {
        next++;
        try {
          await step(server.url);
        } catch (error) {
          failureCount++;
          if (failures.length < 5) failures.push(String(error));
        }
      }
    }));
    // Closing a session finishes after its DELETE is answered.
    await new Promise((r) => setTimeout(r, 500));
  };
  await run(options.warmUp); // JIT, caches and heap at steady state
  const rssStartKb = statusKb(server.pid, "VmRSS")!;
  const started = performance.now();
  const rssKb: number[] = [];
  for (let tenth = 0; tenth < 10; tenth++) {
    await run(Math.round(options.total / 10));
    rssKb.push(statusKb(server.pid, "VmRSS")!);
  }
  const seconds = (performance.now() - started) / 1000;
  return {
    name,
    total: options.total,
    seconds,
    rssStartKb,
    rssEndKb: rssKb[9]!,
    rssKb,
    failures,
    failureCount,
  };
}

/** Runs the three phases: sessions and probes on one server, stateless on a second. */
export async function runChurn(options: ChurnOptions): Promise<ChurnPhase[]> {
  const dir = await Deno.makeTempDir();
  try {
    // No warm sandboxes: nothing here runs code, and the host's own memory is what is measured.
    const config = await writeConfig(dir, {
      settings: { pool_size: 0, permissions_dir: `${ROOT}permissions` },
    });
    const phases: ChurnPhase[] = [];
    {
      await using server = await startServer(config, []);
      phases.push(await measure("HTTP sessions opened and closed", server, sessionCycle, options));
      phases.push(await measure("rejected server/discover probes", server, discoverProbe, options));
    }
    {
      await using server = await startServer(config, ["--stateless"]);
      phases.splice(
        1,
        0,
        await measure("stateless requests (tools/list)", server, statelessRequest, options),
      );
    }
    return phases;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
