import { runCli } from "./src/cli.ts";
import { SANDBOX_ENTRY } from "./src/sandbox/sandbox_command.ts";
import { runWorker } from "./src/sandbox/worker.ts";

// The single binary re-enters itself as a sandbox worker (see src/sandbox/sandbox_command.ts).
if (import.meta.main) {
  const [first, ...rest] = Deno.args;
  Deno.exit(first === SANDBOX_ENTRY ? await runWorker(rest) : await runCli(Deno.args));
}
