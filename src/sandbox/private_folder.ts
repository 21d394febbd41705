/**
 * The cache folder holds what every sandbox boots from (the snapshots) and mounts (preloaded
 * packages): another local user who could write it, or rename it or a folder above it, could
 * put their own there. So it must be the server user's own, and closed to writes by others, and
 * so must every folder above it that is not sticky (a sticky one, like /tmp, lets no one move
 * another user's entries); and every folder above it must be root's or the server user's (the
 * owner of a folder may rename what is in it, whatever its mode).
 */
import { dirname, join, relative, resolve } from "node:path";

/** Writable by group or others. */
const SHARED_WRITE = 0o022;
const STICKY = 0o1000;

/**
 * Why `path` cannot be trusted to hold what sandboxes boot from, or null. `serverUid`: the
 * server's user (undefined when unknown: then only modes are checked).
 */
export async function privateFolderProblem(
  path: string,
  serverUid: number | undefined,
): Promise<string | null> {
  const own = await Deno.lstat(path);
  if (serverUid !== undefined && own.uid !== serverUid) {
    return `${path} belongs to another user (uid ${own.uid})`;
  }
  if (own.isSymlink) return `${path} is a symlink`;
  if ((own.mode ?? 0) & SHARED_WRITE) {
    return `other users can write ${path} (mode ${((own.mode ?? 0) & 0o7777).toString(8)})`;
  }
  return await foldersAboveProblem(path, serverUid);
}

/**
 * Why a folder above `path` would let another user move it or put another in its place, or
 * null: one that others can write and that is not sticky; one that belongs to a user other than
 * root and `serverUid` (a symlink too: its owner may replace it); or a folder above it not made
 * yet whose nearest existing folder others can write, sticky or not (they could make it first,
 * as theirs, before the server makes it). The path as written is walked, and so is where each
 * symlink on it leads (`MAX_SYMLINKS` at most). The walk stops at the first folder this process
 * may not read (the restricted host may read none: the process that launches it runs this walk
 * too, see restricted_relaunch.ts). `serverUid` undefined: only modes are checked.
 */
export async function foldersAboveProblem(
  path: string,
  serverUid: number | undefined,
): Promise<string | null> {
  const chains = [resolve(path)];
  for (let i = 0; i < chains.length; i++) {
    if (i > MAX_SYMLINKS) return `${path} leads through more than ${MAX_SYMLINKS} symlinks`;
    const problem = await chainProblem(chains[i]!, path, serverUid, (leadsTo) => {
      chains.push(leadsTo);
    });
    if (problem) return problem;
  }
  return null;
}

/** Symlinks followed at most while walking a path (the kernel's own limit is 40). */
const MAX_SYMLINKS = 40;

/**
 * Walks the folders above `chain` (see foldersAboveProblem); `follow` is given the path each
 * symlink among them leads to, with the rest of `chain` after it.
 */
async function chainProblem(
  chain: string,
  path: string,
  serverUid: number | undefined,
  follow: (leadsTo: string) => void,
): Promise<string | null> {
  let missing: string | null = null; // the highest folder above `path` not made yet
  for (let above = dirname(chain);; above = dirname(above)) {
    let info: Deno.FileInfo | null = null;
    try {
      info = await Deno.lstat(above);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) return null;
      missing = above;
    }
    const owner = info?.uid ?? null;
    if (serverUid !== undefined && owner !== null && owner !== 0 && owner !== serverUid) {
      return `another user (uid ${owner}) can move ${path} or put another folder in its place: ` +
        `${above} is theirs`;
    }
    if (info?.isSymlink) {
      const target = await Deno.readLink(above).catch(() => null);
      if (target === null) return null; // as for a folder it may not read
      follow(join(resolve(dirname(above), target), relative(above, chain)));
    }
    // A symlink's own mode says nothing (the folder it leads to is walked in its turn).
    const mode = info && !info.isSymlink ? info.mode ?? 0 : 0;
    if ((mode & SHARED_WRITE) && !(mode & STICKY)) {
      return `another user can move ${path} or put another folder in its place through ${above}` +
        ` (mode ${(mode & 0o7777).toString(8)})`;
    }
    if (info && missing !== null) {
      if (mode & SHARED_WRITE) {
        return `another user could make ${missing} first, as theirs, in ${above} (mode ${
          (mode & 0o7777).toString(8)
        }): make it before starting the server`;
      }
      missing = null;
    }
    if (above === dirname(above)) return null;
  }
}

/** The start's refusal of a cache folder for `problem` (the host's and its launcher's). */
export function cacheFolderRefusal(problem: string): string {
  return `Cannot use the cache folder: ${problem}. Every sandbox boots from what it holds; use a ` +
    "folder only this user can write (CODEMODE_CACHE_DIR)";
}
