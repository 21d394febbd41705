/**
 * Side by side with the shared-interpreter peer (see peer.ts): the same scripts through real
 * MCP clients over stdio, the two servers' calls interleaved so both meet the same machine
 * noise. Every figure is a wall time at the client, except CPU (the server's process tree, from
 * /proc) and memory.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { PeerCommand } from "./peer.ts";
import { treeCpuSeconds, treeRssMb, untilQuiet } from "./proc_status.ts";

/** One server under test: how to start it and how to run a script on it. */
export interface Contender {
  name: string;
  /** Starts the server; `pid` is the root of its process tree. Resolves once initialized. */
  start(): Promise<{ client: Client; pid: number }>;
  /** Starts it as on a first-ever start (no cache), if that differs; the caller disposes. */
  startFirstEver?(): Promise<{ client: Client; pid: number; cleanup(): Promise<void> }>;
  /** Runs `code`; throws unless it succeeded. */
  run(client: Client, code: string): Promise<void>;
}

export const COMPUTE_SCRIPTS = {
  "pure-Python loop, 2e6 iterations": "x = 0\nfor i in range(2_000_000):\n    x += i\nprint(x)",
  "JSON round trip of 1 MB": "import json\n" +
    "rows = [{'id': i, 'name': f'row {i}', 'tags': ['a', 'b'], 'score': i * 0.5} " +
    "for i in range(16_000)]\n" +
    "text = json.dumps(rows)\nassert len(text) > 1_000_000\nassert json.loads(text) == rows\n" +
    "print(len(text))",
} as const;

/**
 * A script of the size agents write (about 2 KB: 30 small statements and branches), for the
 * warm path when compiling is no longer negligible.
 */
export const AGENT_SIZED_SCRIPT = Array.from(
  { length: 30 },
  (_, i) => `x${i} = {'a': ${i}, 'b': [1, 2, 3]}\nif x${i}['a'] > 3:\n    y = x${i}['b'][0]`,
).join("\n") + "\nprint(y)\nx0";

export interface Series {
  /** Per contender name, the samples in ms (or CPU-s, or MB). */
  [contender: string]: number[];
}

export interface SideBySide {
  /** Spawn to the answer of `initialize`. */
  initialize: Series;
  /** The same on a first-ever start (ours: no snapshot yet); absent for a contender without one. */
  initializeFirstEver: Series;
  firstResult: Series;
  warm: Series;
  /** The same with `AGENT_SIZED_SCRIPT`. */
  warmAgentSized: Series;
  compute: Record<string, Series>;
  cpuPerExecution: Series;
  /** CPU-s the whole tree spent over `idleSeconds` with no call, after warm-up. */
  idleCpu: Series;
  treeRssMb: Series;
}

/** How long the idle CPU is watched. */
export const IDLE_SECONDS = 5;

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The peer as a contender: its `run_python_code` tool, JSON return mode. */
export function peerContender(command: PeerCommand, env: Record<string, string>): Contender {
  return {
    name: "peer",
    async start() {
      const transport = new StdioClientTransport({
        command: command.command,
        args: command.args,
        cwd: command.cwd,
        env,
        stderr: "ignore",
      });
      const client = new Client({ name: "bench", version: "0" });
      await client.connect(transport);
      return { client, pid: transport.pid! };
    },
    async run(client, code) {
      const reply = await client.callTool(
        { name: "run_python_code", arguments: { python_code: code } },
        undefined,
        { timeout: 300_000 },
      );
      const text = (reply.content as { type: string; text: string }[])[0]?.text ?? "";
      if (JSON.parse(text).status !== "success") throw new Error(`peer script failed: ${text}`);
    },
  };
}

async function timed(action: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await action();
  return performance.now() - t0;
}

/**
 * Measures every contender, round by round, each round visiting them in turn. `agentPaceMs` is
 * the gap between one server's warm calls (an agent thinking between two calls).
 */
