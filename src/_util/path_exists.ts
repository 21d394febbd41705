/** Whether anything is at `path` (a file, a folder, a link's target); false when it cannot be seen. */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}
