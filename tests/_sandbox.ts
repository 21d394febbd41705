/** Sandboxes for in-process tests. */
import { silentLogger } from "../src/_util/log.ts";
import { Sandbox } from "../src/sandbox/launcher.ts";
import { directResidentMemory } from "../src/sandbox/resident_memory.ts";
import { locateRuntime } from "../src/sandbox/runtime.ts";
import { ensureSnapshot } from "../src/sandbox/snapshot.ts";
import { plainProfile } from "./_profiles.ts";
import type { SandboxCommand } from "../src/sandbox/sandbox_command.ts";

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

/**
 * A sandbox process started from `command` as the pool would, without the host: the caller
 * speaks the protocol itself (`send`, `next`). `extraV8Flags` are added to its V8 flags (a probe's
 * `--allow-natives-syntax`). Every line it writes must be a protocol message: `next` throws on
 * any other. `boot()` sends the boot message and waits for "ready".
 */
export function rawSandbox(command: SandboxCommand, extraV8Flags: string[] = []) {
  const args = command.args.map((arg) =>
    arg.startsWith("--v8-flags=") && extraV8Flags.length > 0
      ? `${arg},${extraV8Flags.join(",")}`
      : arg
  );
  const child = new Deno.Command(command.command, {
    args,
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
  const next = async (): Promise<Record<string, unknown>> => {
    for (;;) {
      const newline = buffer.indexOf("\n");
      if (newline >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        return JSON.parse(line);
      }
      const { value, done } = await lines.read();
      if (done) throw new Error("the sandbox exited");
      buffer += value;
    }
  };
  return {
    pid: child.pid,
    send,
    next,
    async boot(): Promise<void> {
      await send({ jsonrpc: "2.0", method: "boot", params: command.boot });
      while ((await next()).method !== "ready");
    },
    async kill(): Promise<void> {
      child.kill("SIGKILL");
      await child.status;
      await lines.cancel().catch(() => {});
    },
  };
}
