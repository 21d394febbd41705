/**
 * Takes away what a script gave files in its profile's read-write folders for other users of
 * the host: group and world write, and the setuid, setgid and sticky bits (a setuid program
 * left there would run as the server's user for whoever starts it). Python's own file calls
 * cannot set them (`maskSharedModes` in worker.ts), but a script can call Deno's `chmod`
 * through `js`, which the folder's write permission allows: the host clears them when the run
 * ends (a session's process is paused by then). Only entries changed since the run began are
 * touched, so modes a person set before keep as they were.
 *
 * A folder the host cannot walk to the end (a script can fill it past what the host looks at,
 * or make a subfolder the server's user cannot list) is closed to group and others instead, so
 * that whatever the walk did not reach, nobody else can reach either.
 *
 * The same for ownership: a server running as root lets its scripts `chown` (Deno's, through
 * `js`) in those folders, and a folder given to another user lets that user plant a symlink
 * there that later scripts would follow out of the folder. An entry changed in the run and owned
 * by another user is given back to the server's user; a symlink that appeared in the run (a
 * sandbox cannot make one: someone else did) and leads out of the folder is removed.
 */
import { dirname, join, resolve } from "node:path";
import type { Logger } from "../_util/log.ts";
import type { Profile } from "../sandbox/profile.ts";
import { SHARED_MODE_BITS } from "../rpc/sandbox_protocol.ts";
import type { Owner } from "../_util/host_owner.ts";

/** Entries looked at per folder (as many as a profile's folder may hold at start). */
export const MAX_ENTRIES = 20_000;
const SHARED_ALL = 0o077;

/** The file-system calls the sweep makes (tests put failures in). */
export interface SweepFs {
  lstat(path: string): Promise<Deno.FileInfo>;
  readDir(path: string): AsyncIterable<Deno.DirEntry>;
}

const REAL_FS: SweepFs = { lstat: Deno.lstat, readDir: Deno.readDir };

/** What the sweeps of one host process remember between runs. */
export interface SweepState {
  /**
   * Per folder, since when changed entries are still to be checked: set when a walk could not
   * finish, or another run was going on in the folder while it walked (that run may move what
   * the walk had not reached yet), so the folder's next sweep looks at everything changed since
   * then, not only in its own run.
   */
  uncheckedSince: Map<string, number>;
  /** Per folder, how many runs are going on in it now. */
  running: Map<string, number>;
}

const PROCESS_SWEEPS: SweepState = { uncheckedSince: new Map(), running: new Map() };

export interface SweepOptions {
  maxEntries?: number;
  /** The server's own user and group: entries changed in a run and owned by others go back. */
  owner?: Owner;
  fs?: SweepFs;
  state?: SweepState;
}

/**
 * Call as a run starts in `profile`'s sandbox; returns the sweep to call once, when it has ended
 * (its sandbox stopped or paused), which clears the bits on what changed in its `rw` folders.
 */
export function watchSharedModes(
  profile: Pick<Profile, "folders">,
  options: SweepOptions = {},
): { sweep(log: Logger): Promise<void> } {
  const state = options.state ?? PROCESS_SWEEPS;
  const folders = profile.folders.filter((f) => f.mode === "rw").map((f) => f.host);
  for (const host of folders) state.running.set(host, (state.running.get(host) ?? 0) + 1);
  const since = new Date();
  return {
    async sweep(log) {
      for (const host of folders) {
        const left = (state.running.get(host) ?? 1) - 1;
        if (left > 0) state.running.set(host, left);
        else state.running.delete(host);
      }
      await clearSharedWriteModes({ folders: profile.folders }, since, log, { ...options, state });
    },
  };
}

