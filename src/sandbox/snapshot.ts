/**
 * The Pyodide memory snapshot: built once on first use, cached, verified before it is trusted.
 *
 * The file name carries a key derived from everything that shapes the snapshot (Pyodide's
 * version, Deno's version, the Python modules), so changing any of them builds a new one. The
 * file starts with a header holding the SHA-256 of the snapshot bytes that follow (see
 * snapshot_format.ts); a file whose bytes do not match is rebuilt. One file, renamed into place,
 * so concurrent builders cannot race.
 */
import { join } from "node:path";
import { sha256Hex } from "../_util/digest.ts";
import { writeFileAtomically } from "../_util/atomic_write.ts";
import type { Logger } from "../_util/log.ts";
import { PYODIDE_VERSION } from "../_util/version.ts";
import { SNAPSHOT_MODULES } from "./snapshot_modules.ts";
import type { SandboxRuntime } from "./runtime.ts";
import { snapshotBuildCommand } from "./sandbox_command.ts";
import { closeToOthers, isClosedToOthers } from "./closed_to_others.ts";
import { hostOwner } from "../_util/host_owner.ts";
import { cacheFolderRefusal, privateFolderProblem } from "./private_folder.ts";
import {
  SNAPSHOT_FORMAT,
  SNAPSHOT_HEADER_BYTES,
  snapshotHeader,
  toSparse,
} from "./snapshot_format.ts";
import type { PackageFile, PreloadSpec } from "../rpc/sandbox_protocol.ts";

/** The key of the snapshot that the current code needs. */
export async function snapshotKey(): Promise<string> {
  const parts = [PYODIDE_VERSION, Deno.version.deno, SNAPSHOT_FORMAT, ...SNAPSHOT_MODULES.flat()]
    .join("\0");
  return (await sha256Hex(parts)).slice(0, 16);
}

export function snapshotPath(cacheDir: string, key: string): string {
  return join(cacheDir, `snapshot-${PYODIDE_VERSION}-${key}.bin`);
}

/** Whether the snapshot file at `path` exists and its bytes match its header. */
export async function isSnapshotIntact(path: string): Promise<boolean> {
  try {
    const file = await Deno.readFile(path);
    const header = new TextDecoder().decode(file.subarray(0, SNAPSHOT_HEADER_BYTES));
    return snapshotHeader(await sha256Hex(file.subarray(SNAPSHOT_HEADER_BYTES))) === header;
  } catch {
    return false;
  }
}

/**
 * What a snapshot file looked like when its bytes were last found intact: size, inode, and
 * modification and change times. Any write to the file changes its change time, which no one
 * can set back, so a file that still looks the same has not been written since.
 */
function fileStamp(info: Deno.FileInfo): string {
  return JSON.stringify([info.size, info.ino, info.mtime?.getTime(), info.ctime?.getTime()]);
}

/**
 * Whether the snapshot at `path` is intact, without reading it when it has not changed since it
 * was last found so: a start then costs a `stat` instead of hashing 30 MiB. The stamp beside it
 * (`<path>.verified`) records how the file looked; a file changed since is hashed in full. The
 * hash guards against torn and corrupted files; the cache folder itself is trusted (no sandbox
 * can write it, see runtimeTrustedPaths).
 */
export async function isSnapshotVerified(path: string): Promise<boolean> {
  const info = await Deno.stat(path).catch(() => null);
  if (info === null) return false;
  // Writable by others (older versions created it so): not trusted, built again privately.
  if (Deno.build.os !== "windows" && ((info.mode ?? 0) & 0o022) !== 0) return false;
  const stampPath = `${path}${STAMP_SUFFIX}`;
  if (await Deno.readTextFile(stampPath).catch(() => null) === fileStamp(info)) return true;
  if (!(await isSnapshotIntact(path))) return false;
  await writeFileAtomically(stampPath, fileStamp(info)).catch(() => {});
  return true;
}

const STAMP_SUFFIX = ".verified";

/**
 * Returns the path of a verified snapshot for the current code, building it when it is missing,
 * stale or corrupt. Safe to call from several processes at once (atomic rename).
 */
export async function ensureSnapshot(
  runtime: SandboxRuntime,
  log: Logger,
  /** Stops a build in progress (the server is shutting down before it finished starting). */
  signal?: AbortSignal,
): Promise<string> {
  const path = snapshotPath(runtime.cacheDir, await snapshotKey());
  await checkCacheFolder(runtime.cacheDir);
  if (await isSnapshotVerified(path)) return path;
  log.info("building the Pyodide memory snapshot (first start; takes a few seconds)", { path });
  await buildSnapshot(runtime, path, log, undefined, signal);
  await removeStaleSnapshots(runtime.cacheDir, path, log);
  return path;
}

