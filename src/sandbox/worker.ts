/**
 * The program inside a sandbox process. Runs with only the permissions its profile grants.
 *
 *   worker build-snapshot <pyodide module URL> <output path>
 *     Boots Pyodide cold, installs the Python modules, writes a memory snapshot, exits.
 *   worker serve
 *     Waits for the host's "boot" message, boots from the snapshot, says "ready", runs exactly
 *     one "execute" request (many for a session), exits.
 * (`workerArgs` in src/rpc/sandbox_protocol.ts makes these arguments; `parseWorkerArgs` reads
 * them.)
 *
 * Once user code runs, nothing here is trusted by the host: Python can reach every object in
 * this process through `import js`. The host treats this side as hostile.
 */
import process from "node:process";
import { Console } from "node:console";
import { Writable } from "node:stream";
import { fileURLToPath as fromFileUrl } from "node:url";
import { JsonRpcChannel, RemoteError, RPC_METHOD_NOT_FOUND } from "../rpc/channel.ts";
import {
  type CallToolParams,
  costlyCallReply,
  type ExecuteParams,
  type ExecuteReply,
  METHOD_BOOT,
  METHOD_CALL_TOOL,
  METHOD_EXECUTE,
  METHOD_OUTPUT,
  METHOD_PREPARE,
  METHOD_PROGRESS,
  METHOD_READY,
  METHOD_STARTED,
  type OutputStream,
  oversizedCallReply,
  type PackageFile,
  parseBootParams,
  parseWorkerArgs,
  PRELOAD_MOUNT,
  type PreloadSpec,
  type PrepareParams,
  type SandboxMessages,
  SHARED_MODE_BITS,
} from "../rpc/sandbox_protocol.ts";
import { SNAPSHOT_MODULES } from "./snapshot_modules.ts";
import { readSparseTable, SNAPSHOT_HEADER_BYTES, sparseTableBytes } from "./snapshot_format.ts";
import { INTERRUPT_LISTENER_JS, takenAtomically } from "./interrupt_listener.ts";
import { writeAllSync } from "../_util/write_all.ts";
import { hintNextInstantiation } from "./compilation_hints.ts";
import {
  HOT_FUNCTIONS,
  HOT_FUNCTIONS_MODULE_BYTES,
  HOT_FUNCTIONS_PYODIDE,
} from "./hot_functions.ts";
import { PYODIDE_VERSION } from "../_util/version.ts";
import { redirectConsole } from "../_util/console_redirect.ts";

// Pyodide's private loader options (stable for the exact version pinned in deno.json).
interface LoaderOptions {
  _makeSnapshot?: boolean;
  _loadSnapshot?: Uint8Array;
  indexURL?: string;
  stdout?: (text: string) => void;
  stderr?: (text: string) => void;
}
interface PyProxyLike {
  (...args: unknown[]): unknown;
  /** Calls with JSPI enabled, so Python may suspend on run_sync while JavaScript awaits. */
  callPromising(...args: unknown[]): Promise<unknown>;
  destroy(): void;
}
interface PyodideLike {
  runPython(code: string): unknown;
  pyimport(name: string): Record<string, PyProxyLike>;
  registerJsModule(name: string, module: object): void;
  setStdout(options: { write: (bytes: Uint8Array) => number }): void;
  setStderr(options: { write: (bytes: Uint8Array) => number }): void;
  mountNodeFS(emscriptenPath: string, hostPath: string): void;
  setInterruptBuffer(buffer: Int32Array): void;
  FS: {
    mkdirTree(path: string): void;
    filesystems?: {
      NODEFS?: {
        tryFSOperation?: (operation: () => unknown) => unknown;
        node_ops?: Record<string, (...args: never[]) => unknown>;
        stream_ops?: Record<string, (...args: never[]) => unknown>;
      };
    };
  };
  makeMemorySnapshot(): Uint8Array;
  /** Pyodide's internals; only its package installer is used (see installPackages). */
  _api: {
    install(
      buffer: Uint8Array,
      fileName: string,
      installDir: string,
      metadata: Map<string, string>,
    ): Promise<void>;
    package_loader: { get_install_dir(installDir: string): string };
  };
}
type LoadPyodide = (options: LoaderOptions) => Promise<PyodideLike>;

