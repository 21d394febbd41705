/** Sandboxes for in-process tests. */
import { silentLogger } from "../src/_util/log.ts";
import { Sandbox } from "../src/sandbox/launcher.ts";
import { directResidentMemory } from "../src/sandbox/resident_memory.ts";
import { locateRuntime } from "../src/sandbox/runtime.ts";
import { ensureSnapshot } from "../src/sandbox/snapshot.ts";
import { plainProfile } from "./_profiles.ts";

/** A session's (persistent) sandbox of the plain profile, booted from the shared snapshot. */
export async function sessionSandbox(): Promise<Sandbox> {
  const runtime = locateRuntime();
  return new Sandbox({
    runtime,
    snapshotPath: await ensureSnapshot(runtime, silentLogger),
    log: silentLogger,
    memory: directResidentMemory,
    persistent: true,
    profile: plainProfile("t"),
  });
}
