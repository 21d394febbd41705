/**
 * Takes away the group and world write bits a script gave files in its profile's read-write
 * folders. Python's own file calls cannot set them (`maskWritableModes` in worker.ts), but a
 * script can call Deno's `chmod` through `js`, which the folder's write permission allows: the
 * host clears them when the run ends (a session's process is paused by then). Only entries
 * changed since the run began are touched, so modes a person set before keep as they were.
 *
 * A folder that has grown past what the host looks at (a script can fill it) is closed to group
 * and others instead, so that whatever the walk did not reach, nobody else can reach either.
 */
import { join } from "node:path";
import type { Logger } from "../_util/log.ts";
import type { Profile } from "../sandbox/profile.ts";

/** Entries looked at per folder (as many as a profile's folder may hold at start). */
export const MAX_ENTRIES = 20_000;
const SHARED_WRITE = 0o022;
const SHARED_ALL = 0o077;

/** Clears the bits in every `rw` folder of `profile` on entries changed since `since`. */
export async function clearSharedWriteModes(
  profile: Pick<Profile, "folders">,
  since: Date,
  log: Logger,
  maxEntries = MAX_ENTRIES,
): Promise<void> {
  // ctime may be kept in whole seconds.
  const from = Math.floor(since.getTime() / 1000) * 1000 - 1000;
  for (const folder of profile.folders) {
    if (folder.mode !== "rw") continue;
    try {
      if (await clearIn(folder.host, from, maxEntries)) continue;
      const { mode } = await Deno.stat(folder.host);
      await Deno.chmod(folder.host, (mode ?? 0o700) & 0o7777 & ~SHARED_ALL);
      log.warn(
        `a read-write folder holds more than ${maxEntries} entries, more than the host checks ` +
          "for write access given to others: it is closed to group and others",
        { folder: folder.host },
      );
    } catch (error) {
      log.warn("cannot check a read-write folder for shared write modes", {
        folder: folder.host,
        error: (error as Error).message,
      });
    }
  }
}

/** Whether every entry was looked at (false: past `maxEntries`). */
async function clearIn(root: string, from: number, maxEntries: number): Promise<boolean> {
  const pending = [root];
  let seen = 0;
  while (pending.length > 0) {
    const path = pending.pop()!;
    let info: Deno.FileInfo;
    try {
      info = await Deno.lstat(path);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) continue; // gone since it was listed
      throw error;
    }
    if (info.isSymlink) continue; // never followed (a sandbox cannot create one)
    const changed = (info.ctime?.getTime() ?? Infinity) >= from;
    if (changed && info.mode !== null && (info.mode & SHARED_WRITE) !== 0) {
      await Deno.chmod(path, info.mode & 0o7777 & ~SHARED_WRITE);
    }
    if (!info.isDirectory) continue;
    for await (const entry of Deno.readDir(path)) {
      if (++seen > maxEntries) return false;
      pending.push(join(path, entry.name));
    }
  }
  return true;
}
