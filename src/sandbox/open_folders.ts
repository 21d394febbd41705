/**
 * Which read-write folders other local users can reach. A script can open its read-write folder
 * to them (`chmod` through `js`, which the folder's write permission allows) for the length of a
 * run, and what they do meanwhile (a file they hold open, a working folder inside, a hard link, a
 * link past what the end-of-run sweep walks) can outlast it (attacker round 47). What keeps them
 * out whatever the script does is a folder above it that they cannot enter, which the script
 * cannot change, having no write permission there.
 */
import { dirname } from "node:path";
import type { Profile } from "./profile.ts";

/** Search permission (x) for the group and for others. */
const OTHERS_ENTER = 0o011;

/**
 * Whether a folder strictly above `folder` (a real path) keeps other users out: one that the
 * group and others cannot enter, owned by `uid` or root (its owner could open it again). `lstat`
 * is passed in (tests give modes of their own).
 */
export function closedAbove(
  folder: string,
  uid: number,
  lstat: (path: string) => { mode: number | null; uid: number | null } = Deno.lstatSync,
): boolean {
  for (let at = dirname(folder);; at = dirname(at)) {
    try {
      const info = lstat(at);
      const owned = info.uid === uid || info.uid === 0;
      if (owned && info.mode !== null && (info.mode & OTHERS_ENTER) === 0) return true;
    } catch {
      // Not readable: not known to be closed.
    }
    if (at === "/") return false;
  }
}

/** The read-write folders of `profiles` that other local users can reach, each once. */
export function foldersOpenToOthers(
  profiles: Iterable<Profile>,
  uid: number,
  lstat?: (path: string) => { mode: number | null; uid: number | null },
): string[] {
  const open = new Set<string>();
  for (const profile of profiles) {
    for (const folder of profile.folders) {
      if (folder.mode === "rw" && !closedAbove(folder.host, uid, lstat)) open.add(folder.host);
    }
  }
  return [...open];
}
