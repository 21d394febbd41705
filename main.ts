import { runCli } from "./src/cli.ts";
import { logWritten } from "./src/_util/log.ts";
import { SANDBOX_ENTRY } from "./src/sandbox/sandbox_command.ts";
import { MEMORY_WATCHER_ENTRY, runMemoryWatcher } from "./src/sandbox/memory_watcher.ts";

// The single binary re-enters itself as a sandbox worker or as the memory watcher (see
// src/sandbox/sandbox_command.ts). The worker is loaded only when needed.
if (import.meta.main) {
  const [first, ...rest] = Deno.args;
  Deno.exit(
    first === SANDBOX_ENTRY
      ? await (await import("./src/sandbox/worker.ts")).runWorker(rest)
      : first === MEMORY_WATCHER_ENTRY
      ? await runMemoryWatcher()
      : await cli(Deno.args),
  );
}

/** The command line's exit code, once its last log lines have reached stderr (or 2 s passed). */
async function cli(args: string[]): Promise<number> {
  try {
    return await runCli(args);
  } finally {
    await logWritten(2000);
  }
}
