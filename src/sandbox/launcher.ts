/**
 * `Sandbox`, the handle of one sandbox process: spawned with its profile's flags, booted from
 * the snapshot, used for exactly one execution and then killed (a session's runs many, until it
 * is closed or a limit stops it). The host enforces every limit here, from outside the
 * process: wall-clock timeout, resident memory, output size, protocol abuse, cancellation.
 */
import {
  type ChannelViolation,
  JsonRpcChannel,
  RemoteError,
  RPC_INVALID_PARAMS,
  RPC_METHOD_NOT_FOUND,
} from "../rpc/channel.ts";
import {
  type CallToolParams,
  type ExecuteReply,
  type HostMessages,
  type InputFile,
  MAX_SANDBOX_LINE_BYTES,
  METHOD_BOOT,
  METHOD_CALL_TOOL,
  METHOD_EXECUTE,
  METHOD_OUTPUT,
  METHOD_PREPARE,
  METHOD_PROGRESS,
  METHOD_READY,
  METHOD_STARTED,
  type OutputStream,
  type PackageFile,
  type Packages,
  parseCallToolParams,
  parseExecuteReply,
  parseOutput,
  parseProgress,
  type ProgressParams,
  type ProtocolViolation,
  type ToolReply,
} from "../rpc/sandbox_protocol.ts";
import { type Deadline, deadline } from "../_util/deadline.ts";
import { JSON_COST_LIMITS } from "../rpc/json_cost.ts";
import type { Logger } from "../_util/log.ts";
import type { HostOutcome, OneOf } from "../execution/outcomes.ts";
import { OutputBuffer } from "./output_buffer.ts";
import { UnreadAnswers, unreadLimits } from "./unread_answers.ts";
import type { Profile } from "./profile.ts";
import { sandboxCommand } from "./sandbox_command.ts";
import { INTERRUPT_SIGNAL } from "./interrupt_listener.ts";
import type { ResidentMemory } from "./resident_memory.ts";
import type { SandboxRuntime } from "./runtime.ts";

/** Why the host stopped a sandbox before it finished on its own. */
export type StopReason = OneOf<
  HostOutcome,
  "TIMEOUT" | "MEMORY_LIMIT" | "OUTPUT_LIMIT" | "POLICY_VIOLATION" | "CANCELLED" | "SANDBOX_CRASHED"
>;

export interface ScriptRun {
  code: string;
  /** Input files for the script's working folder. */
  files?: InputFile[];
  /** Wheels to install before the run. */
  pythonPackages?: PackageFile[];
  /** Cap on the files returned from outputs/ (0: none). */
  outputFilesBytes?: number;
  timeoutMs: number;
  memoryBytes: number;
  outputBytes: number;
  /** Tool calls the profile allows; more count as protocol violations. */
  toolCalls?: number;
}

export interface ExecutionHooks {
  /**
   * Decides and performs a tool call the script asked for. Never throws. `clock` stops the
   * run's time limit while a person decides about the call.
   */
  callTool(params: CallToolParams, clock: { pause(): () => void }): Promise<ToolReply>;
  /** Live output, as it arrives (already capped). */
  onOutput?(stream: OutputStream, text: string): void;
  /** Logger for this execution (carries its id). */
  log?: Logger;
  /** Progress the script reports (validated; at most MAX_PROGRESS_REPORTS per run). */
  onProgress?(report: ProgressParams): void;
  signal?: AbortSignal;
}

export interface RawOutcome {
  /** The script's own answer, when it gave one before the process stopped. */
  reply: ExecuteReply | null;
  stop: { reason: StopReason; message: string } | null;
  stdout: string;
  stderr: string;
  /** The streams cut at their byte limit. */
  truncated: OutputStream[];
  /** Protocol violations the host ignored. */
  violations: string[];
  durationMs: number;
  /** Why the script was interrupted (KeyboardInterrupt) while its process lived on (sessions). */
  interrupted: string | null;
}

