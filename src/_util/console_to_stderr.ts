/**
 * What libraries print with `console` goes to stderr. Deno writes `console.log`, `debug` and
 * `info` to stdout, which in stdio mode belongs to the protocol: the MCP SDK's client prints a
 * `console.debug` line when it lists the tools of a server that declares none, and a strict MCP
 * client takes a line that is not JSON-RPC as a broken connection. This project's own code does
 * not use `console` (the linter says so); it logs through log.ts.
 */
import { Console } from "node:console";
import process from "node:process";

export function consoleToStderr(): void {
  const into = new Console({ stdout: process.stderr, stderr: process.stderr }) as unknown as Record<
    string,
    unknown
  >;
  const ours = globalThis.console as unknown as Record<string, unknown>;
  for (const name of Object.keys(ours)) {
    const method = into[name];
    if (typeof method === "function") ours[name] = method.bind(into);
  }
}
