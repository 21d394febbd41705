/**
 * The floor a fresh sandbox is compared with (bench part "floor"): the least a Deno process can
 * do to run Python from this snapshot: boot Pyodide from it and run `print(1)`, nothing else (no
 * warm-up, no host channel, no optimization waited for). Prints its whole process's CPU.
 *
 *   deno run -A bench/floor_boot.ts <snapshot file>
 */
import process from "node:process";
import { loadPyodide } from "pyodide";
import { fromSparse, SNAPSHOT_HEADER_BYTES } from "../src/sandbox/snapshot_format.ts";
import { writeAllSync } from "../src/_util/write_all.ts";

const file = await Deno.readFile(Deno.args[0]!);
const pyodide = await loadPyodide(
  { _loadSnapshot: fromSparse(file.subarray(SNAPSHOT_HEADER_BYTES)) } as Parameters<
    typeof loadPyodide
  >[0],
);
pyodide.runPython("print(1)");
const used = process.cpuUsage();
// Its one line of output, read by bench/floor.ts.
writeAllSync(Deno.stdout, JSON.stringify({ cpu_s: (used.user + used.system) / 1e6 }) + "\n");
