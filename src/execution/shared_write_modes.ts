/**
 * Takes away the group and world write bits a script gave files in its profile's read-write
 * folders. Python's own file calls cannot set them (`maskWritableModes` in worker.ts), but a
 * script can call Deno's `chmod` through `js`, which the folder's write permission allows: the
 * host clears them when the run ends (a session's process is paused by then). Only entries
 * changed since the run began are touched, so modes a person set before keep as they were.
 */
import { join } from "node:path";
import type { Logger } from "../_util/log.ts";
import type { Profile } from "../sandbox/profile.ts";

/** Entries looked at per folder; a script cannot make this walk take long. */
const MAX_ENTRIES = 20_000;
const SHARED_WRITE = 0o022;

/** Clears the bits in every `rw` folder of `profile` on entries changed since `since`. */
export async function clearSharedWriteModes(
  profile: Profile,
  since: Date,
  log: Logger,
): Promise<void> {
  // ctime may be kept in whole seconds.
  const from = Math.floor(since.getTime() / 1000) * 1000 - 1000;
  for (const folder of profile.folders) {
    if (folder.mode !== "rw") continue;
    try {
      await clearIn(folder.host, from);
    } catch (error) {
      log.warn("cannot check a read-write folder for shared write modes", {
        folder: folder.host,
        error: (error as Error).message,
      });
    }
  }
}

async function clearIn(root: string, from: number): Promise<void> {
  const pending = [root];
  let seen = 0;
  while (pending.length > 0) {
    const path = pending.pop()!;
    const info = await Deno.lstat(path);
    if (info.isSymlink) continue; // never followed (a sandbox cannot create one)
    const changed = (info.ctime?.getTime() ?? Infinity) >= from;
    if (changed && info.mode !== null && (info.mode & SHARED_WRITE) !== 0) {
      await Deno.chmod(path, info.mode & 0o7777 & ~SHARED_WRITE);
    }
    if (!info.isDirectory) continue;
    for await (const entry of Deno.readDir(path)) {
      if (++seen > MAX_ENTRIES) return;
      pending.push(join(path, entry.name));
    }
  }
}