/**
 * Makes the cache folder (closed to others when new) and refuses it when another local user could
 * put a snapshot or a preloaded folder of their own there (see private_folder.ts). The server's
 * user is told by a file it makes there: a folder it cannot write is refused (one another user
 * made first, in a shared folder, is writable only by them). Returns the server's user.
 */
async function checkCacheFolder(cacheDir: string): Promise<number> {
  await Deno.mkdir(cacheDir, { recursive: true, mode: 0o700 });
  const serverUser = hostOwner(cacheDir)?.uid;
  if (serverUser === undefined) {
    throw new Error(cacheFolderRefusal(`this server's user cannot write ${cacheDir}`));
  }
  const problem = await privateFolderProblem(cacheDir, serverUser);
  if (problem) throw new Error(cacheFolderRefusal(problem));
  return serverUser;
}

/** A snapshot with a profile's preloaded packages imported, and the folder holding their files. */
export interface PreloadedSnapshot {
  path: string;
  preloadDir: string;
}

/**
 * The snapshot for a profile that preloads `packages` (checked files, dependencies first),
 * building it when it is missing, stale or corrupt. Its key covers the base snapshot's and every
 * file's name and bytes, so a change of the list, the lock or a file builds a new one.
 */
export async function ensurePreloadedSnapshot(
  runtime: SandboxRuntime,
  packages: PackageFile[],
  log: Logger,
  signal?: AbortSignal,
): Promise<PreloadedSnapshot> {
  const files = packages.map((p) => [p.file, p.install_dir, p.data]).flat();
  const key = (await sha256Hex([await snapshotKey(), ...files].join("\0"))).slice(0, 16);
  const path = join(runtime.cacheDir, `${PRELOAD_PREFIX}${key}.bin`);
  const preloadDir = join(runtime.cacheDir, `${PRELOAD_PREFIX}${key}`);
  const serverUser = await checkCacheFolder(runtime.cacheDir);
  const folderExists = await Deno.stat(preloadDir).then(() => true, () => false);
  // Marked in use by the server that launches from it (keepInUse), not here. A folder found open
  // to others (left so by an older version) may have been changed by them: built again; and one
  // not all the server user's.
  if (
    folderExists && await isSnapshotVerified(path) &&
    await isClosedToOthers(preloadDir, serverUser)
  ) {
    return { path, preloadDir };
  }
  log.info("building a snapshot with preloaded packages", {
    packages: packages.map((p) => p.name),
    path,
  });
  // Built inside a folder only the server's user can enter, which the builder may not change:
  // no one else can open a file while the packages' code leaves it open to them.
  const privateDir = `${preloadDir}.${crypto.randomUUID()}.tmp`;
  const siteDir = join(privateDir, "site");
  const specPath = join(privateDir, "spec.json");
  await Deno.mkdir(privateDir, { mode: 0o700 });
  try {
    await Deno.chmod(privateDir, 0o700); // whatever the umask
    await Deno.mkdir(siteDir);
    const spec: PreloadSpec = { site_dir: siteDir, packages };
    await Deno.writeTextFile(specPath, JSON.stringify(spec));
    await buildSnapshot(runtime, path, log, { specPath, siteDir }, signal);
    // The builder ran the packages' code, which could leave anything open to others.
    await closeToOthers(siteDir);
    // The folder is moved into place after the snapshot that needs it is written; a folder a
    // crashed builder left half-written is replaced.
    await Deno.remove(preloadDir, { recursive: true }).catch(() => {});
    await Deno.rename(siteDir, preloadDir);
  } finally {
    await Deno.remove(privateDir, { recursive: true }).catch(() => {});
  }
  return { path, preloadDir };
}

/** File and folder names of preloaded snapshots in the cache folder. */
const PRELOAD_PREFIX = "preload-";

/** How long a snapshot no server has marked in use stays in the cache folder. */
const STALE_CACHE_MS = 7 * 24 * 3600_000;

/**
 * How old a build's scratch file or folder (`.tmp`) must be to count as abandoned: a server
 * killed while it built a snapshot leaves one (a preload's holds its packages, hundreds of MB),
 * and nothing else would ever remove it. A build takes minutes.
 */
const ABANDONED_BUILD_MS = 24 * 3600_000;

/** Removes `path` (file or folder) if it is a build's scratch left for a day: see above. */
async function removeIfAbandoned(path: string, now: number): Promise<boolean> {
  const changed = (await Deno.lstat(path).catch(() => null))?.mtime?.getTime() ?? now;
  if (now - changed < ABANDONED_BUILD_MS) return false;
  await Deno.remove(path, { recursive: true }).catch(() => {});
  return true;
}

/**
 * Removes preloaded snapshots (and their folders) that no server has started with for a week.
 * Not at once: another server sharing the cache folder may be using one this config does not.
 */
