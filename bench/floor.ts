/**
 * CPU per fresh sandbox against the floor (bench/floor_boot.ts), interleaved: a sandbox process
 * as the pool starts it (the production flags and worker), booted, sent `print(1)`, its CPU read
 * from /proc once it has answered; and the floor program on the same snapshot.
 */
import { fileURLToPath as fromFileUrl } from "node:url";
import { locateRuntime } from "../src/sandbox/runtime.ts";
import { ensureSnapshot } from "../src/sandbox/snapshot.ts";
import { sandboxCommand } from "../src/sandbox/sandbox_command.ts";
import { SANDBOX_V8_TUNING } from "../src/sandbox/profile.ts";
import { silentLogger } from "../src/_util/log.ts";
import { plainProfile } from "../tests/_profiles.ts";

function cpuSeconds(pid: number): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ").map(Number);
  return (f[11]! + f[12]!) / 100;
}

/** One sandbox: spawn, boot, `print(1)`, its CPU-s at the answer. */
async function sandboxRun(snapshot: string): Promise<number> {
  const runtime = locateRuntime();
  const command = sandboxCommand(runtime, snapshot, plainProfile("bench"));
  const child = new Deno.Command(command.command, {
    args: command.args,
    env: command.env,
    clearEnv: true,
    cwd: command.cwd,
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const writer = child.stdin.getWriter();
  const send = (message: unknown) =>
    writer.write(new TextEncoder().encode(JSON.stringify(message) + "\n"));
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  const until = async (done: (message: { id?: number; method?: string }) => boolean) => {
    for (;;) {
      const newline = buffer.indexOf("\n");
      if (newline >= 0) {
        const message = JSON.parse(buffer.slice(0, newline));
        buffer = buffer.slice(newline + 1);
        if (done(message)) return;
        continue;
      }
      const { value, done: ended } = await lines.read();
      if (ended) throw new Error("the sandbox exited");
      buffer += value;
    }
  };
  await send({ jsonrpc: "2.0", method: "boot", params: command.boot });
  await until((m) => m.method === "ready");
  await send({
    jsonrpc: "2.0",
    id: 1,
    method: "execute",
    params: { code: "print(1)", result_bytes: 1000 },
  });
  await until((m) => m.id === 1);
  const cpu = cpuSeconds(child.pid);
  child.kill("SIGKILL");
  await child.status;
  await lines.cancel().catch(() => {});
  return cpu;
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

export async function runFloor(rounds: number): Promise<{ sandbox: number[]; floor: number[] }> {
  const snapshot = await ensureSnapshot(locateRuntime(), silentLogger);
  await floorRun(snapshot); // compiles and caches the floor program's own modules
  const sandbox: number[] = [];
  const floor: number[] = [];
  for (let i = 0; i < rounds; i++) {
    sandbox.push(await sandboxRun(snapshot));
    floor.push(await floorRun(snapshot));
  }
  return { sandbox, floor };
}
