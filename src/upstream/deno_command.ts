/** What "deno" means as an upstream server's command. */

/**
 * "deno" in a server entry means the Deno running this server; inside the single binary,
 * whose executable is not Deno, it means the `deno` on PATH.
 */
export function denoCommand(command: string): string {
  if (command !== "deno") return command;
  return Deno.build.standalone ? "deno" : Deno.execPath();
}
