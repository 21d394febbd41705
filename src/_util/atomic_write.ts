/**
 * Writes a file so that readers (and other processes writing the same path) only ever see a
 * complete file: write a uniquely named temporary file beside it, then rename it into place.
 */
export async function writeFileAtomically(path: string, data: Uint8Array | string): Promise<void> {
  const tmp = `${path}.${crypto.randomUUID()}.tmp`;
  try {
    if (typeof data === "string") await Deno.writeTextFile(tmp, data);
    else await Deno.writeFile(tmp, data);
    await Deno.rename(tmp, path);
  } finally {
    await Deno.remove(tmp).catch(() => {});
  }
}
