/**
 * Assembles a running code-mode service from a config: the snapshot, the sandbox pool, the
 * executor and the MCP host. Used by every CLI command; `close` tears it all down.
 */
import { join } from "node:path";
import { readEnv } from "./config/environment.ts";
import { type Config, loadConfig, type ServerConfig } from "./config/config.ts";
import { fingerprint } from "./catalog/python_stubs.ts";
import { describeExecuteCode } from "./host/description.ts";
import { type Executor, SandboxExecutor } from "./execution/executor.ts";
import { StartingExecutor } from "./execution/starting_executor.ts";
import { StoppingExecutor } from "./execution/stopping_executor.ts";
import { type Analysis, analysisScript } from "./analysis/python_analysis.ts";
import { SkillStore } from "./skills/skill_store.ts";
import { hostOwner } from "./_util/host_owner.ts";
import { OBSERVED_RESULTS_FILE, ObservedResults } from "./catalog/observed_results.ts";
import { TokenCounter } from "./catalog/token_count.ts";
import { SessionManager } from "./sandbox/sessions.ts";
import { openResidentMemory } from "./sandbox/resident_memory.ts";
import { memoryWatcherCommand } from "./sandbox/sandbox_command.ts";
import { openPackageSources } from "./packages/open_package_sources.ts";
import { ToolCatalog } from "./upstream/tool_catalog.ts";
import type { AgentDeps } from "./agent/agent.ts";
import type { ChatModel } from "./agent/chat_model.ts";
import { openAIConfigFromEnv, type OpenAIModelConfig } from "./agent/model_config.ts";
import { type Profile, profileSummary } from "./sandbox/profile.ts";
import { createHost, type Host, type HostContext } from "./host/server.ts";
import { ParkedRuns } from "./host/approvals.ts";
import { TaskStore } from "./host/tasks.ts";
import { type Logger, scrubbedLogger } from "./_util/log.ts";
import { runtimeTracing } from "./_util/tracing.ts";
import { createRedactor } from "./policy/redaction.ts";
import { openAuditLog } from "./execution/audit_log.ts";
import { type ModuleSource, Sandbox } from "./sandbox/launcher.ts";
import { SandboxPool } from "./sandbox/pool.ts";
import { availableMemoryMb, poolCeiling } from "./sandbox/pool_sizing.ts";
import { locateRuntime, runtimeTrustedPaths, type SandboxRuntime } from "./sandbox/runtime.ts";
import {
  ensurePreloadedSnapshot,
  ensureSnapshot,
  inUseMark,
  keepInUse,
  type PreloadedSnapshot,
  removeStalePreloads,
} from "./sandbox/snapshot.ts";
import type { PackageSources } from "./packages/package_sources.ts";
import { preloadRefusal } from "./packages/preload_check.ts";
import { UpstreamPool } from "./upstream/pool.ts";
import { defaultTransportFactory, type TransportFactory } from "./upstream/transport.ts";

export interface AppOptions {
  configPath?: string;
  log: Logger;
  /** Override the pool size from the config (the one-shot `run` command uses 0). */
  poolSize?: number;
  /** How upstream servers are reached (tests may inject their own). */
  transports?: TransportFactory;
  /**
   * How long start-up waits for upstream servers before it counts as started (the rest connect
   * in the background). Default: until each has connected or failed once; `serve` uses
   * `SERVE_UPSTREAM_WAIT_MS`, so one slow server does not hold up every client's tools/list.
   */
  upstreamWaitMs?: number;
  /**
   * Checks the command's own arguments against the config as soon as it is read, before
   * anything starts (throws to refuse them: a `--profile` the config lacks).
   */
  checkArguments?: (config: Config) => void;
}

/** How long `serve` lets upstream servers connect before it lists tools without the slow ones. */
export const SERVE_UPSTREAM_WAIT_MS = 10_000;

export interface App extends AsyncDisposable {
  config: Config;
  runtime: SandboxRuntime;
  /**
   * Resolves once the service has started: snapshots ready, the pool warming, the upstream
   * servers connected (or failed). Rejects with why the service cannot run scripts.
   */
  started: Promise<void>;
  pool: SandboxPool;
  executor: Executor;
  upstream: UpstreamPool;
  tools: ToolCatalog;
  /** The agent's API model settings from the environment (null when none is set). */
  openAI: OpenAIModelConfig | null;
  agentDeps(model: ChatModel): AgentDeps;
  /**
   * A new MCP server over the shared service (one per stdio connection, HTTP session or
   * stateless HTTP request), optionally running scripts through another executor.
   */
  createHost(context: HostContext, overrides?: { executor?: Executor }): Host;
  /** Persistent sessions, closed by owner when the connection or caller that owns them ends. */
  sessions: SessionManager;
  /** Tool calls running or finished as Tasks, cancelled by owner like the sessions. */
  tasks: TaskStore;
  /**
   * Cancels every execution, each answered CANCELLED; resolves once they have answered. A
   * shutdown calls it before closing connections, so that every caller gets its answer.
   */
  stopExecutions(): Promise<void>;
  close(): Promise<void>;
}

