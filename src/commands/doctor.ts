/**
 * `doctor`: checks everything the server depends on and prints one table row per check, so a
 * user can see at a glance what is missing. Never throws; each check reports its own failure.
 */
import { type Config, loadConfig } from "../config/config.ts";
import type { Logger } from "../_util/log.ts";
import { escapeUnsafe } from "../_util/safe_text.ts";
import { Sandbox } from "../sandbox/launcher.ts";
import { computeHostGrants } from "../relaunch/restricted_relaunch.ts";
import { describeGrants, hostFlags } from "../relaunch/server_permissions.ts";
import {
  directResidentMemory,
  type ResidentMemory,
  unknownResidentMemory,
  WatchedResidentMemory,
} from "../sandbox/resident_memory.ts";
import { memoryWatcherCommand } from "../sandbox/sandbox_command.ts";
import { locateRuntime, type SandboxRuntime } from "../sandbox/runtime.ts";
import {
  ensureSnapshot,
  isSnapshotIntact,
  snapshotKey,
  snapshotPath,
} from "../sandbox/snapshot.ts";
import { UpstreamPool } from "../upstream/pool.ts";
import { createRedactor } from "../policy/redaction.ts";
import { defaultTransportFactory } from "../upstream/transport.ts";
import { NETWORK_VARIABLES } from "../upstream/network_env.ts";
import { readEnv } from "../config/environment.ts";
import { PYODIDE_VERSION } from "../_util/version.ts";
import { counted } from "../_util/counted.ts";
import { openPackageSources } from "../packages/open_package_sources.ts";
import { preloadRefusal } from "../packages/preload_check.ts";

export interface Check {
  name: string;
  ok: boolean;
  /** Passed, with something to look at (a server that will not start, say). */
  warn?: boolean;
  detail: string;
}

