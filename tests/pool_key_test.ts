/**
 * Warm sandboxes are kept apart by what they were booted with, not by the profile's name: a
 * profile changed in place, or an internal override that keeps the name, never gets a sandbox
 * booted for other folders, hosts or memory.
 */
import assert from "node:assert/strict";
import { silentLogger } from "../src/_util/log.ts";
import { SandboxPool } from "../src/sandbox/pool.ts";
import { DEFAULT_LIMITS, type Profile } from "../src/sandbox/profile.ts";
import type { Sandbox } from "../src/sandbox/launcher.ts";

/** A stand-in for a sandbox process: the pool only needs `ready`, `exited` and disposal. */
function fakeSandbox(profile: Profile): Sandbox {
  const exited = Promise.withResolvers<Deno.CommandStatus>();
  return {
    profile,
    ready: Promise.resolve(),
    exited: exited.promise,
    kill: () => exited.resolve({ success: false, code: 137, signal: "SIGKILL" }),
    [Symbol.asyncDispose]: () => {
      exited.resolve({ success: false, code: 137, signal: "SIGKILL" });
      return Promise.resolve();
    },
  } as unknown as Sandbox;
}

Deno.test("SandboxPool hands out sandboxes booted for the profile's settings, not its name", async () => {
  const base: Profile = {
    name: "work",
    description: "",
    folders: [],
    net: [],
    allowed_tools: ["*"],
    approve: [],
    limits: { ...DEFAULT_LIMITS },
  };
  const wider: Profile = { ...base, net: ["example.com"] };
  const toolsOnly: Profile = {
    ...base,
    allowed_tools: [],
    approve: [],
    limits: { ...base.limits, timeout_s: 5 },
  };
  const pool = new SandboxPool({
    warm: 1,
    maxBooting: 4,
    maxWaiting: 8,
    launch: fakeSandbox,
    log: silentLogger,
  });
  pool.warmUp(base);
  await new Promise((resolve) => setTimeout(resolve, 10));
  const forWider = await pool.acquire(wider);
  assert.deepEqual(forWider.profile.net, ["example.com"], "booted with the wider profile's hosts");
  const forTools = await pool.acquire(toolsOnly);
  assert.deepEqual(forTools.profile.net, [], "same process settings share the warm set");
  await pool.close();
});
