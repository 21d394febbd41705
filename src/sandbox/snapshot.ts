/**
 * The Pyodide memory snapshot: built once on first use, cached, verified before it is trusted.
 *
 * The file name carries a key derived from everything that shapes the snapshot (Pyodide's
 * version, Deno's version, the Python modules), so changing any of them builds a new one. The
 * file starts with a header holding the SHA-256 of the snapshot bytes that follow (see
 * snapshot_format.ts); a file whose bytes do not match is rebuilt. One file, renamed into place,
 * so concurrent builders cannot race.
 */
import { readEnv } from "../config/environment.ts";
import { join } from "node:path";
import { sha256Hex } from "../_util/digest.ts";
import { writeFileAtomically } from "../_util/atomic_write.ts";
import type { Logger } from "../_util/log.ts";
import { PYODIDE_VERSION } from "../_util/version.ts";
import { SNAPSHOT_MODULES } from "./snapshot_modules.ts";
import type { SandboxRuntime } from "./runtime.ts";
import { snapshotBuildCommand } from "./sandbox_command.ts";
import { SNAPSHOT_HEADER_BYTES, snapshotHeader } from "./snapshot_format.ts";

/** The key of the snapshot that the current code needs. */
export async function snapshotKey(): Promise<string> {
  const parts = [PYODIDE_VERSION, Deno.version.deno, ...SNAPSHOT_MODULES.flat()].join("\0");
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
 * Returns the path of a verified snapshot for the current code, building it when it is missing,
 * stale or corrupt. Safe to call from several processes at once (atomic rename).
 */
export async function ensureSnapshot(runtime: SandboxRuntime, log: Logger): Promise<string> {
  const path = snapshotPath(runtime.cacheDir, await snapshotKey());
  if (await isSnapshotIntact(path)) return path;
  await Deno.mkdir(runtime.cacheDir, { recursive: true });
  log.info("building the Pyodide memory snapshot (first start; takes a few seconds)", { path });
  const started = performance.now();
  // The builder writes the bare snapshot here; the verified file is then written atomically.
  const raw = `${path}.${crypto.randomUUID()}.tmp`;
  try {
    const { command, args } = snapshotBuildCommand(runtime, raw);
    const built = await new Deno.Command(command, {
      args,
      clearEnv: true,
      env: childEnv(),
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!built.success) {
      const stderr = new TextDecoder().decode(built.stderr).slice(-2000);
      throw new Error(`Cannot build the Pyodide snapshot: worker exited ${built.code}\n${stderr}`);
    }
    const bytes = await Deno.readFile(raw);
    const header = new TextEncoder().encode(snapshotHeader(await sha256Hex(bytes)));
    const file = new Uint8Array(header.length + bytes.length);
    file.set(header);
    file.set(bytes, header.length);
    await writeFileAtomically(path, file);
  } finally {
    await Deno.remove(raw).catch(() => {});
  }
  log.info("snapshot ready", { ms: Math.round(performance.now() - started) });
  await removeStaleSnapshots(runtime.cacheDir, path, log);
  return path;
}

async function removeStaleSnapshots(cacheDir: string, keep: string, log: Logger): Promise<void> {
  for await (const entry of Deno.readDir(cacheDir)) {
    const full = join(cacheDir, entry.name);
    if (!entry.name.startsWith("snapshot-") || full === keep) continue;
    if (entry.name.endsWith(".tmp")) continue;
    await Deno.remove(full).catch(() => {});
    log.debug("removed a stale snapshot", { path: full });
  }
}

/**
 * The whole environment a sandbox or snapshot builder gets. Deno needs to find its cache; the
 * script cannot read any of this (no --allow-env).
 */
export function childEnv(): Record<string, string> {
  const env: Record<string, string> = { NO_COLOR: "1" };
  for (const name of ["DENO_DIR", "HOME", "XDG_CACHE_HOME"] as const) {
    const value = readEnv(name);
    if (value !== undefined) env[name] = value;
  }
  return env;
}
