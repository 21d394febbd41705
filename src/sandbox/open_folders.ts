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
 * group and others cannot enter, owned by `uid` or root (its owner could open it again), and not
 * itself in a read-write folder of `writable` (a script of that profile could open it).
 * `lstat` is passed in (tests give modes of their own).
 */
export function closedAbove(
  folder: string,
  uid: number,
  lstat: (path: string) => { mode: number | null; uid: number | null } = Deno.lstatSync,
  writable: readonly string[] = [],
): boolean {
  let at = folder;
  while (at !== "/") {
    at = dirname(at);
    if (writable.some((rw) => at === rw || at.startsWith(rw + "/"))) continue;
    try {
      const info = lstat(at);
      const owned = info.uid === uid || info.uid === 0;
      if (owned && info.mode !== null && (info.mode & OTHERS_ENTER) === 0) return true;
    } catch {
      // Not readable: not known to be closed.
    }
  }
  return false;
}

/** A read-write folder other local users can reach, and the profiles that mount it. */
export interface OpenFolder {
  folder: string;
  profiles: string[];
}

/** The read-write folders of `profiles` that other local users can reach, each once. */
export function foldersOpenToOthers(
  profiles: Iterable<Profile>,
  uid: number,
  lstat?: (path: string) => { mode: number | null; uid: number | null },
): OpenFolder[] {
  const mountedBy = new Map<string, string[]>();
  for (const profile of profiles) {
    for (const folder of profile.folders) {
      if (folder.mode !== "rw") continue;
      const names = mountedBy.get(folder.host) ?? [];
      if (!names.includes(profile.name)) names.push(profile.name);
      mountedBy.set(folder.host, names);
    }
  }
  const writable = [...mountedBy.keys()];
  return [...mountedBy]
    .filter(([folder]) => !closedAbove(folder, uid, lstat, writable))
    .map(([folder, names]) => ({ folder, profiles: names }));
}
