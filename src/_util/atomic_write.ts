/**
 * Writes a file so that readers (and other processes writing the same path) only ever see a
 * complete file: write a uniquely named temporary file beside it, then rename it into place.
 * `mode` sets the new file's permission bits (a private file stays private once replaced).
 */
export async function writeFileAtomically(
  path: string,
  data: Uint8Array | string,
  options: { mode?: number } = {},
): Promise<void> {
  const tmp = `${path}.${crypto.randomUUID()}.tmp`;
  try {
    if (typeof data === "string") await Deno.writeTextFile(tmp, data);
    else await Deno.writeFile(tmp, data);
    if (options.mode !== undefined && Deno.build.os !== "windows") {
      await Deno.chmod(tmp, options.mode);
    }
    await Deno.rename(tmp, path);
  } finally {
    await Deno.remove(tmp).catch(() => {});
  }
}
