/**
 * `deno task bench`: measures the server end to end through real MCP clients over stdio and
 * writes the figures to BENCHMARKS.md. Timings live here, never in tests.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { encode } from "gpt-tokenizer";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { runSoak } from "./soak.ts";
import { runChurn } from "./churn.ts";
import { runPackageBench } from "./packages.ts";
import { runBurst } from "./burst.ts";
import { runFloor } from "./floor.ts";
import { runReadBench, runScrubBench } from "./replies.ts";
import {
  catalogOf,
  INDEX_TOKEN_BUDGET,
  indexTokensAt,
  loadCatalogFixtures,
  loadQueries,
  measure,
  ourRanker,
  plainBm25Ranker,
  type Quality,
} from "./search_quality.ts";
import { statusKb, untilQuiet } from "./proc_status.ts";
import { locatePeer, preparePeer } from "./peer.ts";
import { type Contender, peerContender, runSideBySide, type Series } from "./side_by_side.ts";
import { hostPid, sandboxPids, SERVE_FLAGS } from "../tests/_helpers.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const MAIN = join(ROOT, "main.ts");
const SERVERS = join(ROOT, "tests/fixtures/servers.json");

interface Stats {
  n: number;
  median: number;
  p95: number;
  min: number;
  max: number;
}

function stats(samples: number[]): Stats {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
  return { n: sorted.length, median: at(0.5), p95: at(0.95), min: sorted[0]!, max: sorted.at(-1)! };
}

const fmt = (ms: number) => `${ms.toFixed(ms < 10 ? 2 : 1)} ms`;
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));
// Figures go to stderr and BENCHMARKS.md.
const log = (line: string) => Deno.stderr.writeSync(new TextEncoder().encode(line + "\n"));

function env(extra: Record<string, string> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME", "CODEMODE_CACHE_DIR"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) out[name] = value;
  }
  return { ...out, ...extra };
}

async function connect(args: string[], extraEnv: Record<string, string> = {}) {
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: ["run", ...SERVE_FLAGS, MAIN, "serve", "--log-level", "warn", ...args],
    env: env(extraEnv),
    stderr: "inherit",
    cwd: ROOT,
  });
  const client = new Client({ name: "bench", version: "0" });
  await client.connect(transport);
  return { client, pid: hostPid(transport.pid!), rootPid: transport.pid! };
}

async function execute(client: Client, code: string): Promise<Record<string, unknown>> {
  const reply = await client.callTool({ name: "execute_code", arguments: { code } }, undefined, {
    timeout: 300_000,
  });
  const result = reply.structuredContent as Record<string, unknown>;
  if (!result?.success) {
    throw new Error(`bench script failed: ${JSON.stringify(reply).slice(0, 500)}`);
  }
  return result;
}

async function startToFirstResult(extraEnv: Record<string, string>): Promise<number> {
  const t0 = performance.now();
  const { client } = await connect([], extraEnv);
  await execute(client, "print(1)");
  const ms = performance.now() - t0;
  await client.close();
  return ms;
}

const lines: string[] = [];
const record = (line: string) => {
  lines.push(line);
  log(line);
};

async function benchSandbox(): Promise<void> {
  record("## Sandbox execution (issue 2)\n");
  record("| measure | figure | target |");
  record("| --- | --- | --- |");

  const freshCache = await Deno.makeTempDir();
  const first = await startToFirstResult({ CODEMODE_CACHE_DIR: freshCache });
  record(`| first-ever start to first result (builds the snapshot) | ${fmt(first)} | (once) |`);
  await Deno.remove(freshCache, { recursive: true });

  await startToFirstResult({}); // makes sure the default cache holds the current snapshot
  const starts: number[] = [];
  for (let i = 0; i < 5; i++) starts.push(await startToFirstResult({}));
  const s = stats(starts);
  record(
    `| server start to first result, snapshot cached (median / p95 of ${s.n}) | ${
      fmt(s.median)
    } / ${fmt(s.p95)} | ≤ 1000 ms |`,
  );

  const { client, pid } = await connect([]);
  await execute(client, "print(1)");
  const warm: number[] = [];
  const inHost: number[] = [];
  for (let i = 0; i < 60; i++) {
    // Let the pool refill so every call meets a booted sandbox and no boot beside it: this is
    // the warm path.
    await untilQuiet(pid);
    const t0 = performance.now();
    const result = await execute(client, "print(1)");
    warm.push(performance.now() - t0);
    inHost.push(result.duration_ms as number);
  }
  const w = stats(warm.slice(10));
  const h = stats(inHost.slice(10));
  record(
    `| warm execute_code print(1), fresh process each (median / p95 of ${w.n}) | ${
      fmt(w.median)
    } / ${fmt(w.p95)} | median ≤ 10 ms |`,
  );

  record(
    `| of which inside the host (execute_code's duration_ms: sandbox hand-off, run, result) | ${
      fmt(h.median)
    } / ${fmt(h.p95)} | |`,
  );
  const peaks = sandboxPids(pid).map((p) => statusKb(p, "VmHWM")).filter((x): x is number =>
    x !== null
  );
  if (peaks.length > 0) {
    record(
      `| peak RSS of one pooled (idle, booted) sandbox | ${
        (Math.max(...peaks) / 1024).toFixed(0)
      } MB | (~190 MB expected) |`,
    );
  }

  const total = 40;
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: 4 }, async () => {
    while (next < total) {
      next++;
      await execute(client, "sum(range(1000))");
    }
  }));
  const perSecond = total / ((performance.now() - t0) / 1000);
  record(
    `| sustained fresh-sandbox executions at concurrency 4 (${total} runs) | ${
      perSecond.toFixed(2)
    } /s | ≥ 3 /s |`,
  );
  await client.close();
}

async function benchPackages(rounds: number): Promise<void> {
  record("\n## Packages (issue 15): fresh sandbox to first result, importing a package\n");
  const samples = await runPackageBench({
    connect: (config, cacheDir) => connect(["--config", config], { CODEMODE_CACHE_DIR: cacheDir }),
    async execute(client, args) {
      const reply = await client.callTool({ name: "execute_code", arguments: args }, undefined, {
        timeout: 300_000,
      });
      const result = reply.structuredContent as Record<string, unknown>;
      if (!result?.success) {
        throw new Error(`bench script failed: ${JSON.stringify(reply).slice(0, 500)}`);
      }
      return result;
    },
    untilQuiet,
  }, rounds);
  const none = stats(samples.none);
  record(
    "A package of 41 pure-Python modules with one dependency, from a local Pyodide mirror folder; " +
      `each case run ${rounds} times, interleaved, one call at a time against a refilled pool.\n`,
  );
  record("| case | median / p95 | median vs no package |");
  record("| --- | --- | --- |");
  const rows: [string, number[]][] = [
    ["no package (`print(1)`)", samples.none],
    ["installed at run time (`packages`)", samples.runtime],
    ["preloaded in the profile's snapshot (`preload`)", samples.preloaded],
  ];
  for (const [what, values] of rows) {
    const s = stats(values);
    record(
      `| ${what} | ${fmt(s.median)} / ${fmt(s.p95)} | ${(s.median / none.median).toFixed(2)}× |`,
    );
  }
}

async function benchTools(): Promise<void> {
  record("\n## Tool calls from Python (issue 3)\n");
  const fsDir = await Deno.makeTempDir();
  const memoryDir = await Deno.makeTempDir();
  const testEnv = { TEST_FS_DIR: fsDir, TEST_MEMORY_DIR: memoryDir, TEST_SECRET: "bench-secret" };
  const { client } = await connect(["--config", SERVERS], testEnv);

  // Baseline: the same upstream server, called directly by an MCP client.
  const direct = new Client({ name: "bench-direct", version: "0" });
  await direct.connect(
    new StdioClientTransport({
      command: Deno.execPath(),
      args: [
        "run",
        "--no-prompt",
        "-A",
        "npm:@modelcontextprotocol/server-everything@2026.8.31",
        "stdio",
      ],
      env: env(),
      stderr: "ignore",
      cwd: ROOT,
    }),
  );
  const directSamples: number[] = [];
  for (let i = 0; i < 120; i++) {
    const t0 = performance.now();
    await direct.callTool({ name: "echo", arguments: { message: `m${i}` } });
    directSamples.push(performance.now() - t0);
  }
  await direct.close();

  const result = await execute(
    client,
    [
      "import time",
      "from mcp_tools import everything",
      "samples = []",
      "for i in range(90):",
      "    t0 = time.perf_counter()",
      "    everything.echo(message=f'm{i}')",
      "    samples.append((time.perf_counter() - t0) * 1000)",
      "t0 = time.perf_counter()",
      "for i in range(100):",
      "    everything.echo(message=f'n{i}')",
      "total = (time.perf_counter() - t0) * 1000",
      "{'samples': samples[20:], 'total': total}",
    ].join("\n"),
  );
  const r = result.result as { samples: number[]; total: number };
  const d = stats(directSamples.slice(20));
  const p = stats(r.samples);
  record("| measure | median | p95 | target |");
  record("| --- | --- | --- | --- |");
  record(
    `| echo called directly by an MCP client (baseline) | ${fmt(d.median)} | ${fmt(d.p95)} | |`,
  );
  record(
    `| echo called from Python in the sandbox, through the host | ${fmt(p.median)} | ${
      fmt(p.p95)
    } | |`,
  );
  record(
    // Medians of two independent samples subtract meaningfully; their tails do not (unpaired).
    `| added by code mode per call | ${
      fmt(p.median - d.median)
    } | (tails not paired) | ≤ 2 ms at the median |`,
  );
  record(`| 100 sequential tool calls in one script (total) | ${fmt(r.total)} | | |`);

  const tools = await client.listTools();
  const description = (tools.tools as { name: string; description?: string }[])
    .find((t) => t.name === "execute_code")!.description!;
  const raw: unknown[] = [];
  for (
    const [server, args] of [
      ["filesystem", [
        "run",
        "--no-prompt",
        "--allow-env",
        `--allow-read=${fsDir}`,
        "npm:@modelcontextprotocol/server-filesystem@2026.8.31",
        fsDir,
      ]],
      ["memory", ["run", "--no-prompt", "-A", "npm:@modelcontextprotocol/server-memory@2026.8.31"]],
      ["everything", [
        "run",
        "--no-prompt",
        "-A",
        "npm:@modelcontextprotocol/server-everything@2026.8.31",
        "stdio",
      ]],
    ] as const
  ) {
    const c = new Client({ name: "bench-list", version: "0" });
    await c.connect(
      new StdioClientTransport({
        command: Deno.execPath(),
        args: [...args],
        env: env({ MEMORY_FILE_PATH: join(memoryDir, "m.jsonl") }),
        stderr: "ignore",
        cwd: ROOT,
      }),
    );
    raw.push({ server, ...(await c.listTools()) });
    await c.close();
  }
  const ours = encode(description).length;
  const theirs = encode(JSON.stringify(raw)).length;
  record(`\n| tokens (gpt-tokenizer, o200k) | count |`);
  record(`| --- | --- |`);
  record(`| raw tools/list JSON of filesystem + memory + everything | ${theirs} |`);
  record(`| execute_code description with the tool index | ${ours} |`);
  record(`| ratio | ${(theirs / ours).toFixed(1)}× fewer (target ≥ 5×) |`);
  await client.close();
  await Deno.remove(fsDir, { recursive: true });
  await Deno.remove(memoryDir, { recursive: true });
}

function benchSearch(): void {
  const fixtures = loadCatalogFixtures();
  const tools = fixtures.reduce((n, f) => n + f.tools.length, 0);
  const count = (text: string) => encode(text).length;
  const catalog = catalogOf(fixtures, count);
  const sets: [string, ReturnType<typeof loadQueries>][] = [["project set", loadQueries()]];
  const heldOut = Deno.env.get("CODEMODE_SEARCH_HELDOUT");
  if (heldOut) sets.push(["held-out set", loadQueries(heldOut)]);
  record(
    `\n## Tool search (issue 17): ${tools} real tools from ${fixtures.length} servers on npm\n`,
  );
  record("| queries | ranking | recall@1 | recall@5 | MRR |");
  record("| --- | --- | --- | --- | --- |");
  const row = (set: string, name: string, q: Quality) =>
    record(
      `| ${set} (${q.queries}) | ${name} | ${q.recallAt1.toFixed(2)} | ${
        q.recallAt5.toFixed(2)
      } | ${q.mrr.toFixed(2)} |`,
    );
  for (const [set, queries] of sets) {
    const ours = measure(ourRanker(catalog), queries);
    row(set, "search_tools", ours);
    row(set, "plain BM25, names + descriptions", measure(plainBm25Ranker(fixtures), queries));
    for (const miss of ours.misses.slice(0, 40)) {
      log(
        `  miss (${set}): "${miss.query}" wanted ${miss.expected.join(" / ")}, got ${
          miss.got.join(", ")
        }`,
      );
    }
  }
  record(`\nTargets: recall@5 ≥ 0.9 and MRR ≥ 0.75, above plain BM25.\n`);
  record(`| tools in the catalog | index tokens (o200k) | index form | budget |`);
  record(`| --- | --- | --- | --- |`);
  for (const n of [10, 100, 500]) {
    const at = indexTokensAt(fixtures, n, count);
    record(`| ${at.tools} | ${at.tokens} | ${at.level} | ${INDEX_TOKEN_BUDGET} |`);
  }
}

function benchReplies(): void {
  const read = runReadBench(5);
  const sdk = stats(read.sdk).median;
  const ours = stats(read.ours).median;
  record(`\n## Large tool replies on the host's thread\n`);
  record(
    `Reading one ${
      (read.messageBytes / 1e6).toFixed(1)
    } MB reply off a stdio pipe in 64 KB chunks, in process, median of ${read.sdk.length}:\n`,
  );
  record("| read buffer | time | ratio |");
  record("| --- | --- | --- |");
  record(`| the SDK's ReadBuffer (baseline) | ${fmt(sdk)} | 1.00× |`);
  record(
    `| ours, MessageLines (src/rpc/message_lines.ts) | ${fmt(ours)} | ${
      (ours / sdk).toFixed(2)
    }× |`,
  );
  const bench = runScrubBench(5);
  const parse = stats(bench.parse);
  record(
    `\nScrubbing secrets from a ${(bench.replyBytes / 1e6).toFixed(1)} MB tool reply.`,
  );
  record(
    "In process: the redactor the server builds from its secrets, over the reply's text and over " +
      "the parsed reply (every string and key), against `JSON.parse` of the same reply in the " +
      `same run (${fmt(parse.median)}). Median of ${parse.n}.\n`,
  );
  record("| secrets configured | text | parsed reply | text / JSON.parse |");
  record("| --- | --- | --- | --- |");
  for (const c of bench.cases) {
    const text = stats(c.text).median;
    record(
      `| ${c.name} | ${fmt(text)} | ${fmt(stats(c.json).median)} | ${
        (text / parse.median).toFixed(2)
      }× |`,
    );
  }
}

async function benchPeer(): Promise<void> {
  record("\n## Side by side with the shared-interpreter peer (issue 16)\n");
  const ours: Contender = {
    name: "ours",
    async start() {
      const { client, rootPid } = await connect([]);
      return { client, pid: rootPid };
    },
    async startFirstEver() {
      const cache = await Deno.makeTempDir();
      const { client, rootPid } = await connect([], { CODEMODE_CACHE_DIR: cache });
      return {
        client,
        pid: rootPid,
        cleanup: () => Deno.remove(cache, { recursive: true }),
      };
    },
    run: async (client, code) => void await execute(client, code),
  };
  // The same server with the default profile's `optimize_compute` on: the trade-off it makes
  // (faster compute, dearer boots) measured in every run beside the default.
  const hinted = await optimizeComputeConfig();
  const oursHinted: Contender = {
    name: "ours, optimize_compute",
    async start() {
      const { client, rootPid } = await connect(["--config", hinted.config]);
      return { client, pid: rootPid };
    },
    run: ours.run,
  };
  const contenders = [ours, oursHinted];
  const peer = locatePeer();
  const prepared = "dir" in peer
    ? await preparePeer(peer.dir, { sdk: "1.32.2", zod: "4.6.7", pyodideVersion: "314.0.7" })
    : null;
  if (prepared) {
    contenders.push(
      peerContender(
        prepared,
        env({ NODE_EXTRA_CA_CERTS: Deno.env.get("NODE_EXTRA_CA_CERTS") ?? "" }),
      ),
    );
  }
  const figures = await runSideBySide(contenders, {
    starts: 5,
    warmCalls: 40,
    computeRuns: 5,
    agentPaceMs: 1500,
  });
  await prepared?.cleanup();
  await hinted.cleanup();
  record(
    prepared
      ? "pydantic's mcp-run-python (one shared Pyodide interpreter, no isolation between calls), " +
        "from the checkout in `CODEMODE_BENCH_PEER`, on the same Pyodide, offline (see " +
        "bench/peer.ts for what is put in place to run it so). Calls interleaved, one at a time.\n"
      : `peer not available (${"missing" in peer ? peer.missing : ""}): only our figures.\n`,
  );
  record(
    "`ours, optimize_compute`: the same server and config with the default profile's " +
      "`optimize_compute` on (compilation hints, see SANDBOX_V8_TUNING; not the default).\n",
  );
  const names = contenders.map((c) => c.name);
  // Each of ours against the peer, when it ran.
  const ratioNames = prepared ? names.filter((n) => n !== "peer") : [];
  const ratioHeads = ratioNames.map((n) => ` | ${n} / peer`).join("");
  record(`| measure | ${names.join(" | ")}${ratioHeads} |`);
  record(
    `| --- | ${names.map(() => "---").join(" | ")}${ratioNames.map(() => " | ---").join("")} |`,
  );
  const row = (what: string, s: Series, show: (x: number[]) => [string, number]) => {
    const cells = names.map((n) => s[n]!.length > 0 ? show(s[n]!) : ["", 0] as [string, number]);
    const theirs = cells[names.indexOf("peer")]?.[1] ?? 0;
    const ratios = ratioNames.map((n) => {
      const mine = cells[names.indexOf(n)]![1];
      return theirs > 0 && mine > 0 ? ` | ${(mine / theirs).toFixed(2)}×` : " | —";
    }).join("");
    record(`| ${what} | ${cells.map((c) => c[0]).join(" | ")}${ratios} |`);
  };
  const median = (x: number[]): [string, number] => [fmt(stats(x).median), stats(x).median];
  const medianP95 = (x: number[]): [string, number] => {
    const s = stats(x);
    return [`${fmt(s.median)} / ${fmt(s.p95)}`, s.median];
  };
  const one = (unit: string, digits: number) => (x: number[]): [string, number] => [
    `${x[0]!.toFixed(digits)} ${unit}`,
    x[0]!,
  ];
  row("spawn → `initialize` answered (median of 5)", figures.initialize, median);
  row(
    "the same on a first-ever start (no snapshot yet; ours only)",
    figures.initializeFirstEver,
    median,
  );
  row("spawn → first `print(1)` result (median of 5)", figures.firstResult, median);
  row(
    "warm `print(1)` at an agent's pace (1.5 s apart), median / p95 of 40",
    figures.warm,
    medianP95,
  );
  row(
    "warm 2 KB script (30 statements and branches) at the same pace, median / p95 of 40",
    figures.warmAgentSized,
    medianP95,
  );
  for (const [what, s] of Object.entries(figures.compute)) row(`${what} (median of 5)`, s, median);
  row(
    "CPU per execution, 20 back to back (whole process tree)",
    figures.cpuPerExecution,
    one("CPU-s", 3),
  );
  row(`CPU while idle for ${5} s, after warm-up (whole tree)`, figures.idleCpu, one("CPU-s", 3));
  row("server tree RSS after warm-up", figures.treeRssMb, one("MB", 0));
}

/**
 * A config like the checkout's (the same servers) whose default profile is the checkout's
 * default with `optimize_compute` on, in a temporary folder the caller removes.
 */