export interface LaunchOptions {
  runtime: SandboxRuntime;
  snapshotPath: string;
  /** The host folder of preloaded packages that snapshot was built with, if any. */
  preloadDir?: string;
  profile: Profile;
  log: Logger;
  /** Where the memory limit's readings come from. */
  memory: ResidentMemory;
  /** How long boot may take before the sandbox is given up. */
  bootTimeoutMs?: number;
  /** Keep the process and its Python scope across executions (a session). */
  persistent?: boolean;
  /** The Python modules every script may import (the tool modules and skills). */
  modules?: ModuleSource;
}

/**
 * What a sandbox installs before its scripts run: the tool modules (`mcp_tools`) and the saved
 * skills. The sandbox installs them once booted, and again before a script whenever `version`
 * has changed since (a server's tools changed, a skill was saved).
 */
export interface ModuleSource {
  /** Resolves once the modules are known (the upstream servers have connected or failed). */
  ready: Promise<void>;
  version(): string;
  packages(): Packages;
}

const encoder = new TextEncoder();
const MAX_VIOLATIONS = 100;
const MEMORY_POLL_MS = 20;
const STDERR_TAIL_BYTES = 4096;
const MAX_PROGRESS_REPORTS = 1000;
/** How long an interrupted session script may take to stop before it is killed. */
const INTERRUPT_GRACE_MS = 2000;

export class Sandbox implements AsyncDisposable {
  readonly profile: Profile;
  /** Resolves once Pyodide has booted; rejects when the process dies or boot takes too long. */
  readonly ready: Promise<void>;
  readonly #process: Deno.ChildProcess;
  readonly #channel: JsonRpcChannel<HostMessages>;
  readonly #log: Logger;
  readonly #memory: ResidentMemory;
  #memoryReading = false;
  readonly #exited: Promise<Deno.CommandStatus>;
  #stderrTail = "";
  #hooks: ExecutionHooks | null = null;
  /** The running script's time limit. */
  #clock: { pause(): () => void } = { pause: () => () => {} };
  #stop: { reason: StopReason; message: string } | null = null;
  #stopped = Promise.withResolvers<void>();
  #stdout: OutputBuffer | null = null;
  #stderr: OutputBuffer | null = null;
  #violations: string[] = [];
  #progressReports = 0;
  #interrupted: string | null = null;
  /** Whether the sandbox said the running script started (it then takes an interrupt). */
  #started = false;
  #grace: Deadline | undefined;
  #used = false;
  #booted = false;
  /** Tool calls the script asked for in this execution, allowed or not. */
  #toolRequests = 0;
  #toolCallLimit = Infinity;
  readonly #unread: UnreadAnswers;
  /** A session's process between its scripts (SIGSTOP). */
  #paused = false;
  readonly #modules: ModuleSource | undefined;
  /** The version of the modules installed in the process (null: none yet). */
  #installed: string | null = null;
  /** A session's sandbox runs many scripts in one scope; others run one and die. */
  readonly persistent: boolean;

  constructor(options: LaunchOptions) {
    this.profile = options.profile;
    this.persistent = options.persistent ?? false;
    this.#log = options.log;
    this.#memory = options.memory;
    this.#modules = options.modules;
    this.#unread = new UnreadAnswers(
      (message) => this.#halt("MEMORY_LIMIT", message),
      unreadLimits(options.profile.limits.memory_mb * 1024 * 1024),
    );
    const { command, args, env, cwd, boot } = sandboxCommand(
      options.runtime,
      options.snapshotPath,
      options.profile,
      { interruptible: this.persistent, preloadDir: options.preloadDir },
    );
    this.#process = new Deno.Command(command, {
      args,
      clearEnv: true,
      env,
      cwd,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.#exited = this.#process.status;
    void this.#drainStderr(this.#process.stderr);

