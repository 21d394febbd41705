/**
 * Where the host gets a sandbox's resident memory from. A host with every permission reads
 * `/proc` itself; a host with least privilege cannot (Deno reserves `/proc` for `--allow-all`),
 * so it asks the memory watcher, a helper process started once and kept for the host's life.
 */
import type { Logger } from "../_util/log.ts";
import { readLines } from "../rpc/lines.ts";
import { readResidentBytes } from "./memory.ts";
import type { ProcessCommand } from "./sandbox_command.ts";

export interface ResidentMemory {
  /** Resident bytes of process `pid`, or null when unknown (gone, or no way to tell). */
  read(pid: number): Promise<number | null>;
  close(): Promise<void>;
}

/** Reads `/proc` in this process (needs `--allow-all`). */
export const directResidentMemory: ResidentMemory = {
  read: (pid) => Promise.resolve(readResidentBytes(pid)),
  close: () => Promise.resolve(),
};

/** Knows nothing: the memory limit then rests on V8's heap flag alone. */
export const unknownResidentMemory: ResidentMemory = {
  read: () => Promise.resolve(null),
  close: () => Promise.resolve(),
};

interface Watcher {
  process: Deno.ChildProcess;
  writer: WritableStreamDefaultWriter<Uint8Array>;
  /** Reads waiting for their answer line, oldest first. */
  pending: ((bytes: number | null) => void)[];
}

/**
 * Asks a memory watcher process (see memory_watcher.ts). Requests are answered in order, one
 * line each. If the watcher dies, pending and later reads answer null until it is restarted
 * (at most once per `restartAfterMs`).
 */
export class WatchedResidentMemory implements ResidentMemory {
  readonly #command: ProcessCommand;
  readonly #log: Logger;
  #watcher: Watcher | null = null;
  #lastStart = -Infinity;
  #closed = false;
  readonly #encoder = new TextEncoder();
  static readonly restartAfterMs = 1000;

  constructor(command: ProcessCommand, log: Logger) {
    this.#command = command;
    this.#log = log;
  }

  read(pid: number): Promise<number | null> {
    const watcher = this.#watcher ?? this.#start();
    if (watcher === null) return Promise.resolve(null);
    const answer = new Promise<number | null>((resolve) => watcher.pending.push(resolve));
    watcher.writer.write(this.#encoder.encode(`${pid}\n`)).catch(() => this.#lost(watcher));
    return answer;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const watcher = this.#watcher;
    this.#watcher = null;
    if (watcher === null) return;
    await watcher.writer.close().catch(() => {});
    await watcher.process.status;
  }

  #start(): Watcher | null {
    const now = performance.now();
    if (this.#closed || now - this.#lastStart < WatchedResidentMemory.restartAfterMs) return null;
    this.#lastStart = now;
    let process: Deno.ChildProcess;
    try {
      process = new Deno.Command(this.#command.command, {
        args: this.#command.args,
        // Nothing of the host's environment: its secrets, and OTEL_DENO, which would make the
        // watcher export telemetry of its own.
        clearEnv: true,
        env: this.#command.env,
        stdin: "piped",
        stdout: "piped",
        // Deno says on a terminal that it cannot open the cache the watcher is denied (a
        // newcomer's first start showed six such lines): logged at debug, not printed.
        stderr: "piped",
      }).spawn();
    } catch (error) {
      this.#log.warn(`cannot start the memory watcher: ${(error as Error).message}`);
      return null;
    }
    const watcher: Watcher = { process, writer: process.stdin.getWriter(), pending: [] };
    this.#watcher = watcher;
    readLines(process.stderr, 4096, {
      line: (text) => this.#log.debug("memory watcher", { stderr: text }),
      overlong: () => {},
    }).catch(() => {});
    readLines(process.stdout, 64, {
      line: (text) => watcher.pending.shift()?.(/^\d+$/.test(text) ? Number(text) : null),
      overlong: () => {},
    }).catch(() => {}).finally(() => this.#lost(watcher));
    process.status.then((status) => {
      if (this.#closed || status.success) return;
      // Ctrl-C (or a TERM to the process group) reaches the watcher as it reaches the host,
      // which is then shutting down: not worth a warning.
      const stopped = status.code === 130 || status.code === 143 ||
        status.signal === "SIGINT" || status.signal === "SIGTERM";
      const say = stopped ? this.#log.debug : this.#log.warn;
      say(`the memory watcher exited with code ${status.code}`);
    });
    return watcher;
  }

  #lost(watcher: Watcher): void {
    if (this.#watcher === watcher) this.#watcher = null;
    for (const resolve of watcher.pending.splice(0)) resolve(null);
  }
}

/**
 * The best source this process has: `/proc` directly when it may read it, else a memory watcher
 * started with `watcherCommand` (started now, in the background, and warned about if it cannot
 * answer), else none, with a warning.
 */
export function openResidentMemory(watcherCommand: ProcessCommand, log: Logger): ResidentMemory {
  const warn = () =>
    log.warn(
      "cannot read process memory from /proc: the sandbox memory limit is not enforced here " +
        "(only V8's heap flag applies; WebAssembly memory is unbounded)",
    );
  if (readResidentBytes(Deno.pid) !== null) return directResidentMemory;
  if (Deno.build.os !== "linux") {
    warn();
    return unknownResidentMemory;
  }
  const watched = new WatchedResidentMemory(watcherCommand, log);
  watched.read(Deno.pid).then((bytes) => {
    if (bytes === null) warn();
  });
  return watched;
}
