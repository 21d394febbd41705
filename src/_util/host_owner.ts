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
 * guards `/proc/self` behind every permission): what `id -u` says, by its usual full paths
 * first (a client may start the server without PATH), else what this Deno says when asked in a
 * process of its own; undefined when neither can say (Windows has no such ids).
 */
export function processUid(): number | undefined {
  const asked: [string, string[]][] = [
    ["/usr/bin/id", ["-u"]],
    ["/bin/id", ["-u"]],
    [Deno.execPath(), ["eval", "--no-config", "console.log(Deno.uid())"]],
  ];
  for (const [command, args] of asked) {
    try {
      const out = new Deno.Command(command, { args, stdout: "piped", stderr: "null" })
        .outputSync();
      const said = new TextDecoder().decode(out.stdout).trim();
      if (out.success && /^\d+$/.test(said)) return Number(said);
    } catch {
      // not there: the next
    }
  }
  return undefined;
}