    const writer = this.#process.stdin.getWriter();
    const booted = Promise.withResolvers<void>();
    this.#channel = new JsonRpcChannel<HostMessages>({
      readable: this.#process.stdout,
      write: (line, kind) => {
        const bytes = encoder.encode(line);
        if (kind === "own") return writer.write(bytes);
        // A tool's result: it waits here until the sandbox reads it.
        if (!this.#unread.writing(bytes.length)) return Promise.resolve();
        return writer.write(bytes).finally(() => this.#unread.read(bytes.length));
      },
      maxLineBytes: MAX_SANDBOX_LINE_BYTES,
      // Some JSON of 8 MiB took the host's thread seconds to parse and walk (an attacker's
      // corpus: a script's call of 600,000 keys held every other caller 2 to 3 s).
      maxParseCost: JSON_COST_LIMITS,
      handlers: {
        onRequest: (method, params) => this.#onRequest(method, params),
        onNotification: (method, params) => {
          if (method === METHOD_READY && !this.#booted) {
            this.#booted = true;
            booted.resolve();
          } else if (method === METHOD_STARTED) this.#onStarted();
          else if (method === METHOD_OUTPUT) this.#onOutput(params);
          else if (method === METHOD_PROGRESS) this.#onProgress(params);
          else {
            this.#violation({
              kind: "unknown_notification",
              detail: `an unknown notification "${method.slice(0, 64)}"`,
            });
          }
        },
        onViolation: (violation) => this.#violation(violation),
      },
    });
    void this.#channel.notify(METHOD_BOOT, boot).catch(() => {}); // a dead child shows below
    const bootTimeoutMs = options.bootTimeoutMs ?? 60_000;
    let bootTimer: ReturnType<typeof setTimeout> | undefined;
    const spawned = performance.now();
    const prepared = booted.promise.then(async () => {
      const bootMs = Math.round(performance.now() - spawned);
      const modules = this.#modules;
      if (modules) {
        // Installed while the sandbox waits in the pool, so a script need not wait for it.
        await modules.ready;
        const version = modules.version();
        await this.#channel.request(METHOD_PREPARE, { packages: modules.packages() });
        this.#installed = version;
      }
      const readyMs = Math.round(performance.now() - spawned);
      this.#log.debug("sandbox ready", { pid: this.pid, boot_ms: bootMs, ready_ms: readyMs });
    });
    this.ready = Promise.race([
      prepared,
      this.#exited.then(() => {
        throw new Error(`Cannot boot sandbox: the process exited\n${this.#stderrTail}`);
      }),
      new Promise<never>((_, reject) => {
        bootTimer = setTimeout(
          () => reject(new Error(`Cannot boot sandbox: no ready signal in ${bootTimeoutMs} ms`)),
          bootTimeoutMs,
        );
      }),
    ]).finally(() => clearTimeout(bootTimer));
    this.ready.catch(() => this.kill());
  }

  get pid(): number {
    return this.#process.pid;
  }

  /**
   * Runs one script. A one-shot sandbox is killed when this settles; a session's (persistent)
   * sandbox lives on for the next script unless a limit stopped it.
   */
  async execute(request: ScriptRun, hooks: ExecutionHooks): Promise<RawOutcome> {
    if (this.#used && !this.persistent) {
      throw new Error("Cannot execute: this sandbox has already run a script");
    }
    if (this.#hooks !== null) throw new Error("Cannot execute: this sandbox is running a script");
    if (this.#stop) throw new Error("Cannot execute: this sandbox was stopped");
    this.#used = true;
    await this.ready;
    this.#resume();
    const started = performance.now();
    this.#hooks = hooks;
    this.#violations = [];
    this.#progressReports = 0;
    this.#toolRequests = 0;
    this.#toolCallLimit = request.toolCalls ?? Infinity;
    this.#stdout = new OutputBuffer("stdout", request.outputBytes);
    this.#stderr = new OutputBuffer("stderr", request.outputBytes);

    const overtime = `Execution exceeded the time limit of ${request.timeoutMs / 1000} s ` +
      `(timeout_s; profile "${this.profile.name}" allows up to ${this.profile.limits.max_timeout_s} s)`;
    this.#interrupted = null;
    this.#started = false;
    // A session's script is interrupted first, so the session can keep its state.
    const timer = pausableTimeout(
      () => this.persistent ? this.#interrupt(overtime) : this.#halt("TIMEOUT", overtime),
      request.timeoutMs,
    );
    // While a person decides about a call, the clock stops and so does the whole process: the
    // rest of the script (other coroutines, a busy loop) must not run on uncounted time. An
    // answer that comes after the execution ended resumes nothing: a session's process stays
    // frozen until its next script.
    let deciding = 0;
    let running = true;
    this.#clock = {
      pause: () => {
        const restart = timer.pause();
        if (deciding++ === 0) this.#pause();
        let resumed = false;
        return () => {
          if (resumed) return;
          resumed = true;
          if (--deciding === 0 && running && !this.#stop) this.#resume();
          restart();
        };
      },
    };
    const memoryWatch = setInterval(() => this.#checkMemory(request.memoryBytes), MEMORY_POLL_MS);
    const onAbort = () => {
      this.#log.debug("execution cancelled by the client", { pid: this.pid });
      this.#halt("CANCELLED", "Execution was cancelled by the client");
    };
    hooks.signal?.addEventListener("abort", onAbort, { once: true });
    if (hooks.signal?.aborted) onAbort();

    let reply: ExecuteReply | null = null;
    const modules = this.#modules;
    const version = modules?.version() ?? null;
    try {
      const answer = this.#channel.request(METHOD_EXECUTE, {
        code: request.code,
        packages: modules && version !== this.#installed ? modules.packages() : undefined,
        result_bytes: request.outputBytes,
        files: request.files,
        python_packages: request.pythonPackages,
        output_files_bytes: request.outputFilesBytes ?? 0,
        large_outputs_dir: largeOutputsFolder(this.profile)?.inSandbox,
        persistent: this.persistent,
      });
      const outcome = await Promise.race([
        answer.then((value) => ({ value }), (error) => ({ error })),
        this.#stopped.promise.then(() => null),
      ]);
      if (outcome && "value" in outcome) {
        this.#installed = version;
        reply = parseExecuteReply(
          outcome.value,
          request.outputFilesBytes ?? 0,
          largeOutputsFolder(this.profile)?.inSandbox,
        );
      }
      if (outcome && "error" in outcome && !this.#stop) {
        if (outcome.error instanceof RemoteError) {
          this.#halt(
            "SANDBOX_CRASHED",
            `The sandbox runtime failed (its own words, unverified): ${
              outcome.error.message.slice(0, 500)
            }`,
          );
        } else {
          // The channel closed: the process died without answering.
          await this.#exited;
          this.#halt("SANDBOX_CRASHED", crashMessage(this.#stderrTail));
        }
      }
      if (reply === null && !this.#stop) {
        this.#halt("POLICY_VIOLATION", "The sandbox sent a malformed execution result");
      }
    } finally {
      running = false;
      timer.clear();
      this.#grace?.clear();
      clearInterval(memoryWatch);
      hooks.signal?.removeEventListener("abort", onAbort);
      this.#hooks = null;
      // A session's process lives on unless it was stopped, but does nothing until its next
      // script: JavaScript work a script scheduled (a timer) would otherwise run on, outside
      // every limit, while the session sits idle.
      if (!this.persistent) this.kill();
      else if (!this.#stop) this.#pause();
    }
    return {
      reply: this.#stop ? null : reply,
      stop: this.#stop,
      stdout: this.#stdout.text(),
      stderr: this.#stderr.text(),
      truncated: [this.#stdout, this.#stderr].filter((b) => b.overflowed).map((b) => b.stream),
      violations: this.#violations,
      interrupted: this.#stop ? null : this.#interrupted,
      durationMs: performance.now() - started,
    };
  }

  /** Kills the process (idempotent). */
  kill(): void {
    this.#unread.close();
    try {
      this.#process.kill("SIGKILL");
    } catch {
      // already exited
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.kill();
    await this.#exited.catch(() => {});
    await this.#channel.done;
  }

  /** Resolves when the process has exited. */
  get exited(): Promise<Deno.CommandStatus> {
    return this.#exited;
  }

  /** Why the host stopped this sandbox (a limit), if it did. */
  get stopMessage(): string | null {
    return this.#stop?.message ?? null;
  }

  /** Freezes the process (SIGSTOP): it can neither run nor allocate until resumed. */
  #pause(): void {
    try {
      this.#process.kill("SIGSTOP");
      this.#paused = true;
      this.#unread.hold();
    } catch {
      // already exited
    }
  }

  #resume(): void {
    if (!this.#paused) return;
    try {
      this.#process.kill("SIGCONT");
    } catch {
      // already exited: the execution reports it
    }
    this.#paused = false;
    this.#unread.release();
  }

  /**
   * Asks the sandbox to raise KeyboardInterrupt; kills it if that does not end the run. The
   * signal waits for the sandbox's "started": before it, the sandbox would clear it unseen.
   */
  #interrupt(message: string): void {
    if (this.#stop || this.#interrupted) return;
    this.#interrupted = message;
    if (this.#started) this.#signalInterrupt();
    else this.#startGrace(); // a sandbox that never starts the script is killed all the same
  }

  #onStarted(): void {
    if (this.#hooks === null || this.#started || !this.persistent) {
      this.#violation({
        kind: "unexpected_started",
        detail: "a started notification outside a session's script, or a repeated one",
      });
      return;
    }
    this.#started = true;
    if (this.#interrupted && !this.#stop) this.#signalInterrupt();
  }

  #signalInterrupt(): void {
    try {
      this.#process.kill(INTERRUPT_SIGNAL);
    } catch {
      // already gone: the exit is reported as a crash
    }
    this.#startGrace();
  }

  #startGrace(): void {
    this.#grace?.clear();
    const message = `${this.#interrupted}; it did not stop when interrupted`;
    this.#grace = deadline(() => this.#halt("TIMEOUT", message), INTERRUPT_GRACE_MS);
  }

  /** Ends the running script, if any, as `reason` says, and the process with it. */
  stop(reason: StopReason, message: string): void {
    this.#halt(reason, message);
  }

  #halt(reason: StopReason, message: string): void {
    if (this.#stop) return;
    this.#stop = { reason, message };
    this.kill();
    this.#stopped.resolve();
  }

  /** One reading at a time: a slow answer skips the polls that fall due meanwhile. */
  async #checkMemory(limitBytes: number): Promise<void> {
    if (this.#memoryReading || this.#stop) return;
    this.#memoryReading = true;
    const resident = await this.#memory.read(this.#process.pid).finally(() => {
      this.#memoryReading = false;
    });
    if (resident !== null && resident > limitBytes && this.#hooks !== null) {
      // One decimal: "512 MB exceeded the limit of 512 MB" read as no excess at all.
      const mb = (n: number) => (n / (1024 * 1024)).toFixed(1);
      this.#halt(
        "MEMORY_LIMIT",
        `Sandbox memory ${mb(resident)} MB exceeded the limit of ${mb(limitBytes)} MB ` +
          `(limits.memory_mb of profile "${this.profile.name}")`,
      );
    }
  }

  #onOutput(params: unknown): void {
    const output = parseOutput(params);
    const buffer = output?.stream === "stdout"
      ? this.#stdout
      : output?.stream === "stderr"
      ? this.#stderr
      : null;
    if (output === null || buffer === null) {
      this.#violation({
        kind: "bad_output",
        detail: "an output notification outside an execution or with a bad shape",
      });
      return;
    }
    const accepted = buffer.append(output.text);
    if (accepted.length > 0) this.#hooks?.onOutput?.(buffer.stream, accepted);
    if (buffer.overflowed) {
      this.#halt(
        "OUTPUT_LIMIT",
        `Output on ${buffer.stream} exceeded the limit of ${buffer.limit} bytes (print a ` +
          "summary, return the data as the result, or write it to a file in outputs/)",
      );
    }
  }

  #onProgress(params: unknown): void {
    const report = parseProgress(params);
    if (report === null || this.#hooks === null) {
      this.#violation({
        kind: "bad_progress",
        detail: "a progress notification outside an execution or with a bad shape",
      });
      return;
    }
    if (++this.#progressReports <= MAX_PROGRESS_REPORTS) this.#hooks.onProgress?.(report);
    else {
      this.#violation({
        kind: "too_many_progress_reports",
        detail: `more than ${MAX_PROGRESS_REPORTS} progress reports`,
      });
    }
  }

  async #onRequest(method: string, params: unknown): Promise<unknown> {
    if (method !== METHOD_CALL_TOOL || this.#hooks === null || this.#stop) {
      this.#violation({
        kind: "unexpected_request",
        detail: `an unexpected request "${method.slice(0, 64)}"`,
      });
      throw new RemoteError({ code: RPC_METHOD_NOT_FOUND, message: "Method not found" });
    }
    const call = parseCallToolParams(params);
    if (call === null) {
      this.#violation({ kind: "bad_call_tool", detail: "a call_tool request with a bad shape" });
      throw new RemoteError({ code: RPC_INVALID_PARAMS, message: "Invalid call_tool params" });
    }
    // Calls past the limit are still answered (denied) by the gate, and counted here too.
    if (++this.#toolRequests > this.#toolCallLimit) {
      this.#violation({
        kind: "tool_call_over_limit",
        detail: `a tool call past the limit of ${this.#toolCallLimit}`,
      });
    }
    return await this.#hooks.callTool(call, this.#clock);
  }

  #violation(violation: ProtocolViolation | ChannelViolation): void {
    this.#violations.push(violation.detail);
    const log = this.#hooks?.log ?? this.#log;
    log.debug("sandbox protocol violation", {
      pid: this.#process.pid,
      kind: violation.kind,
      reason: violation.detail,
    });
    if (violation.kind === "overlong_line") {
      this.#halt("POLICY_VIOLATION", `The sandbox wrote a protocol ${violation.detail}`);
    } else if (violation.kind === "costly_line") {
      this.#halt(
        "POLICY_VIOLATION",
        `The sandbox wrote a protocol ${violation.detail} (return such data as a list of ` +
          "rows, or write it to a file in outputs/)",
      );
    } else if (this.#violations.length > MAX_VIOLATIONS) {
      this.#halt(
        "POLICY_VIOLATION",
        `The sandbox broke the protocol more than ${MAX_VIOLATIONS} times`,
      );
    }
  }

  async #drainStderr(stream: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of stream) {
        this.#stderrTail = (this.#stderrTail + decoder.decode(chunk, { stream: true }))
          .slice(-STDERR_TAIL_BYTES);
      }
    } catch {
      // the process is gone
    }
  }
}

