/**
 * Writes a file so that readers (and other processes writing the same path) only ever see a
 * complete file: write a uniquely named temporary file beside it, then rename it into place.
 *
 * - `mode` sets the new file's permission bits. The temporary file is created with them (never
 *   looser: the umask can only take bits away, and they are set exactly before the rename), so
 *   a private file's content is never readable by others, not even for a moment.
 * - A file its owner made read-only (no owner write bit) is refused, not replaced: a rename
 *   would ignore the mode that says "do not change this".
 * - A file with more than one hard link is refused: a rename would leave the other names on the
 *   old content, silently splitting what the user keeps as one file. (Writing in place would
 *   keep the links but lose atomicity; refusing with the reason lets the user choose.)
 */
export async function writeFileAtomically(
  path: string,
  data: Uint8Array | string,
  options: { mode?: number; userFile?: boolean } = {},
): Promise<void> {
  if (options.userFile) await assertReplaceable(path);
  const tmp = `${path}.${crypto.randomUUID()}.tmp`;
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  try {
    // Without a mode the umask decides, as for any new file (Deno applies a given mode exactly,
    // so passing 0o666 would make the file writable by everyone).
    await Deno.writeFile(
      tmp,
      bytes,
      options.mode === undefined ? { createNew: true } : { createNew: true, mode: options.mode },
    );
    if (options.mode !== undefined && Deno.build.os !== "windows") {
      await Deno.chmod(tmp, options.mode); // exactly: the umask may have taken bits away
    }
    await Deno.rename(tmp, path);
  } finally {
    await Deno.remove(tmp).catch(() => {});
  }
}

/**
 * Throws when `path` is a user's file that must not be replaced by a rename (read-only, or hard
 * linked: see above); a missing file is fine. Callers that back a file up first check here first.
 */
export async function assertReplaceable(path: string): Promise<void> {
  if (Deno.build.os === "windows") return;
  const current = await Deno.stat(path).catch((error) => {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  });
  if (current === null) return;
  const mode = (current.mode ?? 0o600) & 0o777;
  if ((mode & 0o200) === 0) {
    throw new Deno.errors.PermissionDenied(
      `Cannot replace ${path}: it is read-only (mode 0${mode.toString(8)}); make it ` +
        "writable (chmod u+w) if it should change",
    );
  }
  if ((current.nlink ?? 1) > 1) {
    throw new Error(
      `Cannot replace ${path}: it has ${current.nlink} hard links, which replacing it would ` +
        "break (the other names would keep the old content); edit it by hand or remove the " +
        "other links",
    );
  }
}
