/**
 * Where each MCP client keeps its list of servers, and under which key (pure: the caller passes
 * the home folder, the environment's config folders, the OS and the current folder).
 *
 * | client         | user file                                              | project file          |
 * |----------------|--------------------------------------------------------|-----------------------|
 * | claude-desktop | Claude/claude_desktop_config.json in the app config dir | (none)                |
 * | claude-code    | ~/.claude.json: "mcpServers", and the current folder's | .mcp.json             |
 * |                | "projects"[<abs path>]."mcpServers" (its "local" scope) |                       |
 * | cursor         | ~/.cursor/mcp.json                                     | .cursor/mcp.json      |
 * | vscode         | Code/User/mcp.json in the app config dir, "servers"   | .vscode/mcp.json      |
 *
 * Trust: a project file is whatever the current folder holds, often a cloned repository, so its
 * servers are someone else's choice; `import` shows them but takes them only with --project,
 * after the user's own. Claude Code's "local" list lives in the user's ~/.claude.json, written
 * only by the user's own `claude mcp add`, so it counts as the user's, as the user list does.
 *
 * The app config dir is `$XDG_CONFIG_HOME` (else ~/.config) on Linux, ~/Library/Application
 * Support on macOS, `%APPDATA%` on Windows. Every file but VS Code's keeps servers under
 * "mcpServers"; VS Code's under "servers".
 */
import { posix, win32 } from "node:path";

export const CLIENTS = ["claude-desktop", "claude-code", "cursor", "vscode"] as const;
export type ClientName = typeof CLIENTS[number];

/**
 * "local" is Claude Code's per-project entry in ~/.claude.json (its default scope); "project" is
 * a file in the current folder.
 */
export type Scope = "user" | "project" | "local";

export interface Platform {
  os: "linux" | "darwin" | "windows";
  home: string;
  /** `$XDG_CONFIG_HOME` (Linux). */
  xdgConfigHome?: string;
  /** `%APPDATA%` (Windows). */
  appData?: string;
  /** The folder whose project files are read and written (absolute). */
  cwd: string;
}

/** One list of servers in one client's file. */
export interface ConfigSource {
  client: ClientName;
  scope: Scope;
  path: string;
  /** Where the server map sits in the file's JSON, e.g. ["mcpServers"]. */
  keyPath: string[];
  /** The project folder a project or local entry belongs to. */
  projectDir?: string;
}

export function isClientName(name: string): name is ClientName {
  return (CLIENTS as readonly string[]).includes(name);
}

/** The folder desktop apps keep their settings in (Claude, Code). */
function appConfigDir(p: Platform): string {
  const path = p.os === "windows" ? win32 : posix;
  switch (p.os) {
    case "linux":
      return p.xdgConfigHome && posix.isAbsolute(p.xdgConfigHome)
        ? p.xdgConfigHome
        : posix.join(p.home, ".config");
    case "darwin":
      return posix.join(p.home, "Library", "Application Support");
    case "windows":
      return p.appData ?? path.join(p.home, "AppData", "Roaming");
  }
}

/**
 * Every list of servers a client may hold for this user and folder: the user's own first (in
 * the client's precedence: Claude Code's local list before its user list), the project file last.
 */
export function configSources(client: ClientName, p: Platform): ConfigSource[] {
  const path = p.os === "windows" ? win32 : posix;
  const at = (scope: Scope, file: string, keyPath: string[], project = false): ConfigSource => ({
    client,
    scope,
    path: file,
    keyPath,
    ...(project ? { projectDir: p.cwd } : {}),
  });
  switch (client) {
    case "claude-desktop":
      return [
        at(
          "user",
          path.join(appConfigDir(p), "Claude", "claude_desktop_config.json"),
          ["mcpServers"],
        ),
      ];
    case "claude-code": {
      const userFile = path.join(p.home, ".claude.json");
      return [
        at("local", userFile, ["projects", p.cwd, "mcpServers"], true),
        at("user", userFile, ["mcpServers"]),
        at("project", path.join(p.cwd, ".mcp.json"), ["mcpServers"], true),
      ];
    }
    case "cursor":
      return [
        at("user", path.join(p.home, ".cursor", "mcp.json"), ["mcpServers"]),
        at("project", path.join(p.cwd, ".cursor", "mcp.json"), ["mcpServers"], true),
      ];
    case "vscode":
      return [
        at("user", path.join(appConfigDir(p), "Code", "User", "mcp.json"), ["servers"]),
        at("project", path.join(p.cwd, ".vscode", "mcp.json"), ["servers"], true),
      ];
  }
}

/** Whether a list is a file of the current folder (someone else's choice: see above). */
export function isProjectFile(source: ConfigSource): boolean {
  return source.scope === "project";
}

/** The list `install --client` writes to; null when the client has no such scope. */
export function installTarget(
  client: ClientName,
  scope: Scope,
  p: Platform,
): ConfigSource | null {
  return configSources(client, p).find((s) => s.scope === scope) ?? null;
}

/** The scopes `install` can write for a client. */
export function installScopes(client: ClientName): Scope[] {
  return client === "claude-desktop" ? ["user"] : ["user", "project"];
}

/** The value at `keyPath` in a parsed file (undefined when any step is missing). */
export function valueAt(file: unknown, keyPath: string[]): unknown {
  let value = file;
  for (const key of keyPath) {
    if (!isRecord(value)) return undefined;
    value = value[key];
  }
  return value;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
