/**
 * CPU per fresh sandbox against the floor (bench/floor_boot.ts), interleaved: a sandbox process
 * as the pool starts it (the production flags and worker), booted, sent `print(1)`, its CPU read
 * from /proc once it has answered; the same under a profile with `optimize_compute`; and the
 * floor program on the same snapshot.
 */
import { fileURLToPath as fromFileUrl } from "node:url";
import { locateRuntime } from "../src/sandbox/runtime.ts";
import { ensureSnapshot } from "../src/sandbox/snapshot.ts";
import { sandboxCommand } from "../src/sandbox/sandbox_command.ts";
import { SANDBOX_V8_TUNING } from "../src/sandbox/profile.ts";
import { silentLogger } from "../src/_util/log.ts";
import { plainProfile } from "../tests/_profiles.ts";
import { rawSandbox } from "../tests/_sandbox.ts";

function cpuSeconds(pid: number): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ").map(Number);
  return (f[11]! + f[12]!) / 100;
}

/** One sandbox: spawn, boot, `print(1)`, its CPU-s at the answer. */
async function sandboxRun(snapshot: string, optimizeCompute = false): Promise<number> {
  const runtime = locateRuntime();
  const profile = { ...plainProfile("bench"), optimize_compute: optimizeCompute };
  const sandbox = rawSandbox(sandboxCommand(runtime, snapshot, profile));
  try {
    await sandbox.boot();
    await sandbox.send({
      jsonrpc: "2.0",
      id: 1,
      method: "execute",
      params: { code: "print(1)", result_bytes: 1000 },
    });
    while ((await sandbox.next()).id !== 1);
    return cpuSeconds(sandbox.pid);
  } finally {
    await sandbox.kill();
  }
}

async function floorRun(snapshot: string): Promise<number> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      `--v8-flags=${SANDBOX_V8_TUNING}`,
      fromFileUrl(new URL("./floor_boot.ts", import.meta.url)),
      snapshot,
    ],
    stderr: "null",
  }).output();
  const last = new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!;
  return (JSON.parse(last) as { cpu_s: number }).cpu_s;
}

export async function runFloor(
  rounds: number,
): Promise<{ sandbox: number[]; hinted: number[]; floor: number[] }> {
  const snapshot = await ensureSnapshot(locateRuntime(), silentLogger);
  await floorRun(snapshot); // compiles and caches the floor program's own modules
  const sandbox: number[] = [];
  const hinted: number[] = [];
  const floor: number[] = [];
  for (let i = 0; i < rounds; i++) {
    sandbox.push(await sandboxRun(snapshot));
    hinted.push(await sandboxRun(snapshot, true));
    floor.push(await floorRun(snapshot));
  }
  return { sandbox, hinted, floor };
}