/** A short, readable reason from what a dying sandbox wrote to stderr. */
export function crashMessage(stderrTail: string): string {
  const lines = stderrTail.split("\n").map((l) => l.trim()).filter((l) =>
    l && !l.startsWith("at ")
  );
  const reason = lines.find((l) => /error|fatal|abort/i.test(l)) ?? lines.at(-1);
  // What it wrote is the sandbox's own word (a script can write anything to stderr).
  return `The sandbox process died before finishing${
    reason ? `; its last words on stderr (unverified): ${reason.slice(0, 500)}` : ""
  }`;
}

/**
 * Outputs over the cap go to `outputs/` in the profile's first read-write folder, when it has
 * one: where the script sees that folder, and where it is on the host.
 */
export function largeOutputsFolder(
  profile: Profile,
): { inSandbox: string; onHost: string } | undefined {
  const writable = profile.folders.find((f) => f.mode === "rw");
  if (!writable) return undefined;
  return {
    inSandbox: `${writable.mount.replace(/\/$/, "")}/outputs`,
    onHost: `${writable.host}/outputs`,
  };
}

/**
 * A time limit (a `deadline`: an answer that came in time is read first) that can stop while
 * something outside the script's control takes time (a person deciding about a tool call).
 * Pauses nest: the clock runs again when the last one ends.
 */
export function pausableTimeout(onExpire: () => void, ms: number) {
  let remaining = ms;
  let startedAt = performance.now();
  let pauses = 0;
  let cleared = false;
  let timer: Deadline | undefined = deadline(onExpire, ms);
  return {
    pause(): () => void {
      if (pauses++ === 0 && timer !== undefined) {
        timer.clear();
        timer = undefined;
        remaining -= performance.now() - startedAt;
      }
      let resumed = false;
      return () => {
        if (resumed) return;
        resumed = true;
        if (--pauses === 0 && !cleared) {
          startedAt = performance.now();
          timer = deadline(onExpire, Math.max(0, remaining));
        }
      };
    },
    clear(): void {
      cleared = true;
      timer?.clear();
    },
  };
}
