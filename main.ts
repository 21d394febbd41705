import { runCli } from "./src/cli.ts";
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
      : await runCli(Deno.args),
  );
}