const MAX_LINE_BYTES = 64 * 1024 * 1024;

/** The worker's side of the channel: it sends what the protocol says a sandbox sends. */
type Channel = JsonRpcChannel<SandboxMessages>;

function writeLineSync(line: string): void {
  writeAllSync(Deno.stdout, line);
}

function logToStderr(text: string): void {
  writeAllSync(Deno.stderr, text + "\n");
}

async function importLoader(moduleUrl: string): Promise<LoadPyodide> {
  const mod = await import(moduleUrl);
  return mod.loadPyodide as LoadPyodide;
}

async function buildSnapshot(
  moduleUrl: string,
  outPath: string,
  preloadSpecPath?: string,
): Promise<void> {
  const loadPyodide = await importLoader(moduleUrl);
  const pyodide = await loadPyodide({
    _makeSnapshot: true,
    // As the sandbox gives it (see bootFromSnapshot): no npm cache to guess it from either.
    indexURL: fromFileUrl(new URL(".", moduleUrl)),
    stdout: logToStderr,
    stderr: logToStderr,
  });
  // Each source runs as a module of its own; the prelude imports the generated errors module.
  const install = pyodide.runPython(
    "def _install(name, src):\n" +
      "    import sys, types\n" +
      "    module = types.ModuleType(name)\n" +
      "    sys.modules[name] = module\n" +
      "    exec(compile(src, f'<{name[1:]}>', 'exec'), module.__dict__)\n" +
      "_install",
  ) as PyProxyLike;
  for (const [name, source] of SNAPSHOT_MODULES) install(name, source);
  install.destroy();
  pyodide.runPython("del _install; import _codemode");
  if (preloadSpecPath) await preload(pyodide, JSON.parse(await Deno.readTextFile(preloadSpecPath)));
  await Deno.writeFile(outPath, pyodide.makeMemorySnapshot());
}

/**
 * Installs a profile's preloaded packages into its host folder (mounted where every sandbox of
 * the profile will mount it again, read-only) and imports each top-level module, so the snapshot
 * holds them imported. The files stay on the host: a snapshot holds memory, not the file system.
 */
async function preload(pyodide: PyodideLike, spec: PreloadSpec): Promise<void> {
  pyodide.FS.mkdirTree(PRELOAD_MOUNT);
  pyodide.mountNodeFS(PRELOAD_MOUNT, spec.site_dir);
  await installPackages(pyodide, spec.packages, PRELOAD_MOUNT);
  pyodide.runPython(
    "import importlib, os, sys\n" +
      `sys.path.insert(0, ${JSON.stringify(PRELOAD_MOUNT)})\n` +
      "importlib.invalidate_caches()\n" +
      `for _entry in sorted(os.listdir(${JSON.stringify(PRELOAD_MOUNT)})):\n` +
      "    _name = _entry[:-3] if _entry.endswith('.py') else _entry\n" +
      "    if _name.isidentifier() and not _entry.endswith(('.dist-info', '.data')):\n" +
      "        importlib.import_module(_name)\n" +
      "del _entry, _name",
  );
}

/**
 * Deno's permission errors carry no errno code, so Emscripten's host-folder driver would treat
 * them as fatal. Tag them EACCES: Python then sees a PermissionError and the script goes on.
 */
function mapPermissionErrors(pyodide: PyodideLike): void {
  const nodefs = pyodide.FS.filesystems?.NODEFS;
  if (!nodefs?.tryFSOperation) return;
  const original = nodefs.tryFSOperation.bind(nodefs);
  nodefs.tryFSOperation = (operation: () => unknown) =>
    original(() => {
      try {
        return operation();
      } catch (error) {
        if (
          error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied
        ) {
          (error as { code?: string }).code = "EACCES";
        }
        throw error;
      }
    });
}