/** Clears the bits in every `rw` folder of `profile` on entries changed since `since`. */
export async function clearSharedWriteModes(
  profile: Pick<Profile, "folders">,
  since: Date,
  log: Logger,
  { maxEntries = MAX_ENTRIES, fs = REAL_FS, state = PROCESS_SWEEPS, owner }: SweepOptions = {},
): Promise<void> {
  // ctime may be kept in whole seconds.
  const runFrom = Math.floor(since.getTime() / 1000) * 1000 - 1000;
  const unchecked = state.uncheckedSince;
  for (const folder of profile.folders) {
    if (folder.mode !== "rw") continue;
    const from = Math.min(runFrom, unchecked.get(folder.host) ?? runFrom);
    const unwalked = await clearIn(folder.host, from, { maxEntries, fs, owner, log });
    const othersRunning = (state.running.get(folder.host) ?? 0) > 0;
    if (unwalked === null) {
      if (othersRunning) unchecked.set(folder.host, from);
      else unchecked.delete(folder.host);
      continue;
    }
    unchecked.set(folder.host, from);
    try {
      const { mode } = await Deno.stat(folder.host);
      await Deno.chmod(folder.host, (mode ?? 0o700) & 0o7777 & ~SHARED_ALL);
      log.warn(
        `the host cannot check all of a read-write folder for modes given to others ` +
          `(${unwalked}): it is closed to group and others`,
        { folder: folder.host },
      );
    } catch (error) {
      log.warn("cannot close a read-write folder to others", {
        folder: folder.host,
        error: (error as Error).message,
      });
    }
  }
}

/**
 * Walks `root`, clearing what it can; null when every entry was looked at, else why not (past
 * `maxEntries`, or an entry it could not read: the walk goes on past it).
 */
async function clearIn(
  root: string,
  from: number,
  { maxEntries, fs, owner, log }: {
    maxEntries: number;
    fs: SweepFs;
    owner: Owner | undefined;
    log: Logger;
  },
): Promise<string | null> {
  const pending = [root];
  let seen = 0;
  let unwalked: string | null = null;
  while (pending.length > 0) {
    const path = pending.pop()!;
    try {
      const info = await fs.lstat(path);
      const changed = (info.ctime?.getTime() ?? Infinity) >= from;
      if (info.isSymlink) {
        // Never followed. A sandbox cannot make one: made in the run, it is someone else's,
        // in a folder the script opened to them.
        if (changed && await leadsOut(root, path)) {
          await Deno.remove(path);
          log.warn("removed a symlink made during a run that led out of a read-write folder", {
            folder: root,
            link: path,
          });
        }
        continue;
      }
      if (changed && owner && info.uid !== null && info.uid !== owner.uid) {
        await Deno.chown(path, owner.uid, owner.gid); // clears setuid and setgid too
        info.mode = (await fs.lstat(path)).mode;
      }
      if (changed && info.mode !== null && (info.mode & SHARED_MODE_BITS) !== 0) {
        await Deno.chmod(path, info.mode & 0o7777 & ~SHARED_MODE_BITS);
      }
      if (!info.isDirectory) continue;
      for await (const entry of fs.readDir(path)) {
        if (++seen > maxEntries) return `more than ${maxEntries} entries`;
        pending.push(join(path, entry.name));
      }
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) continue; // gone since it was listed
      unwalked ??= `${path}: ${(error as Error).message}`;
    }
  }
  return unwalked;
}

/**
 * Whether the link at `path` leads out of `root` at any step: its text, or the text of a link it
 * names in turn, names a path outside (a link through a path another user holds can be pointed
 * elsewhere after the sweep: one that led back inside when it looked was kept, and re-pointed
 * later at the server's own files, which sandboxes then read and wrote); or, followed to its end,
 * it ends outside (its text can stay inside while a link it passes through climbs out), or
 * cannot be followed (it dangles, or ends where the host may not look).
 */
async function leadsOut(root: string, path: string): Promise<boolean> {
  const inside = (to: string) => to === root || to.startsWith(root + "/");
  try {
    let at = path;
    for (let hop = 0; hop < MAX_LINK_HOPS; hop++) {
      const to = resolve(dirname(at), await Deno.readLink(at));
      if (!inside(to)) return true;
      if (!(await Deno.lstat(to)).isSymlink) break;
      at = to;
    }
    return !inside(await Deno.realPath(path));
  } catch {
    return true;
  }
}

/** Links followed, as Linux follows at most. */
const MAX_LINK_HOPS = 40;
