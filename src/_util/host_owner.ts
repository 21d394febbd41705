/** Who the server's own files belong to, told without a system permission. */

export interface Owner {
  uid: number;
  gid: number;
}

/**
 * The user and group the server's files get, read from a file it makes in `writableDir` (Deno
 * tells its own ids only with a system permission the host does not have); undefined when
 * unknown.
 */
export function hostOwner(writableDir: string): Owner | undefined {
  try {
    Deno.mkdirSync(writableDir, { recursive: true }); // a first start has none yet
    const probe = Deno.makeTempFileSync({ dir: writableDir, prefix: ".owner-" });
    try {
      const { uid, gid } = Deno.lstatSync(probe);
      return uid === null || gid === null ? undefined : { uid, gid };
    } finally {
      Deno.removeSync(probe);
    }
  } catch {
    return undefined;
  }
}

/**
 * This process's user, told without a system permission (which the launcher has not; Deno
 * guards `/proc/self` behind every permission): what `id -u` says; undefined when it cannot say.
 */
export function processUid(): number | undefined {
  try {
    const out = new Deno.Command("id", { args: ["-u"], stdout: "piped", stderr: "null" })
      .outputSync();
    const uid = Number(new TextDecoder().decode(out.stdout).trim());
    return out.success && Number.isInteger(uid) ? uid : undefined;
  } catch {
    return undefined;
  }
}