/**
 * Files in a host folder never become group- or world-writable, nor setuid, setgid or sticky
 * (SHARED_MODE_BITS). Emscripten creates a file with mode
 * 0666 and then sets that mode explicitly, and Deno applies no umask to an explicit mode:
 * without this, every file a script wrote would be writable by every user of the host, and
 * `os.chmod(path, 0o4755)` would leave a program that runs as the server's user.
 */
function maskSharedModes(pyodide: PyodideLike): void {
  const nodefs = pyodide.FS.filesystems?.NODEFS;
  type SetMode = (target: unknown, attr: { mode?: number }) => unknown;
  type MakeNode = (parent: unknown, name: string, mode: number, dev: number) => unknown;
  for (const ops of [nodefs?.node_ops, nodefs?.stream_ops]) {
    const setattr = ops?.setattr as SetMode | undefined;
    if (ops && setattr) {
      ops.setattr = ((target, attr) =>
        setattr(
          target,
          attr.mode === undefined ? attr : { ...attr, mode: attr.mode & ~SHARED_MODE_BITS },
        )) as SetMode;
    }
  }
  const mknod = nodefs?.node_ops?.mknod as MakeNode | undefined;
  if (nodefs?.node_ops && mknod) {
    nodefs.node_ops.mknod = ((parent, name, mode, dev) =>
      mknod(parent, name, mode & ~SHARED_MODE_BITS, dev)) as MakeNode;
  }
}

/**
 * Takes away the calls that change a file's owner: with a read-write folder (`--allow-write`),
 * Deno lets a script `chown` there, and a server running as root would let it give a folder to
 * another local user, who could then plant a symlink that scripts follow out of the folder. Deno's
 * own (`Deno.chown`), Node's (`node:fs`, callbacks, sync, promises and a FileHandle's) and the
 * internals that reach the underlying calls (`Deno[Deno.internal]`) are removed before any
 * script runs; the host still gives back what changed owner when a run ends
 * (shared_write_modes.ts). `readable`: a file the sandbox may read (to reach FileHandle).
 */
async function withoutOwnershipChanges(readable: string): Promise<void> {
  const denied = () => new Deno.errors.PermissionDenied("a sandbox cannot change a file's owner");
  const refuse = () => {
    throw denied();
  };
  const deno = Deno as unknown as Record<PropertyKey, unknown>;
  delete deno[(Deno as unknown as { internal: symbol }).internal];
  delete deno.chown;
  delete deno.chownSync;
  const nodeFs = (process as unknown as {
    getBuiltinModule(name: string): Record<string, unknown> & { promises: Record<string, unknown> };
  }).getBuiltinModule("node:fs");
  for (const name of ["chown", "chownSync", "lchown", "lchownSync", "fchown", "fchownSync"]) {
    nodeFs[name] = refuse;
  }
  for (const name of ["chown", "lchown"]) nodeFs.promises[name] = () => Promise.reject(denied());
  // A FileHandle's own `chown` (`(await fs.promises.open(p)).chown(…)`): its class is not
  // exported, so its prototype is reached through a handle of a file the sandbox may read.
  const open = nodeFs.promises.open as (path: string, flags: string) => Promise<object>;
  const handle = await open(readable, "r");
  (Object.getPrototypeOf(handle) as Record<string, unknown>).chown = () => Promise.reject(denied());
  await (handle as { close(): Promise<void> }).close();
}

/**
 * Installs package files the way `pyodide.loadPackage` does (unpacked into site-packages or the
 * shared-library folder, and their shared libraries loaded), in the order given: dependencies
 * first. The files were chosen and checked by the host; nothing is fetched here.
 */