export async function removeStalePreloads(
  cacheDir: string,
  keep: PreloadedSnapshot[],
  log: Logger,
  now = Date.now(),
): Promise<void> {
  const kept = new Set(keep.map((k) => k.preloadDir));
  for await (const entry of Deno.readDir(cacheDir)) {
    const full = join(cacheDir, entry.name);
    if (!entry.name.startsWith(PRELOAD_PREFIX) || kept.has(full)) continue;
    if (entry.name.endsWith(".tmp")) {
      // A build in progress, or one a killed server left (its folder, or its raw snapshot).
      if (await removeIfAbandoned(full, now)) {
        log.debug("removed an abandoned build", { path: full });
      }
      continue;
    }
    if (!entry.isDirectory) continue;
    const used = (await Deno.stat(full)).mtime?.getTime() ?? now;
    if (now - used < STALE_CACHE_MS) continue;
    await Deno.remove(full, { recursive: true }).catch(() => {});
    await Deno.remove(`${full}.bin`).catch(() => {});
    await Deno.remove(`${full}.bin${STAMP_SUFFIX}`).catch(() => {});
    log.debug("removed a stale preloaded snapshot", { path: full });
  }
}

/** Runs the snapshot builder and writes its output, with its checksum header, to `path`. */
async function buildSnapshot(
  runtime: SandboxRuntime,
  path: string,
  log: Logger,
  preload?: { specPath: string; siteDir: string },
  signal?: AbortSignal,
): Promise<void> {
  const started = performance.now();
  // The builder writes the bare snapshot here; the verified file is then written atomically.
  const raw = `${path}.${crypto.randomUUID()}.tmp`;
  try {
    const { command, args, env } = snapshotBuildCommand(runtime, raw, preload);
    const built = await new Deno.Command(command, {
      args,
      clearEnv: true,
      env,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
      signal,
    }).output();
    if (!built.success) {
      const stderr = new TextDecoder().decode(built.stderr).slice(-2000);
      throw new Error(`Cannot build the Pyodide snapshot: worker exited ${built.code}\n${stderr}`);
    }
    const bytes = toSparse(await Deno.readFile(raw));
    const header = new TextEncoder().encode(snapshotHeader(await sha256Hex(bytes)));
    const file = new Uint8Array(header.length + bytes.length);
    file.set(header);
    file.set(bytes, header.length);
    await writeFileAtomically(path, file);
    await writeFileAtomically(`${path}${STAMP_SUFFIX}`, fileStamp(await Deno.stat(path)));
  } finally {
    await Deno.remove(raw).catch(() => {});
  }
  log.info("snapshot ready", { ms: Math.round(performance.now() - started) });
}

export async function removeStaleSnapshots(
  cacheDir: string,
  keep: string,
  log: Logger,
  now = Date.now(),
): Promise<void> {
  for await (const entry of Deno.readDir(cacheDir)) {
    const full = join(cacheDir, entry.name);
    if (!entry.name.startsWith("snapshot-") || full === keep) continue;
    if (entry.name.endsWith(".tmp")) {
      if (await removeIfAbandoned(full, now)) {
        log.debug("removed an abandoned build", { path: full });
      }
      continue;
    }
    if (entry.name.endsWith(STAMP_SUFFIX)) continue;
    // Another server sharing this folder (another version, another checkout) may run from it:
    // only a snapshot no server has marked in use for a week goes (see keepInUse).
    const marked = await Deno.stat(`${full}${STAMP_SUFFIX}`).catch(() => Deno.stat(full));
    if (now - (marked.mtime?.getTime() ?? now) < STALE_CACHE_MS) continue;
    await Deno.remove(full).catch(() => {});
    await Deno.remove(`${full}${STAMP_SUFFIX}`).catch(() => {});
    log.debug("removed a stale snapshot", { path: full });
  }
}

/** How often a running server marks the snapshots it launches from in use again. */
const IN_USE_REFRESH_MS = 24 * 3600_000;

/**
 * Marks the snapshot files at `paths` in use, now and each day while the server runs, so a
 * server of another version sharing the cache folder does not remove them (see
 * removeStaleSnapshots and removeStalePreloads). Returns what stops it.
 */
export function keepInUse(paths: string[]): () => void {
  const mark = () => {
    const now = new Date();
    for (const path of paths) void Deno.utime(path, now, now).catch(() => {});
  };
  mark();
  const timer = setInterval(mark, IN_USE_REFRESH_MS);
  Deno.unrefTimer(timer);
  return () => clearInterval(timer);
}

/** The file that marks the snapshot at `path` in use (its verification stamp). */
export function inUseMark(path: string): string {
  return `${path}${STAMP_SUFFIX}`;
}