async function optimizeComputeConfig(): Promise<{ config: string; cleanup(): Promise<void> }> {
  const dir = await Deno.makeTempDir({ prefix: "codemode-bench-hints-" });
  const permissions = join(dir, "permissions");
  await Deno.mkdir(permissions, { mode: 0o700 });
  const profile = JSON.parse(await Deno.readTextFile(join(ROOT, "permissions", "default.json")));
  await Deno.writeTextFile(
    join(permissions, "default.json"),
    JSON.stringify({ ...profile, optimize_compute: true }),
  );
  const servers = JSON.parse(await Deno.readTextFile(join(ROOT, "mcp_servers.json")));
  const config = join(dir, "mcp_servers.json");
  await Deno.writeTextFile(
    config,
    JSON.stringify({ ...servers, settings: { ...servers.settings, permissions_dir: permissions } })
      .replaceAll("${CONFIG_DIR}", ROOT.replace(/\/$/, "")),
  );
  return { config, cleanup: () => Deno.remove(dir, { recursive: true }) };
}

async function benchFloor(): Promise<void> {
  const rounds = 7;
  const { sandbox, hinted, floor } = await runFloor(rounds);
  const s = stats(sandbox);
  const h = stats(hinted);
  const f = stats(floor);
  record(`\n## CPU per fresh sandbox against the floor (issue 16)\n`);
  record(
    "The floor: a Deno process that boots Pyodide from the same snapshot and runs `print(1)`, " +
      "nothing else (bench/floor_boot.ts). A sandbox: as the pool starts it, booted, warmed up, " +
      "optimized (see SANDBOX_V8_TUNING), then `print(1)`. Whole-process CPU, " +
      `${rounds} of each, interleaved.\n`,
  );
  record("| measure | median | p95 |");
  record("| --- | --- | --- |");
  record(`| floor | ${f.median.toFixed(3)} CPU-s | ${f.p95.toFixed(3)} CPU-s |`);
  record(`| fresh sandbox | ${s.median.toFixed(3)} CPU-s | ${s.p95.toFixed(3)} CPU-s |`);
  record(`| sandbox / floor | ${(s.median / f.median).toFixed(2)}× | |`);
  record(
    `| fresh sandbox, profile with \`optimize_compute\` | ${h.median.toFixed(3)} CPU-s | ${
      h.p95.toFixed(3)
    } CPU-s |`,
  );
  record(`| that sandbox / floor | ${(h.median / f.median).toFixed(2)}× | |`);
}