async function installPackages(
  pyodide: PyodideLike,
  files: PackageFile[],
  /** One folder for all of them instead of each file's own (a profile's preload folder). */
  into?: string,
): Promise<void> {
  // A wheel's data files (`<name>.data/data/`) would be copied to sys.prefix, "/", where a
  // profile's read-write folders are mounted: onto the host, before any script ran. They stay
  // unpacked in the install folder instead; pip puts them where a virtualenv's prefix is.
  if (files.length > 0) {
    pyodide.runPython("import pyodide._package_loader as l\nl.install_datafiles = lambda *_: None");
  }
  for (const file of files) {
    const bytes = Uint8Array.fromBase64(file.data);
    const target = into ?? pyodide._api.package_loader.get_install_dir(file.install_dir);
    await pyodide._api.install(bytes, file.file, target, new Map([["INSTALLER", "mcp-code-mode"]]));
  }
  if (files.length > 0) pyodide.runPython("import importlib; importlib.invalidate_caches()");
}

/** A stream writer for Python's stdout/stderr that forwards text to the host as it comes. */
function outputWriter(target: () => Channel | null, stream: OutputStream) {
  const decoder = new TextDecoder();
  return {
    write(bytes: Uint8Array): number {
      const channel = target();
      if (channel === null) return bytes.length;
      const text = decoder.decode(bytes, { stream: true });
      if (text.length > 0) void channel.notify(METHOD_OUTPUT, { stream, text });
      return bytes.length;
    },
  };
}

/**
 * JavaScript's console (a script's `js.console.log`) writes into the script's output as `print`
 * does, stdout or stderr; the process's own stdout is the protocol channel, where its lines
 * were dropped as violations. Every method of the console object is replaced by that of a
 * Node `Console` writing to the script's output (formats, counters, timers and groups
 * included); Deno's own would print straight to the process's stdout.
 */
function consoleIntoOutput(
  stdout: ReturnType<typeof outputWriter>,
  stderr: ReturnType<typeof outputWriter>,
): void {
  const encoder = new TextEncoder();
  const sink = (writer: ReturnType<typeof outputWriter>) =>
    new Writable({
      write(chunk: unknown, _encoding: unknown, done: () => void) {
        writer.write(typeof chunk === "string" ? encoder.encode(chunk) : chunk as Uint8Array);
        done();
      },
    });
  redirectConsole(new Console({ stdout: sink(stdout), stderr: sink(stderr) }));
}

/**
 * A failed fetch says why. Deno rejects with a bare `TypeError: fetch failed` and puts the reason
 * (connection refused, a certificate no trusted CA signed) in its `cause`, which Python shows
 * neither in pyfetch's `AbortError` nor in a `JsException`.
 */
function fetchFailuresSayWhy(): void {
  const fetch = globalThis.fetch;
  globalThis.fetch = async (...args: Parameters<typeof fetch>) => {
    try {
      return await fetch(...args);
    } catch (error) {
      if (!(error instanceof TypeError && error.cause instanceof Error)) throw error;
      const why = `${error.message}: ${error.cause.message}`.slice(0, 2000);
      throw new TypeError(why, { cause: error.cause });
    }
  };
}

/** Every permission this process could have; revoked in "drop" mode (see sandbox_command.ts). */
const ALL_PERMISSIONS = ["read", "write", "net", "env", "sys", "run", "ffi", "import"] as const;

/** Revokes every permission, then checks that they are really gone. */
export function dropAllPermissions(): void {
  for (const name of ALL_PERMISSIONS) {
    Deno.permissions.revokeSync({ name } as Deno.PermissionDescriptor);
  }
  for (const name of ALL_PERMISSIONS) {
    if (Deno.permissions.querySync({ name } as Deno.PermissionDescriptor).state === "granted") {
      throw new Error(`Cannot drop the ${name} permission`);
    }
  }
}

