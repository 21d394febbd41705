/**
 * Assembles a running code-mode service from a config: the snapshot, the sandbox pool, the
 * executor and the MCP host. Used by every CLI command; `close` tears it all down.
 */
import { type Config, loadConfig } from "./config.ts";
import { describeExecuteCode } from "./host/description.ts";
import { createExecutor, type Executor, noTools } from "./host/executor.ts";
import { createHost, type Host } from "./host/server.ts";
import type { Logger } from "./log.ts";
import { Sandbox } from "./sandbox/launcher.ts";
import { SandboxPool } from "./sandbox/pool.ts";
import { locateRuntime, type SandboxRuntime } from "./sandbox/runtime.ts";
import { ensureSnapshot } from "./sandbox/snapshot.ts";

export interface AppOptions {
  configPath?: string;
  log: Logger;
  /** Override the pool size from the config (the one-shot `run` command uses 0 or 1). */
  poolSize?: number;
}

export interface App extends AsyncDisposable {
  config: Config;
  runtime: SandboxRuntime;
  pool: SandboxPool;
  execute: Executor;
  createHost(): Host;
  close(): Promise<void>;
}

export async function startApp(options: AppOptions): Promise<App> {
  const { log } = options;
  const runtime = locateRuntime();
  const config = await loadConfig({
    path: options.configPath,
    protectedPaths: [runtime.pyodideDir, runtime.cacheDir],
  });
  const snapshotPath = await ensureSnapshot(runtime, log);
  const pool = new SandboxPool({
    warm: options.poolSize ?? config.settings.pool_size,
    maxBooting: 2,
    maxWaiting: config.settings.max_waiting,
    launch: (profile) => new Sandbox({ runtime, snapshotPath, profile, log }),
    log,
  });
  const defaultProfile = config.profiles.get(config.settings.default_profile)!;
  pool.warmUp(defaultProfile);
  const allowed = new Set(config.settings.allowed_profiles);
  const tools = noTools;
  const execute = createExecutor({
    pool,
    profile: (name) => (allowed.has(name) ? config.profiles.get(name) : undefined),
    defaultProfile: defaultProfile.name,
    tools,
    log,
  });
  const close = async () => {
    await pool.close();
  };
  return {
    config,
    runtime,
    pool,
    execute,
    createHost: () =>
      createHost({
        execute,
        describeExecuteCode: () => describeExecuteCode(defaultProfile, ""),
        profiles: config.settings.allowed_profiles,
        defaultProfile: defaultProfile.name,
      }),
    close,
    [Symbol.asyncDispose]: close,
  };
}
