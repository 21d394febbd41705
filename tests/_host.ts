/**
 * What `createHost` needs, for tests of the MCP host in process: a given executor, an empty
 * catalog, sessions over stand-in sandboxes, a temporary skills folder.
 */
import { silentLogger } from "../src/_util/log.ts";
import { Catalog } from "../src/catalog/catalog.ts";
import type { Executor } from "../src/execution/executor.ts";
import { ParkedRuns } from "../src/host/approvals.ts";
import type { HostDeps } from "../src/host/server.ts";
import { TaskStore } from "../src/host/tasks.ts";
import type { Sandbox } from "../src/sandbox/launcher.ts";
import type { Profile } from "../src/sandbox/profile.ts";
import { SessionManager } from "../src/sandbox/sessions.ts";
import { SkillStore } from "../src/skills/skill_store.ts";

/** A stand-in sandbox for the session manager (it only needs these). */
function fakeSandbox(profile: Profile) {
  const exited = Promise.withResolvers<Deno.CommandStatus>();
  const sandbox = {
    profile,
    ready: Promise.resolve(),
    exited: exited.promise,
    disposed: false,
    kill: () => exited.resolve({ success: false, code: 137, signal: "SIGKILL" }),
    [Symbol.asyncDispose]: () => {
      sandbox.disposed = true;
      sandbox.kill();
      return Promise.resolve();
    },
  };
  return sandbox;
}

export async function testHostDeps(executor: Executor, started: Promise<void>) {
  const skillsDir = await Deno.makeTempDir();
  const catalog = new Catalog([]);
  const sessions = new SessionManager({
    max: 4,
    idleMs: 60_000,
    launch: (p) => fakeSandbox(p) as unknown as Sandbox,
    log: silentLogger,
  });
  const listeners = new Set<() => void>();
  let description = "Run Python (test description).";
  const deps: HostDeps = {
    started,
    executor,
    describeExecuteCode: () => description,
    catalog: () => catalog,
    onCatalogChange: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    profiles: ["default", "work"],
    defaultProfile: "default",
    openAI: null,
    agent: () => {
      throw new Error("the agent is not used in these tests");
    },
    skills: {
      store: new SkillStore(skillsDir, silentLogger),
      catalog: () => catalog,
      analyse: () => Promise.reject(new Error("the analysis is not used in these tests")),
      readOnly: false,
    },
    sessions,
    parked: new ParkedRuns({ timeoutMs: 1000 }),
    tasks: new TaskStore(),
    taskAfterMs: 5000,
  };
  return {
    deps,
    sessions,
    listeners,
    setDescription: (text: string) => description = text,
    cleanup: async () => {
      await sessions.closeAll();
      await Deno.remove(skillsDir, { recursive: true });
    },
  };
}
