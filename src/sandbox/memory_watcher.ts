/**
 * The memory watcher: a helper process that reads sandboxes' resident memory for a host that
 * may not. Deno grants `/proc` only to a process with every permission, so a host running with
 * least privilege starts this program (with `--allow-all`) and asks it instead. It does one
 * thing: for each line on stdin holding a process id, it writes one line with that process's
 * resident bytes (or `-` when unknown). It exits when stdin closes, so it never outlives the host.
 */
import { readLines } from "../rpc/lines.ts";
import { readResidentBytes } from "./memory.ts";
import { writeAllSync } from "../_util/write_all.ts";

/** First argument that makes the compiled binary act as the memory watcher. */
export const MEMORY_WATCHER_ENTRY = "__memory-watcher";

/** The answer line for one request line. */
export function answerLine(request: string): string {
  const pid = /^\d{1,10}$/.test(request.trim()) ? Number(request.trim()) : NaN;
  const resident = Number.isSafeInteger(pid) && pid > 0 ? readResidentBytes(pid) : null;
  return `${resident ?? "-"}\n`;
}

export async function runMemoryWatcher(): Promise<number> {
  await readLines(Deno.stdin.readable, 64, {
    line: (request) => writeAllSync(Deno.stdout, answerLine(request)),
    overlong: () => writeAllSync(Deno.stdout, "-\n"),
  });
  return 0;
}

if (import.meta.main) Deno.exit(await runMemoryWatcher());
