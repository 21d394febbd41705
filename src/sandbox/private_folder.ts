/**
 * The cache folder holds what every sandbox boots from (the snapshots) and mounts (preloaded
 * packages): another local user who could write it, or rename it or a folder above it, could
 * put their own there. So it must be the server user's own, and closed to writes by others, and
 * so must every folder above it that is not sticky (a sticky one, like /tmp, lets no one move
 * another user's entries); and every folder above it must be root's or the server user's (the
 * owner of a folder may rename what is in it, whatever its mode).
 */
import { basename, dirname, join, resolve } from "node:path";

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
 * Why a folder above `path` would let another user move it or put another in its place (one
 * that others can write and that is not sticky, or one that belongs to a user other than root
 * and `serverUid`; a symlink among them that belongs to such a user, who may replace it), or
 * null. Both the path as written and its real path are walked: a symlink above leads to folders
 * of its own. Folders not there yet are skipped; the walk stops at the first this process may not
 * read (the restricted host may read none: the process that launches it runs this walk too, see
 * restricted_relaunch.ts). `serverUid` undefined: only modes are checked.
 */
export async function foldersAboveProblem(
  path: string,
  serverUid: number | undefined,
): Promise<string | null> {
  const written = resolve(path);
  for (const chain of new Set([written, await realPathOf(written)])) {
    const problem = await chainProblem(chain, path, serverUid);
    if (problem) return problem;
  }
  return null;
}

/** `path` with the symlinks of its nearest existing folder resolved (itself may not exist yet). */
async function realPathOf(path: string): Promise<string> {
  for (let known = path, rest = "";; rest = join(basename(known), rest), known = dirname(known)) {
    try {
      return join(await Deno.realPath(known), rest);
    } catch {
      if (known === dirname(known)) return path;
    }
  }
}

async function chainProblem(
  chain: string,
  path: string,
  serverUid: number | undefined,
): Promise<string | null> {
  for (let above = dirname(chain);; above = dirname(above)) {
    let info: Deno.FileInfo | null = null;
    try {
      info = await Deno.lstat(above);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) return null;
    }
    const owner = info?.uid ?? null;
    if (serverUid !== undefined && owner !== null && owner !== 0 && owner !== serverUid) {
      return `another user (uid ${owner}) can move ${path} or put another folder in its place: ` +
        `${above} is theirs`;
    }
    // A symlink's own mode says nothing (the folder it leads to is walked as the real path).
    const mode = info && !info.isSymlink ? info.mode ?? 0 : 0;
    if ((mode & SHARED_WRITE) && !(mode & STICKY)) {
      return `another user can move ${path} or put another folder in its place through ${above}` +
        ` (mode ${(mode & 0o7777).toString(8)})`;
    }
    if (above === dirname(above)) return null;
  }
}

/** The start's refusal of a cache folder for `problem` (the host's and its launcher's). */
export function cacheFolderRefusal(problem: string): string {
  return `Cannot use the cache folder: ${problem}. Every sandbox boots from what it holds; use a ` +
    "folder only this user can write (CODEMODE_CACHE_DIR)";
}