/**
 * Lets the host interrupt running Python with `INTERRUPT_SIGNAL` (sessions only): a Worker
 * thread takes the signal while the main thread runs Python, which reads the buffer between
 * bytecodes. Python that waits (an `await`, a tool call) reads nothing, so the main thread is
 * told as well: `onInterrupt` runs when it is free, which is only while Python waits or between
 * scripts. Returns the buffer to clear before each run.
 */
async function listenForInterrupts(
  pyodide: PyodideLike,
  onInterrupt: () => void,
): Promise<Int32Array> {
  const buffer = new Int32Array(new SharedArrayBuffer(4));
  pyodide.setInterruptBuffer(takenAtomically(buffer));
  const source = new Blob([INTERRUPT_LISTENER_JS], { type: "application/javascript" });
  const listener = new Worker(URL.createObjectURL(source), { type: "module" });
  await new Promise<void>((resolve) => {
    listener.onmessage = () => resolve();
    listener.postMessage(buffer.buffer);
  });
  listener.onmessage = () => onInterrupt();
  return buffer;
}

/**
 * Hides the host facts Deno and its Node layer would tell a script: the worker's path and,
 * where Deno lets us, the binary's (`process.argv0` keeps it). The working folder is "/" and the
 * arguments are only "serve" already. Paths of the runtime's own files remain visible in
 * JavaScript stack traces; the README says so.
 */
function hideHostPaths(): void {
  const fixed = (target: object, key: string, value: unknown) =>
    Object.defineProperty(target, key, { value, configurable: false, writable: false });
  fixed(Deno, "execPath", () => {
    throw new Deno.errors.NotCapable("Cannot tell host paths to a sandbox");
  });
  fixed(Deno, "mainModule", SANDBOX_MAIN_MODULE);
  process.execPath = "deno"; // not redefinable, but settable (argv0 is neither)
  fixed(process, "argv", ["deno", fromFileUrl(SANDBOX_MAIN_MODULE)]);
}

/** What a script is told the sandbox's main module is. */
const SANDBOX_MAIN_MODULE = "file:///sandbox/worker.js";

/**
 * Serves one sandbox: waits for the host's "boot" message (launch parameters travel on stdin,
 * not the command line, where `Deno.args` would show host paths to the script), boots Pyodide
 * from the snapshot, says "ready", then answers "prepare" and exactly one "execute" (or many,
 * for a session).
 */
