/**
 * A folder the host built with code it does not trust (a profile's preloaded packages, unpacked
 * and imported by the snapshot builder), made safe to mount into sandboxes: owned by the server's
 * user throughout, its root closed to group and others, nothing in it group- or world-writable,
 * setuid, setgid or sticky (`SHARED_MODE_BITS`), and no symlink. Emscripten creates files with
 * mode 0666 and Deno applies no umask to an explicit mode, so without this every unpacked file
 * would be writable by every local user, who could then put code into every sandbox of the
 * profile. Modes set afterwards do not take back a file another user opened before, so the folder
 * is built where no one else can reach it (see `ensurePreloadedSnapshot`), and this closes what
 * the packages' own code may have opened.
 */
import { join } from "node:path";
import { SHARED_MODE_BITS } from "../rpc/sandbox_protocol.ts";

/** Group and other bits: the folder's root keeps none. */
const ROOT_CLOSED = 0o077;

/**
 * Closes `root` and everything under it to others (see above): removes symlinks, never following
 * them, clears the shared bits, and the root's group and other bits. Throws when an entry is
 * owned by another user than the root's (someone else reached the folder).
 */
export async function closeToOthers(root: string): Promise<void> {
  const owner = (await Deno.lstat(root)).uid;
  await walk(root, async (path, info) => {
    if (info.uid !== owner) {
      throw new Error(`Cannot close ${root} to others: ${path} belongs to another user`);
    }
    if (info.isSymlink) return await Deno.remove(path);
    const shut = (path === root ? ROOT_CLOSED : 0) | SHARED_MODE_BITS;
    if (info.mode !== null && (info.mode & shut) !== 0) {
      await Deno.chmod(path, info.mode & 0o7777 & ~shut);
    }
  });
}

/**
 * Whether `root` is as `closeToOthers` leaves a folder, everything in it owned by `owner` (the
 * server's user; the root's own when unknown); false when it cannot be walked.
 */
export async function isClosedToOthers(root: string, owner?: number): Promise<boolean> {
  try {
    owner ??= (await Deno.lstat(root)).uid ?? undefined;
    let closed = true;
    await walk(root, (path, info) => {
      const shut = (path === root ? ROOT_CLOSED : 0) | SHARED_MODE_BITS;
      if (info.uid !== owner || info.isSymlink || (info.mode ?? 0) & shut) closed = false;
      return Promise.resolve();
    });
    return closed;
  } catch {
    return false;
  }
}

async function walk(
  root: string,
  visit: (path: string, info: Deno.FileInfo) => Promise<void>,
): Promise<void> {
  const pending = [root];
  while (pending.length > 0) {
    const path = pending.pop()!;
    const info = await Deno.lstat(path);
    await visit(path, info);
    if (!info.isDirectory || info.isSymlink) continue;
    for await (const entry of Deno.readDir(path)) pending.push(join(path, entry.name));
  }
}