async function benchBurst(): Promise<void> {
  const r = await runBurst(200, 10);
  record(`\n## Bursts in one HTTP session (issue 16): ${r.total} calls, ${r.inFlight} in flight\n`);
  record(
    "One Streamable HTTP session of `serve --http` (at most 4 of its calls run at once; the " +
      "others wait their turn, up to `max_waiting`); each call a fresh sandbox.\n",
  );
  const s = stats(r.latenciesMs);
  record("| measure | figure | target |");
  record("| --- | --- | --- |");
  record(`| calls that did not succeed | ${r.failures.length} of ${r.total} | 0 |`);
  record(`| throughput | ${(r.total / r.seconds).toFixed(2)} calls/s | |`);
  record(`| call latency, median / p95 (waiting included) | ${fmt(s.median)} / ${fmt(s.p95)} | |`);
  record(
    `| sandboxes kept ready: before → right after → ${r.idleSeconds} s idle | ${r.sandboxes.before} → ${r.sandboxes.after} → ${r.sandboxes.idle} | grows, then shrinks |`,
  );
  for (const f of r.failures.slice(0, 5)) record(`\n- ${f}`);
}

function processesMatching(patterns: string[]): number {
  let count = 0;
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const cmd = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`);
      if (patterns.some((p) => cmd.includes(p))) count++;
    } catch {
      // gone
    }
  }
  return count;
}

function tempEntries(): Set<string> {
  const dirs = ["/tmp", Deno.env.get("TMPDIR") ?? "/tmp"];
  const names = new Set<string>();
  for (const dir of new Set(dirs)) {
    for (const entry of Deno.readDirSync(dir)) names.add(`${dir}/${entry.name}`);
  }
  return names;
}

async function benchSoak(total: number): Promise<void> {
  record(`\n## Soak (issue 5): ${total} mixed executions through one server\n`);
  const fsDir = await Deno.makeTempDir();
  const memoryDir = await Deno.makeTempDir();
  const patterns = [
    "src/sandbox/worker_bundle.js",
    "src/sandbox/memory_watcher.ts",
    "--no-restrict",
    "@modelcontextprotocol/server-",
  ];
  const processesBefore = processesMatching(patterns);
  const tempBefore = tempEntries();
  const { client, pid } = await connect(["--config", SERVERS], {
    TEST_FS_DIR: fsDir,
    TEST_MEMORY_DIR: memoryDir,
    TEST_SECRET: "soak-secret",
  });
  await runSoak(client, 50); // warm-up: JIT, caches, pools at steady state
  const rssStart = statusKb(pid, "VmRSS")!;
  const report = await runSoak(client, total);
  const rssEnd = statusKb(pid, "VmRSS")!;
  await client.close();
  for (let i = 0; i < 100 && processesMatching(patterns) > processesBefore; i++) await delay(100);
  const leftProcesses = processesMatching(patterns) - processesBefore;
  const tempAfter = [...tempEntries()].filter((p) =>
    !tempBefore.has(p) && p !== fsDir && p !== memoryDir
  );
  const growth = ((rssEnd - rssStart) / rssStart) * 100;
  record("| measure | figure | target |");
  record("| --- | --- | --- |");
  record(
    `| executions (${
      [...report.perCase].map(([k, v]) => `${k} ${v}`).join(", ")
    }) | ${report.total} in ${report.seconds.toFixed(0)} s | |`,
  );
  record(`| unexpected outcomes | ${report.unexpected.length} | 0 |`);
  record(
    `| host RSS after warm-up → after soak | ${(rssStart / 1024).toFixed(0)} MB → ${
      (rssEnd / 1024).toFixed(0)
    } MB (${growth >= 0 ? "+" : ""}${growth.toFixed(1)} %) | < 10 % growth |`,
  );
  record(`| child processes left after shutdown | ${leftProcesses} | 0 |`);
  const named = tempAfter.length > 0 ? ` (${tempAfter.join(", ")})` : "";
  record(`| temporary files left | ${tempAfter.length}${named} | 0 |`);
  for (const u of report.unexpected.slice(0, 10)) record(`\n- unexpected ${u.name}: ${u.detail}`);
  await Deno.remove(fsDir, { recursive: true });
  await Deno.remove(memoryDir, { recursive: true });
}