export async function runSideBySide(
  contenders: Contender[],
  options: { starts: number; warmCalls: number; computeRuns: number; agentPaceMs: number },
): Promise<SideBySide> {
  const series = (): Series => Object.fromEntries(contenders.map((c) => [c.name, []]));
  const result: SideBySide = {
    initialize: series(),
    initializeFirstEver: series(),
    firstResult: series(),
    warm: series(),
    warmAgentSized: series(),
    compute: Object.fromEntries(Object.keys(COMPUTE_SCRIPTS).map((k) => [k, series()])),
    cpuPerExecution: series(),
    idleCpu: series(),
    treeRssMb: series(),
  };
  for (let i = 0; i < options.starts; i++) {
    for (const c of contenders) {
      const t0 = performance.now();
      const { client } = await c.start();
      result.initialize[c.name]!.push(performance.now() - t0);
      await client.close();
      if (c.startFirstEver) {
        const t1 = performance.now();
        const first = await c.startFirstEver();
        result.initializeFirstEver[c.name]!.push(performance.now() - t1);
        await first.client.close();
        await first.cleanup();
      }
    }
  }
  for (let i = 0; i < options.starts; i++) {
    for (const c of contenders) {
      let started: { client: Client } | null = null;
      result.firstResult[c.name]!.push(
        await timed(async () => {
          started = await c.start();
          await c.run(started.client, "print(1)");
        }),
      );
      await started!.client.close();
    }
  }

  const servers: ({ c: Contender; client: Client; pid: number })[] = [];
  for (const c of contenders) servers.push({ c, ...(await c.start()) });
  for (const { c, client } of servers) await c.run(client, "print(1)");
  // Warm calls at an agent's pace: each server sees one call per `agentPaceMs`. Before each
  // timed call, both servers are quiet too: what one does after a call (our pool boots the
  // replacement then) must not slow the other's.
  const gap = options.agentPaceMs / servers.length;
  const paced = async () => {
    await delay(gap);
    for (const { pid } of servers) await untilQuiet(pid);
  };
  const warmScripts: [string, Series][] = [
    ["print(1)", result.warm],
    [AGENT_SIZED_SCRIPT, result.warmAgentSized],
  ];
  for (const [code, into] of warmScripts) {
    for (let i = 0; i < options.warmCalls + 5; i++) {
      for (const { c, client } of servers) {
        await paced();
        const ms = await timed(() => c.run(client, code));
        if (i >= 5) into[c.name]!.push(ms);
      }
    }
  }
  await delay(options.agentPaceMs); // pools refilled
  const idleFrom = servers.map(({ pid }) => treeCpuSeconds(pid));
  await delay(IDLE_SECONDS * 1000);
  servers.forEach(({ c, pid }, i) => {
    result.idleCpu[c.name]!.push(treeCpuSeconds(pid) - idleFrom[i]!);
    result.treeRssMb[c.name]!.push(treeRssMb(pid));
  });
  for (const [what, code] of Object.entries(COMPUTE_SCRIPTS)) {
    for (let i = 0; i < options.computeRuns; i++) {
      for (const { c, client } of servers) {
        await paced();
        result.compute[what]![c.name]!.push(await timed(() => c.run(client, code)));
      }
    }
  }
  // CPU per execution, back to back: the whole tree's CPU over a run of executions.
  const backToBack = 20;
  for (const { c, client, pid } of servers) {
    await delay(options.agentPaceMs); // the pool refilled, nothing left over from before
    const before = treeCpuSeconds(pid);
    for (let i = 0; i < backToBack; i++) await c.run(client, "print(1)");
    await delay(options.agentPaceMs); // replacements booted: their CPU belongs to these runs
    result.cpuPerExecution[c.name]!.push((treeCpuSeconds(pid) - before) / backToBack);
  }
  for (const { client } of servers) await client.close();
  return result;
}
