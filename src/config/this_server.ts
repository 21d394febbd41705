/**
 * Recognising this server in a list of servers (pure). A client's config names code mode itself
 * beside the servers it should wrap; copied into `mcp_servers.json` as it is, that entry would
 * make every start of this server start another one, without end. `loadConfig` leaves such an
 * entry out, and `import` does not copy it.
 *
 * Recognition by the entry's text can be fooled (a copy of the checkout elsewhere, a wrapper
 * script), so `nestingRefusal` also stops a chain at depth: every stdio server this server
 * starts is told how deep it is (`CODEMODE_NESTING`).
 */
import { isAbsolute, join, normalize, resolve } from "node:path";

/** The variable a stdio upstream server is started with: how many code mode servers are above. */
export const NESTING_VARIABLE = "CODEMODE_NESTING";

/** Code mode servers above this one beyond which `serve` refuses to start. */
export const MAX_NESTING = 1;

/**
 * Whether a server entry starts this server: the `mcp-code-mode` command (or the single binary),
 * this project's main.ts, or `deno task --cwd <this project> serve`.
 */
export function isThisServer(entry: Record<string, unknown>, projectRoot: string): boolean {
  const command = typeof entry.command === "string" ? entry.command : "";
  const base = command.split(/[\\/]/).pop()!.replace(/\.(exe|cmd)$/i, "");
  if (base === "mcp-code-mode") return true;
  const args = Array.isArray(entry.args)
    ? entry.args.filter((a): a is string => typeof a === "string")
    : [];
  const cwd = typeof entry.cwd === "string" ? entry.cwd : undefined;
  const root = samePath(projectRoot);
  const isRoot = (path: string) => samePath(path, cwd) === root;
  if (args.some((a) => a.endsWith("main.ts") && isRoot(join(a, "..")))) return true;
  if (!args.includes("task") || !args.includes("serve")) return false;
  const at = args.indexOf("--cwd");
  const taskCwd = at >= 0
    ? args[at + 1]
    : args.find((a) => a.startsWith("--cwd="))?.slice("--cwd=".length) ?? cwd;
  return taskCwd !== undefined && isRoot(taskCwd);
}

function samePath(path: string, base?: string): string {
  const absolute = isAbsolute(path) || base === undefined ? path : resolve(base, path);
  return normalize(absolute).replace(/[\\/]+$/, "");
}

/** The nesting a stdio server of this one is started with. */
export function childNesting(own: string | undefined): string {
  return String(nestingOf(own) + 1);
}

/** Why `serve` must not start at this nesting, or null. */
export function nestingRefusal(own: string | undefined): string | null {
  const depth = nestingOf(own);
  if (depth <= MAX_NESTING) return null;
  return `refusing to start: this server was started as an upstream server of ${depth} code ` +
    "mode servers in a chain (a config that lists code mode itself?); remove that entry";
}

function nestingOf(value: string | undefined): number {
  const n = Number(value ?? "0");
  return Number.isInteger(n) && n > 0 ? n : 0;
}