const growth = (start: number, end: number) => {
  const percent = ((end - start) / start) * 100;
  return `${percent >= 0 ? "+" : ""}${percent.toFixed(1)} %`;
};

async function benchChurn(total: number): Promise<void> {
  // V8 sizes its heap for this allocation rate over the first ~1,000 cycles and then holds
  // steady; the leak this guards against grew without end (about 125 MB per 1,000 sessions), so
  // growth is measured from a warm-up past that point. Both columns below show the first step.
  const warmUp = 2000;
  const tenth = Math.round(total / 10);
  record(`\n## HTTP session churn (issue 12): ${total} of each through serve --http\n`);
  record(
    `Measured ${new Date().toISOString()} with raw fetch() at concurrency 4; a session is ` +
      "initialize, notifications/initialized, tools/list, DELETE; a probe is a `server/discover` " +
      "POST without a session (refused). RSS: the serving host process (VmRSS), sampled after " +
      `${warmUp} warm-up cycles, after each tenth of the run, and at the end.\n`,
  );
  const phases = await runChurn({ total, warmUp, concurrency: 4 });
  const mb = (kb: number) => `${(kb / 1024).toFixed(0)} MB`;
  record(
    `| phase | done | host RSS: after warm-up → after ${tenth} more → end | growth from warm-up | growth after the first ${tenth} | target |`,
  );
  record("| --- | --- | --- | --- | --- | --- |");
  for (const p of phases) {
    const first = p.rssKb[0]!;
    record(
      `| ${p.name} | ${p.total} in ${p.seconds.toFixed(0)} s (${
        (p.total / p.seconds).toFixed(0)
      } /s), ${p.failureCount} failed | ${mb(p.rssStartKb)} → ${mb(first)} → ${mb(p.rssEndKb)} | ${
        growth(p.rssStartKb, p.rssEndKb)
      } | ${growth(first, p.rssEndKb)} | < 10 %, 0 failed |`,
    );
  }
  record(
    `\nRSS after each tenth of the run (the step in the first ${tenth} is V8 sizing its heap for ` +
      "this allocation rate: in process, the live heap after a full GC stays at about 17 MB):\n",
  );
  for (const p of phases) {
    record(`- ${p.name}: ${p.rssKb.map((kb) => mb(kb)).join(", ")}`);
    for (const f of p.failures) record(`  - failed: ${f}`);
  }
}