async function serve(): Promise<void> {
  const booted = Promise.withResolvers<unknown>();
  let onRequest: (method: string, params: unknown) => Promise<unknown> = (method) => {
    throw new RemoteError({ code: RPC_METHOD_NOT_FOUND, message: `no method ${method}` });
  };
  const finished = Promise.withResolvers<void>();
  const channel: Channel = new JsonRpcChannel<SandboxMessages>({
    readable: Deno.stdin.readable,
    write: writeLineSync,
    maxLineBytes: MAX_LINE_BYTES,
    handlers: {
      onRequest: (method, params) => onRequest(method, params),
      onNotification(method, params) {
        if (method === METHOD_BOOT) booted.resolve(params);
      },
      onViolation(violation) {
        logToStderr(`sandbox: ignored ${violation.detail}`);
      },
    },
  });
  const boot = parseBootParams(await Promise.race([booted.promise, channel.done]));
  if (boot === null) throw new Error("Cannot boot: no valid boot message from the host");

  const loadPyodide = await importLoader(boot.pyodide_module_url);
  const pyodide = await bootFromSnapshot(
    loadPyodide,
    boot.pyodide_module_url,
    boot.snapshot_path,
    boot.compilation_hints,
  );
  const mounts = boot.mounts;
  if (mounts.length > 0) {
    mapPermissionErrors(pyodide);
    maskSharedModes(pyodide);
    await withoutOwnershipChanges(boot.snapshot_path);
  }
  for (const { host, mount } of mounts) {
    pyodide.FS.mkdirTree(mount);
    pyodide.mountNodeFS(mount, host);
  }

  // Python reaches the host through this module; output and progress flow only while the
  // script runs.
  let forwarding = false;
  // Tool calls the script waits on: an interrupt rejects them (see interruptWaiting).
  const waitingCalls = new Set<() => void>();
  pyodide.registerJsModule("_codemode_host", {
    call_tool: (server: string, tool: string, argumentsJson: string): Promise<string> => {
      const costly = costlyCallReply(argumentsJson);
      if (costly) return Promise.resolve(JSON.stringify(costly));
      const request: CallToolParams = { server, tool, arguments: JSON.parse(argumentsJson) };
      const refused = oversizedCallReply(request);
      if (refused) return Promise.resolve(JSON.stringify(refused));
      const { promise, resolve, reject } = Promise.withResolvers<string>();
      const abort = () => reject(new Error("interrupted"));
      waitingCalls.add(abort);
      channel.request(METHOD_CALL_TOOL, request).then((r) => resolve(JSON.stringify(r)), reject)
        .finally(() => waitingCalls.delete(abort));
      return promise;
    },
    report_progress: (reportJson: string): void => {
      if (forwarding) void channel.notify(METHOD_PROGRESS, JSON.parse(reportJson));
    },
    // A session's script is about to run, its files placed: the host may interrupt it from now
    // on (a signal before this would be cleared unseen, or hit the runtime's own code).
    script_started: (): void => {
      if (!forwarding || !interrupts) return;
      Atomics.store(interrupts, 0, 0);
      void channel.notify(METHOD_STARTED, {});
    },
  });
  const codemode = pyodide.pyimport("_codemode");
  const executeInPython = codemode.execute!;
  const prepareInPython = codemode.prepare!;

  // Output goes to the host only while a script runs; warm-up output is dropped.
  const stdout = outputWriter(() => forwarding ? channel : null, "stdout");
  const stderr = outputWriter(() => forwarding ? channel : null, "stderr");
  pyodide.setStdout(stdout);
  pyodide.setStderr(stderr);
  consoleIntoOutput(stdout, stderr);
  fetchFailuresSayWhy();
  // Warm the execution path before the host can hand us a script.
  codemode.forget_host_paths!();
  await codemode.warm_up!.callPromising();
  await compilationSettled();
  let executed = false;
  let running = false;
  let persistent = false;
  // An interrupt that finds Python waiting cancels the script's tasks (a KeyboardInterrupt to
  // the script); between scripts, a late one is dropped.
  // (The buffer is cleared first: whatever Python ran next, this call or a callback of the
  // event loop, would take the KeyboardInterrupt, and one outside the script kills the process.)
  const interruptWaiting = () => {
    Atomics.store(interrupts!, 0, 0);
    if (!running || !forwarding) return;
    codemode.interrupt_waiting_script!();
    for (const abort of waitingCalls) abort();
  };
  const interrupts = boot.interruptible
    ? await listenForInterrupts(pyodide, interruptWaiting)
    : null;
  // An interrupt can land in a callback of Python's event loop rather than in the script (the
  // script awaits while other tasks run): that KeyboardInterrupt must not end the process; the
  // script's tasks are cancelled by interruptWaiting all the same.
  if (interrupts) {
    const isInterrupt = (error: unknown) => /^KeyboardInterrupt/m.test(String(error));
    globalThis.addEventListener("unhandledrejection", (event) => {
      if (isInterrupt(event.reason)) event.preventDefault();
    });
    // Python called from a JavaScript timer or listener the script set up throws, not rejects.
    globalThis.addEventListener("error", (event) => {
      if (isInterrupt(event.error)) event.preventDefault();
    });
  }
  if (boot.drop_permissions) {
    if (mounts.length > 0) throw new Error("Cannot drop permissions: host folders are mounted");
    dropAllPermissions(); // before any user code can run
  }
  hideHostPaths();
  // Last, after the optimized code is in place: the first run after that is slow (see settle).
  await codemode.settle!.callPromising();

  onRequest = async (method, params) => {
    if (method === METHOD_PREPARE && !executed) {
      // The host's word, trusted: it launched this process.
      const prepare: PrepareParams = params as PrepareParams;
      await prepareInPython.callPromising(JSON.stringify(prepare));
      return {};
    }
    if (method !== METHOD_EXECUTE || (executed && !persistent) || running) {
      throw new RemoteError({ code: RPC_METHOD_NOT_FOUND, message: `no method ${method}` });
    }
    executed = true;
    running = true;
    const execute: ExecuteParams = params as ExecuteParams; // the host's word, trusted
    persistent = execute.persistent === true;
    forwarding = true;
    if (interrupts) Atomics.store(interrupts, 0, 0); // a late signal must not hit this run
    try {
      await installPackages(pyodide, execute.python_packages ?? []);
      const replyJson = await executeInPython.callPromising(JSON.stringify(execute)) as string;
      return JSON.parse(replyJson) as ExecuteReply;
    } catch (error) {
      if (!isStackOverflow(error)) throw error;
      // C-level recursion (repr or json of deeply nested data, a raised recursion limit)
      // overflows the JavaScript stack before Python's own check: to the script it is a
      // RecursionError, but this interpreter cannot run more code.
      return {
        ok: false,
        fatal: true,
        error: {
          error_type: "RecursionError",
          message: "maximum recursion depth exceeded (the interpreter's stack overflowed)",
          traceback: "",
          lineno: null,
        },
      } satisfies ExecuteReply;
    } finally {
      running = false;
      forwarding = false;
      if (!persistent) finished.resolve(); // a session serves until the host kills it
    }
  };
  await channel.notify(METHOD_READY, {});
  await Promise.race([finished.promise, channel.done]);
}

