/**
 * Where `console` writes. Deno writes `console.log`, `debug` and `info` to stdout, which in a
 * stdio server and in a sandbox process belongs to the protocol.
 */
import { Console } from "node:console";
import process from "node:process";

/** Every method of the global console becomes `into`'s (formats, counters, timers, groups). */
export function redirectConsole(into: Console): void {
  const target = into as unknown as Record<string, unknown>;
  const ours = globalThis.console as unknown as Record<string, unknown>;
  for (const name of Object.keys(ours)) {
    const method = target[name];
    ours[name] = typeof method === "function" ? method.bind(into) : () => {};
  }
}

/**
 * What libraries print with `console` goes to stderr: the MCP SDK's client prints a
 * `console.debug` line when it lists the tools of a server that declares none, and a strict MCP
 * client takes a line that is not JSON-RPC as a broken connection. This project's own code does
 * not use `console` (the linter says so); it logs through log.ts.
 */
export function consoleToStderr(): void {
  redirectConsole(new Console({ stdout: process.stderr, stderr: process.stderr }));
}