/** The part of a section heading that stays the same from run to run ("## Soak"). */
const sectionKey = (heading: string) => heading.replace(/ \(issue.*$/, "").replace(/:.*$/, "");

/**
 * BENCHMARKS.md text with the sections in `fresh` put in place of their old versions, each with
 * a line saying when it was measured (the header's date is the last full run's).
 */
export function mergeSections(old: string, fresh: string, measured: string): string {
  const split = (text: string) => {
    const sections: string[][] = [[]];
    for (const line of text.split("\n")) {
      if (line.startsWith("## ")) sections.push([]);
      sections.at(-1)!.push(line);
    }
    return sections.map((s) => s.join("\n").trim());
  };
  const key = (section: string) => sectionKey(section.split("\n")[0]!);
  const [head, ...kept] = split(old);
  const updates = split(fresh).slice(1).map((section) => {
    const [heading, ...rest] = section.split("\n");
    return [
      heading,
      "",
      `_Measured again on ${measured}; the header's date is the last full run's._`,
      ...rest,
    ]
      .join("\n");
  });
  const merged = kept.map((s) => updates.find((u) => key(u) === key(s)) ?? s);
  for (const u of updates) if (!kept.some((s) => key(s) === key(u))) merged.push(u);
  return [head, ...merged].join("\n\n") + "\n";
}

if (import.meta.main) {
  const started = new Date();
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      soak: { type: "string", default: "1000" },
      churn: { type: "string", default: "10000" },
      "package-rounds": { type: "string", default: "20" },
      // Run only these parts (repeatable): sandbox, peer, floor, burst, tools, search, replies,
      // packages, soak, churn.
      only: { type: "string", multiple: true },
    },
  });
  const parts = [
    "sandbox",
    "peer",
    "floor",
    "burst",
    "tools",
    "search",
    "replies",
    "packages",
    "soak",
    "churn",
  ];
  const only = values.only?.flatMap((o) => o.split(",")) ?? parts;
  const unknown = only.find((o) => !parts.includes(o));
  if (unknown) {
    throw new TypeError(`Cannot run the bench: no part "${unknown}" (${parts.join(", ")})`);
  }
  const soakRuns = Number(values.soak);
  const churnRuns = Number(values.churn);
  if (only.includes("sandbox")) await benchSandbox();
  if (only.includes("search")) benchSearch();
  if (only.includes("replies")) benchReplies();
  if (only.includes("peer")) await benchPeer();
  if (only.includes("floor")) await benchFloor();
  if (only.includes("burst")) await benchBurst();
  if (only.includes("tools")) await benchTools();
  if (only.includes("packages")) await benchPackages(Number(values["package-rounds"]));
  if (only.includes("soak") && soakRuns > 0) await benchSoak(soakRuns);
  if (only.includes("churn") && churnRuns > 0) await benchChurn(churnRuns);
  const header = [
    "# Benchmarks",
    "",
    `Written by \`deno task bench\` on ${started.toISOString()} (Deno ${Deno.version.deno},`,
    `${navigator.hardwareConcurrency} cores). Every figure is measured end to end through a real`,
    "MCP client over stdio (the HTTP churn: raw requests to `serve --http`); sandboxes are fresh",
    "processes per execution.",
    "",
  ];
  const file = join(ROOT, "BENCHMARKS.md");
  // A partial run (--only) replaces its own sections and keeps the others.
  const full = values.only === undefined;
  const old = full ? "" : await Deno.readTextFile(file).catch(() => "");
  const text = [...header, ...lines, ""].join("\n");
  await Deno.writeTextFile(
    file,
    old
      ? mergeSections(
        old,
        text,
        `${started.toISOString().slice(0, 10)} (\`--only ${only.join(",")}\`)`,
      )
      : text,
  );
  log(`\nwritten to BENCHMARKS.md${full ? "" : ` (sections: ${only.join(", ")})`}`);
}