/**
 * Boots Pyodide from the sparse snapshot file (see snapshot_format.ts) without ever writing its
 * zero pages: Pyodide is given a snapshot of the full length that holds only its own header
 * (nothing else of it is ever touched, so it costs no memory), and its one copy of the rest into
 * the WebAssembly memory, a `set` on the memory's view, is done instead by reading each stored
 * range from the file straight into that memory. Pages left zero in a fresh WebAssembly memory
 * are never written, so they stay out of the sandbox's resident memory, and no copy of the file
 * is kept. `set` is wrapped only while Pyodide boots, before any script exists, and the boot
 * fails unless the copy went this way.
 */
async function bootFromSnapshot(
  loadPyodide: LoadPyodide,
  moduleUrl: string,
  path: string,
  hinted: boolean,
): Promise<PyodideLike> {
  using file = Deno.openSync(path);
  const sparseSize = file.statSync().size - SNAPSHOT_HEADER_BYTES;
  const readAt = (position: number, into: Uint8Array) => {
    file.seekSync(SNAPSHOT_HEADER_BYTES + position, Deno.SeekMode.Start);
    for (let done = 0; done < into.length;) {
      const n = file.readSync(into.subarray(done));
      if (n === null) throw new Error("Cannot boot: the snapshot file is cut short");
      done += n;
    }
  };
  const start = new Uint8Array(8);
  readAt(0, start);
  const table = new Uint8Array(sparseTableBytes(start));
  readAt(0, table);
  const { length, ranges } = readSparseTable(table, sparseSize);
  // Pyodide's header: a magic number, then where the memory image starts (u32 at byte 4).
  const snapshot = new Uint8Array(length);
  const first = ranges[0];
  if (!first || first.offset !== 0 || first.size < 8) {
    throw new Error("Cannot boot: the snapshot has no header");
  }
  readAt(first.at, snapshot.subarray(0, 8));
  const memoryStart = new DataView(snapshot.buffer).getUint32(4, true);
  for (const r of ranges) {
    if (r.offset >= memoryStart) break;
    readAt(r.at, snapshot.subarray(r.offset, Math.min(r.offset + r.size, memoryStart)));
  }
  const typedArray = Object.getPrototypeOf(Uint8Array.prototype) as {
    set(this: Uint8Array, source: ArrayLike<number>, offset?: number): void;
  };
  const set = typedArray.set;
  let restored = false;
  typedArray.set = function (source, offset) {
    const image = ArrayBuffer.isView(source) && source.buffer === snapshot.buffer &&
      source.byteOffset === memoryStart && (offset ?? 0) === 0;
    if (!image) return set.call(this, source, offset);
    const memory = new Uint8Array(this.buffer, this.byteOffset, this.byteLength);
    for (const r of ranges) {
      const end = r.offset + r.size;
      if (end <= memoryStart) continue;
      const from = Math.max(r.offset, memoryStart);
      readAt(r.at + from - r.offset, memory.subarray(from - memoryStart, end - memoryStart));
    }
    restored = true;
  };
  // Pyodide's hot functions are optimized in the background from instantiation on (see
  // compilation_hints.ts); indices found for another Pyodide would name other functions.
  const hints = hinted && HOT_FUNCTIONS_PYODIDE === PYODIDE_VERSION
    ? hintNextInstantiation(WebAssembly, HOT_FUNCTIONS, HOT_FUNCTIONS_MODULE_BYTES)
    : null;
  try {
    const pyodide = await loadPyodide({
      _loadSnapshot: snapshot,
      // Given, not guessed from a stack trace: the sandbox's Deno has no npm cache to map from.
      indexURL: fromFileUrl(new URL(".", moduleUrl)),
      stdout: logToStderr,
      stderr: logToStderr,
    });
    if (!restored) throw new Error("Cannot boot: Pyodide did not restore the snapshot's memory");
    if (hints && !hints.applied()) {
      logToStderr("sandbox: Pyodide's module got no compilation hints");
    }
    return pyodide;
  } finally {
    typedArray.set = set;
    hints?.restore();
  }
}

