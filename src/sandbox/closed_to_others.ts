/**
 * A folder the host built with code it does not trust (a profile's preloaded packages, unpacked
 * and imported by the snapshot builder) made safe to mount into sandboxes: nothing in it is
 * group- or world-writable, setuid, setgid or sticky (`SHARED_MODE_BITS`), and it holds no
 * symlink. Emscripten creates files with mode 0666 and Deno applies no umask to an explicit
 * mode, so without this every unpacked file would be writable by every local user, who could then
 * put code into every sandbox of the profile.
 */
import { join } from "node:path";
import { SHARED_MODE_BITS } from "../rpc/sandbox_protocol.ts";

/**
 * Closes `root` and everything under it to others (see above); returns how many entries it had
 * to change. Symlinks are removed, never followed.
 */
export async function closeToOthers(root: string): Promise<number> {
  let changed = 0;
  const pending = [root];
  while (pending.length > 0) {
    const path = pending.pop()!;
    const info = await Deno.lstat(path);
    if (info.isSymlink) {
      await Deno.remove(path);
      changed++;
      continue;
    }
    if (info.mode !== null && (info.mode & SHARED_MODE_BITS) !== 0) {
      await Deno.chmod(path, info.mode & 0o7777 & ~SHARED_MODE_BITS);
      changed++;
    }
    if (!info.isDirectory) continue;
    for await (const entry of Deno.readDir(path)) pending.push(join(path, entry.name));
  }
  return changed;
}