/** How long a stop gives the MCP handlers of cancelled executions to send their answers. */
const ANSWERS_WRITTEN_MS = 250;

/** Opens the service and waits until it has fully started (commands that run one thing). */
export async function startApp(options: AppOptions): Promise<App> {
  const app = await openApp(options, { logStartFailure: false });
  try {
    await app.started;
  } catch (error) {
    await app.close();
    throw error;
  }
  return app;
}

/**
 * Opens the service: the config is read and checked before this returns (a bad config fails
 * here), while the slow parts (the snapshot, package sources and preloaded snapshots, the
 * upstream servers) go on in the background. `started` says when they are done; scripts and
 * tool requests wait for it (see StartingExecutor, holdUntilStarted), the MCP handshake does not.
 */
export async function openApp(
  options: AppOptions,
  { logStartFailure = true } = {},
): Promise<App> {
  const runtime = locateRuntime();
  const config = await loadConfig({
    path: options.configPath,
    runtimePaths: runtimeTrustedPaths(runtime),
  });
  options.checkArguments?.(config);
  const openAI = openAIConfigFromEnv(readEnv);
  const redact = createRedactor([
    ...config.secrets,
    ...(openAI ? [openAI.apiKey] : []),
  ]);
  const log = scrubbedLogger(options.log, redact.text);
  for (const note of config.notes) log[note.level](`${config.path}: ${note.message}`);
  const audit = config.settings.audit_log ? openAuditLog(config.settings.audit_log) : null;
  const memory = openResidentMemory(memoryWatcherCommand(runtime), log);
  const upstream = new UpstreamPool({
    servers: config.servers,
    unavailable: config.unavailable,
    transports: options.transports ?? defaultTransportFactory,
    log,
    onChange: () => tools.refresh(),
    redact: redact.text,
  });
  const observed = config.settings.observe_results
    ? new ObservedResults(
      join(runtime.cacheDir, OBSERVED_RESULTS_FILE),
      log,
      serverIdentity(config.servers),
    )
    : undefined;
  const tokens = new TokenCounter();
  const tools: ToolCatalog = new ToolCatalog(() => upstream.snapshot(), redact, {
    observed,
    countTokens: (text) => tokens.count(text),
  });
  const skills = new SkillStore(config.settings.skills_dir, log);
  // Sandboxes boot while the upstream servers connect; they install the tool modules after.
  // The token encoder loads once the servers are connected, not beside them: evaluating it holds
  // the event loop for ~0.14 s, which at start delayed the answer to the client's `initialize`
  // (433 -> 289-338 ms from spawn, measured).
  const toolsReady = Promise.all([
    upstream.start({ waitMs: options.upstreamWaitMs }).then(() => tokens.load()),
    skills.load(),
    observed?.load(),
  ]).then(() => {});
  // What every sandbox gets installed: the tool modules and the saved skills.
  const modules: ModuleSource = {
    ready: toolsReady,
    version: () => `${tools.version}.${skills.version}`,
    packages: () => ({ ...tools.current.packages(), ...skills.packages(tools.current) }),
  };
  // Aborted by close(): a snapshot build still running must not outlive the server.
  const starting = new AbortController();
  const sandboxFiles = prepareSandboxFiles(config, runtime, log, starting.signal);
  // Sandboxes are launched only once these are known: the executor waits for them.
  let files: SandboxFiles | null = null;
  const launch = (profile: Profile, persistent: boolean) => {
    if (files === null) throw new Error("Cannot launch a sandbox: the server has not started");
    return new Sandbox({
      runtime,
      snapshotPath: files.preloaded.get(profile.name)?.path ?? files.snapshotPath,
      preloadDir: files.preloaded.get(profile.name)?.preloadDir,
      profile,
      log,
      memory,
      persistent,
      modules,
    });
  };
  const warm = options.poolSize ?? config.settings.pool_size;
  const pool = new SandboxPool({
    warm,
    // A command that runs one script (pool size 0) keeps nothing warm, however it is called.
    maxReady: warm === 0 ? 0 : poolCeiling({
      cores: navigator.hardwareConcurrency,
      availableMb: availableMemoryMb((path) => Deno.readTextFileSync(path)),
    }, warm),
    maxBooting: 2,
    maxWaiting: config.settings.max_waiting,
    launch: (profile) => launch(profile, false),
    log,
  });
  const sessions = new SessionManager({
    max: config.settings.max_sessions,
    maxPerOwner: config.settings.max_sessions_per_connection,
    idleMs: config.settings.session_idle_s * 1000,
    launch: (profile) => launch(profile, true),
    log,
  });
  const defaultProfile = config.profiles.get(config.settings.default_profile)!;
  let closed = false;
  let stopMarking = () => {};
  const sandboxesReady = sandboxFiles.then((ready) => {
    files = ready;
    if (!closed) {
      stopMarking = keepInUse([
        inUseMark(ready.snapshotPath),
        ...[...ready.preloaded.values()].map((p) => p.preloadDir),
      ]);
      pool.warmUp(defaultProfile);
    }
    return ready;
  });
  const started = Promise.all([sandboxesReady, toolsReady]).then(() => {
    if (closed) return; // shut down before it started: its upstreams were stopped, not down
    const servers = upstream.snapshot();
    const down = servers.filter((s) => s.error !== undefined).map((s) => s.server);
    log.info(
      `started: ${servers.length - down.length} of ${servers.length} upstream servers connected` +
        (down.length > 0 ? ` (not: ${down.join(", ")})` : "") +
        (warm > 0 ? "; sandboxes warming" : ""), // none for `tools`, `run`
    );
  });
  started.catch((error) => {
    // A start-up cut short by close() (a client that left early) is not a failure to report;
    // a command that waits for `started` (startApp) reports the failure itself.
    if (!closed && logStartFailure) log.error("Cannot start", { error: (error as Error).message });
  });
  const allowed = new Set(config.settings.allowed_profiles);
  // Spans of each execution when Deno exports OpenTelemetry (OTEL_DENO=true), else none.
  const tracing = runtimeTracing();
  // Read once, from a file made in the cache (read-write folders' entries go back to it).
  const owner = hostOwner(runtime.cacheDir);
  if (owner === undefined) {
    log.warn(
      "cannot tell the server's own user (the cache folder is not writable): entries a " +
        "script gives other users in read-write folders are not given back",
      {
        cache: runtime.cacheDir,
      },
    );
  }
  const sandboxExecutor = (packages: PackageSources) =>
    new SandboxExecutor({
      pool,
      profile: (name) => (allowed.has(name) ? config.profiles.get(name) : undefined),
      unavailableProfile: (name) =>
        allowed.has(name) ? config.unavailableProfiles.get(name) : undefined,
      defaultProfile: defaultProfile.name,
      tools: {
        approvalTimeoutMs: config.settings.approval_timeout_s * 1000,
        catalog: () => tools.current,
        session: (server) => upstream.settledSession(server),
        callTimeoutMs: config.settings.tool_timeout_s * 1000,
        observe: observed,
      },
      log,
      redact,
      audit: audit ? (record) => audit.write(record) : undefined,
      sessions,
      packages,
      tracing,
      owner,
    });
  const executor = new StoppingExecutor(
    new StartingExecutor(
      started.then(() => sandboxesReady).then((ready) => sandboxExecutor(ready.packages)),
      defaultProfile.name,
    ),
  );
  const rules = (name: string | undefined) =>
    describeExecuteCode(config.profiles.get(name ?? defaultProfile.name) ?? defaultProfile, "");
  const analyser = analysisProfile(defaultProfile);
  // The agent and skill analysis run through the executor of the host they serve, so an HTTP
  // session's concurrency cap covers them too.
  const analyseWith = (run: Executor) => async (code: string): Promise<Analysis> => {
    const outcome = await run.execute({ code: analysisScript(code) }, {
      profileOverride: analyser,
      purpose: "analysis",
    });
    if (!outcome.success) throw new Error(outcome.diagnostics?.message ?? "the analysis failed");
    return outcome.result as Analysis;
  };
  const agentDepsWith = (run: Executor) => (model: ChatModel): AgentDeps => ({
    model,
    executor: run,
    catalog: () => tools.current,
    sandboxRules: rules,
    analyse: analyseWith(run),
    log,
    redact,
    guard: (work, signal) => executor.guard(work, signal),
  });
  const agentDeps = agentDepsWith(executor);
  const parked = new ParkedRuns({ timeoutMs: config.settings.approval_timeout_s * 1000 });
  const tasks = new TaskStore();
  const close = async () => {
    closed = true;
    starting.abort();
    stopMarking();
    tasks.close();
    parked.close();
    await Promise.all([pool.close(), upstream.close(), sessions.closeAll()]);
    await memory.close();
    audit?.close();
  };
  return {
    config,
    runtime,
    started,
    pool,
    executor,
    upstream,
    tools,
    openAI,
    agentDeps,
    sessions,
    tasks,
    async stopExecutions() {
      if (await executor.stop() === 0) return;
      // The handlers that awaited them still write their answers (after their live output).
      await new Promise((resolve) => setTimeout(resolve, ANSWERS_WRITTEN_MS));
    },
    createHost: (context, overrides = {}) => {
      const run = overrides.executor ?? executor;
      return createHost({
        started: toolsReady,
        guard: (work) => executor.guard(work),
        executor: run,
        describeExecuteCode: () => describeExecuteCode(defaultProfile, tools.current.index().text),
        catalog: () => tools.current,
        onCatalogChange: (listener) => tools.onChange(listener),
        profiles: config.settings.allowed_profiles,
        profileSummary: profileSummary(
          config.settings.allowed_profiles.flatMap((name) => config.profiles.get(name) ?? []),
        ),
        defaultProfile: defaultProfile.name,
        openAI,
        agent: agentDepsWith(run),
        skills: {
          store: skills,
          catalog: () => tools.current,
          analyse: analyseWith(run),
          readOnly: config.settings.skills_read_only,
        },
        sessions,
        parked,
        tasks,
        taskAfterMs: config.settings.task_after_s * 1000,
      }, context);
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

/**
 * A server's name with a fingerprint of how it is started (command and arguments, or URL; never
 * its environment or headers, which may hold secrets): the key its observed result types are
 * kept under.
 */
function serverIdentity(servers: readonly ServerConfig[]): (server: string) => string {
  const identities = new Map(servers.map((s) => {
    const how = s.kind === "stdio" ? [s.command, ...s.args] : [s.url];
    return [s.name, `${s.name}@${fingerprint(JSON.stringify(how))}`];
  }));
  return (server) => identities.get(server) ?? server;
}

/**
 * The profile for analysing generated code: the default profile's sandbox (so it shares that
 * warm pool; the analyser only parses the code, never runs it), no tools, room for the code.
 */
function analysisProfile(base: Profile): Profile {
  return {
    ...base,
    allowed_tools: [],
    limits: { ...base.limits, timeout_s: 15, code_chars: 1_000_000, code_lines: 100_000 },
  };
}

/** What launching sandboxes needs, known once the snapshots are ready. */
interface SandboxFiles {
  snapshotPath: string;
  packages: PackageSources;
  /** The snapshot of each profile that preloads packages, by profile name. */
  preloaded: Map<string, PreloadedSnapshot>;
}

async function prepareSandboxFiles(
  config: Config,
  runtime: SandboxRuntime,
  log: Logger,
  signal: AbortSignal,
): Promise<SandboxFiles> {
  const snapshotPath = await ensureSnapshot(runtime, log, signal);
  const packages = await openPackageSources(config.settings, runtime.pyodideDir, runtime.cacheDir);
  const preloaded = await preloadSnapshots(config, packages, runtime, log, signal);
  return { snapshotPath, packages, preloaded };
}

/**
 * The snapshot of each profile that preloads packages, by profile name: its packages resolved
 * (with the profile's own `net`) and checked, then built into a snapshot when not cached. A
 * package that cannot be had stops the start, naming the profile and the package.
 */
async function preloadSnapshots(
  config: Config,
  packages: PackageSources,
  runtime: SandboxRuntime,
  log: Logger,
  signal: AbortSignal,
): Promise<Map<string, PreloadedSnapshot>> {
  const snapshots = new Map<string, PreloadedSnapshot>();
  for (const profile of config.profiles.values()) {
    if (!profile.preload) continue;
    const found = await packages.resolve(profile.preload, profile.net);
    const problem = found.problems.length > 0
      ? found.problems.join("; ")
      : preloadRefusal(found.packages);
    if (problem) {
      throw new Error(`Cannot preload packages for profile "${profile.name}": ${problem}`);
    }
    snapshots.set(
      profile.name,
      await ensurePreloadedSnapshot(runtime, found.packages, log, signal),
    );
  }
  await removeStalePreloads(runtime.cacheDir, [...snapshots.values()], log).catch(() => {});
  return snapshots;
}