/**
 * Waits until V8's background threads are done optimizing what boot and warm-up made hot (CPython's
 * eval loop above all, about 0.15 CPU-s), so that work is part of the boot: a sandbox pooled
 * afterwards spends no CPU while it waits, and the script it gets runs on the optimized code.
 * Settled: two windows in a row in which the whole process used under a tenth of a core.
 * Bounded, so a machine too busy to tell never holds a sandbox back for long.
 */
async function compilationSettled(): Promise<void> {
  const WINDOW_MS = 25;
  const QUIET_MICROS = WINDOW_MS * 100; // a tenth of one core
  const deadline = performance.now() + 2000;
  let quiet = 0;
  let last = process.cpuUsage();
  while (quiet < 2 && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, WINDOW_MS));
    const used = process.cpuUsage(last);
    last = process.cpuUsage();
    quiet = used.user + used.system < QUIET_MICROS ? quiet + 1 : 0;
  }
}

function isStackOverflow(error: unknown): boolean {
  return error instanceof RangeError && /call stack/i.test(error.message);
}

async function main(args: string[]): Promise<number> {
  const launch = parseWorkerArgs(args);
  if (launch?.mode === "build-snapshot") {
    await buildSnapshot(launch.pyodideModuleUrl, launch.outputPath, launch.preloadSpecPath);
    return 0;
  }
  if (launch?.mode === "serve") {
    await serve();
    return 0;
  }
  logToStderr("usage: worker build-snapshot <pyodide module URL> <path> | worker serve");
  return 2;
}

/** Runs the worker; returns the process exit code. */
export async function runWorker(args: string[]): Promise<number> {
  try {
    return await main(args);
  } catch (error) {
    logToStderr(`sandbox: ${error instanceof Error ? error.stack : String(error)}`);
    return 70;
  }
}

if (import.meta.main) Deno.exit(await runWorker(Deno.args));