export async function runDoctor(configPath: string | undefined, log: Logger): Promise<Check[]> {
  const checks: Check[] = [];
  const check = async (name: string, run: () => Promise<string | Omit<Check, "name" | "ok">>) => {
    try {
      const found = await run();
      checks.push({ name, ok: true, ...(typeof found === "string" ? { detail: found } : found) });
    } catch (error) {
      checks.push({ name, ok: false, detail: (error as Error).message.split("\n")[0]! });
    }
  };

  await check("deno", () => {
    const [major, minor] = Deno.version.deno.split(".").map(Number);
    if (major! < 2 || (major === 2 && minor! < 5)) {
      throw new Error(`Deno ${Deno.version.deno} is too old (2.5 or newer)`);
    }
    return Promise.resolve(`${Deno.version.deno} at ${Deno.execPath()}`);
  });
  let runtime: SandboxRuntime | null = null;
  await check("pyodide files", async () => {
    runtime = locateRuntime();
    for (const file of runtime.pyodideAssets) await Deno.stat(file);
    return `${PYODIDE_VERSION} in ${runtime.pyodideDir}`;
  });
  let snapshot: string | null = null;
  await check("snapshot", async () => {
    if (!runtime) throw new Error("needs the Pyodide files");
    const path = snapshotPath(runtime.cacheDir, await snapshotKey());
    const fresh = await isSnapshotIntact(path);
    snapshot = await ensureSnapshot(runtime, log);
    return fresh ? `cached at ${path}` : `built now at ${path}`;
  });
  await check("host permissions", async () => {
    if (Deno.build.standalone) {
      return "all (a compiled binary keeps the permissions it was built with)";
    }
    const { grants, scrub } = await computeHostGrants({ configPath, http: null, extraRead: [] });
    hostFlags(grants); // refuses what Deno cannot express
    return scrub(describeGrants(grants));
  });
  let memory: ResidentMemory = unknownResidentMemory;
  await check("memory limit", async () => {
    if (!runtime) throw new Error("needs the Pyodide files");
    // The server from source has no /proc access (least privilege): check its way of reading.
    if (Deno.build.standalone && await directResidentMemory.read(Deno.pid) !== null) {
      memory = directResidentMemory;
      return "enforced (this process reads /proc)";
    }
    const watched = new WatchedResidentMemory(memoryWatcherCommand(runtime), log);
    if (await watched.read(Deno.pid) === null) {
      await watched.close();
      throw new Error("not enforced: /proc is unreadable (only V8's heap flag applies)");
    }
    memory = watched;
    return "enforced (through the memory watcher process)";
  });
  let config: Config | null = null;
  await check("config", async () => {
    config = await loadConfig({ path: configPath });
    const warnings = config.notes.filter((n) => n.level === "warn").map((n) => n.message);
    const entries = config.servers.length + config.unavailable.length;
    const notStarted = config.unavailable.length
      ? ` (${config.unavailable.length} not started)`
      : "";
    const detail = `${config.path}: ${counted(entries, "server")}${notStarted}, profiles ${
      [...config.profiles.keys()].join(", ")
    }${warnings.length ? `; ${warnings.join("; ")}` : ""}`;
    return { detail, warn: warnings.length > 0 || notStarted !== "" };
  });
  await check("preload", async () => {
    if (!runtime || !config) throw new Error("needs the runtime and config");
    const c = config as Config;
    const preloading = [...c.profiles.values()].filter((p) => (p.preload ?? []).length > 0);
    if (preloading.length === 0) return "no profile preloads packages";
    // As the start resolves them: one that cannot be had stops it (serve logs why, and every
    // call says so), which a doctor that passed would not have told.
    const { pyodideDir, cacheDir } = runtime as SandboxRuntime;
    const packages = await openPackageSources(c.settings, pyodideDir, cacheDir);
    const found: string[] = [];
    for (const profile of preloading) {
      const resolved = await packages.resolve(profile.preload!, profile.net);
      const problem = resolved.problems.length > 0
        ? resolved.problems.join("; ")
        : preloadRefusal(resolved.packages);
      if (problem) throw new Error(`profile "${profile.name}": ${problem}`);
      found.push(`${profile.name}: ${counted(resolved.packages.length, "package")}`);
    }
    return found.join(", ");
  });
  await check("sandbox", async () => {
    if (!runtime || !snapshot || !config) throw new Error("needs the runtime, snapshot and config");
    const c = config as Config;
    const profile = c.profiles.get(c.settings.default_profile)!;
    const started = performance.now();
    await using sandbox = new Sandbox({ runtime, snapshotPath: snapshot, profile, log, memory });
    const outcome = await sandbox.execute({
      code: "import sys\n'.'.join(map(str, sys.version_info[:3]))",
      timeoutMs: 30_000,
      memoryBytes: profile.limits.memory_mb * 1024 * 1024,
      outputBytes: 4096,
    }, { callTool: () => Promise.resolve({ error: { kind: "invalid", message: "none" } }) });
    if (!outcome.reply?.ok) throw new Error(outcome.stop?.message ?? "the test script failed");
    return `Python ${outcome.reply.result} ran in a fresh sandbox (${
      Math.round(performance.now() - started)
    } ms)`;
  });
  await check("network", () => {
    const set = NETWORK_VARIABLES.filter((name) => readEnv(name));
    return Promise.resolve(
      set.length === 0
        ? "no proxy or CA variables set"
        : `${set.join(", ")} passed on to stdio servers`,
    );
  });
  if (config) {
    const c = config as Config;
    // A failed server's stderr may quote a secret (a proxy's password too); doctor's table is a
    // log as well.
    const redact = createRedactor(c.secrets);
    const upstream = new UpstreamPool({
      servers: c.servers,
      unavailable: c.unavailable,
      transports: defaultTransportFactory,
      log,
      redact: redact.text,
    });
    await upstream.start();
    for (const server of upstream.snapshot()) {
      checks.push({
        name: `server ${server.server}`,
        ok: server.error === undefined,
        detail: server.error ?? counted(server.tools.length, "tool"),
      });
    }
    await upstream.close();
  }
  await memory.close();
  return checks;
}

export function formatChecks(checks: Check[]): string {
  const width = Math.max(...checks.map((c) => c.name.length));
  // A detail may quote an upstream server (its stderr, its tools): escaped for the terminal.
  const rows = checks.map((c) =>
    `${c.ok ? (c.warn ? "warn" : "ok  ") : "FAIL"}  ${c.name.padEnd(width)}  ${
      escapeUnsafe(c.detail)
    }`
  );
  const failed = checks.filter((c) => !c.ok).length;
  rows.push(failed === 0 ? "\nAll checks passed." : `\n${failed} check(s) failed.`);
  return rows.join("\n") + "\n";
}
