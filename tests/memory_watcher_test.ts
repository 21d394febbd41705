import assert from "node:assert/strict";
import { answerLine } from "../src/sandbox/memory_watcher.ts";
import { WatchedResidentMemory } from "../src/sandbox/resident_memory.ts";
import { memoryWatcherCommand } from "../src/sandbox/sandbox_command.ts";
import { locateRuntime } from "../src/sandbox/runtime.ts";
import { createLogger, silentLogger } from "../src/_util/log.ts";
import { childPids, delay } from "./_helpers.ts";

const watcher = () =>
  childPids(Deno.pid).filter((pid) =>
    Deno.readTextFileSync(`/proc/${pid}/cmdline`).includes("memory_watcher.ts")
  );

Deno.test("answerLine() answers a process id with its memory and anything else with -", () => {
  assert.match(answerLine(`${Deno.pid}`), /^\d+\n$/);
  for (const request of ["", "0", "-1", "abc", "1.5", "99999999999", "/etc/passwd"]) {
    assert.equal(answerLine(request), "-\n", request);
  }
});

Deno.test("the memory watcher answers in order, survives being killed, and ends with close()", async () => {
  const memory = new WatchedResidentMemory(memoryWatcherCommand(locateRuntime()), silentLogger);
  const [mine, none, again] = await Promise.all([
    memory.read(Deno.pid),
    memory.read(2 ** 22 + 7), // above Linux's default pid_max: no such process
    memory.read(Deno.pid),
  ]);
  assert.ok(mine !== null && mine > 10 * 1024 * 1024, `own RSS ${mine}`);
  assert.equal(none, null);
  assert.ok(again !== null && again > 10 * 1024 * 1024);

  const [first] = watcher();
  assert.ok(first !== undefined, "no watcher process");
  Deno.kill(first, "SIGKILL");
  for (let i = 0; i < 100 && watcher().includes(first); i++) await delay(20);
  // Lost: reads say "unknown" rather than hang, then a new watcher takes over.
  assert.equal(await memory.read(Deno.pid), null);
  await delay(WatchedResidentMemory.restartAfterMs + 100);
  assert.ok((await memory.read(Deno.pid) ?? 0) > 0, "the watcher was not restarted");
  const [second] = watcher();
  assert.ok(second !== undefined && second !== first);

  await memory.close();
  for (let i = 0; i < 100 && watcher().length > 0; i++) await delay(20);
  assert.deepEqual(watcher(), [], "the watcher outlived close()");
  assert.equal(await memory.read(Deno.pid), null, "a closed source answers nothing");
});

Deno.test("a watcher ended by Ctrl-C's SIGINT is not warned of; one that dies otherwise is", async () => {
  const warnings: string[] = [];
  const log = createLogger("warn", (line) => warnings.push(line));
  const memory = new WatchedResidentMemory(memoryWatcherCommand(locateRuntime()), log);
  const stop = async (signal: Deno.Signal) => {
    assert.ok((await memory.read(Deno.pid) ?? 0) > 0);
    const [pid] = watcher();
    Deno.kill(pid!, signal);
    for (let i = 0; i < 100 && watcher().includes(pid!); i++) await delay(20);
    await delay(100);
  };
  await stop("SIGINT");
  assert.deepEqual(warnings, []);
  await delay(WatchedResidentMemory.restartAfterMs + 100);
  await stop("SIGKILL");
  assert.match(warnings.join(""), /the memory watcher exited with code 137/);
  await memory.close();
});
