/**
 * What the user told Claude Code about the servers of one folder (pure). Claude Code asks before
 * it starts a `.mcp.json` server and records the answer; import follows it, so a server the user
 * turned down, or was never asked about, is not brought over. The answers live in
 * ~/.claude.json under "projects"[<folder>] and in the project's `.claude/settings.local.json`
 * and `.claude/settings.json`:
 *
 * | key                          | meaning                                                     |
 * |------------------------------|-------------------------------------------------------------|
 * | disabledMcpServers           | servers (any scope) the user disabled in this folder        |
 * | disabledMcpjsonServers       | `.mcp.json` servers the user rejected                       |
 * | enabledMcpjsonServers        | `.mcp.json` servers the user approved (others are not)      |
 * | enableAllProjectMcpServers   | true: every `.mcp.json` server is approved                  |
 *
 * Fails closed: a `.mcp.json` server is approved only by one of these answers. The project's
 * own settings files count as approvals only once ~/.claude.json knows the folder (the user
 * opened it in Claude Code): a cloned repository cannot approve its own servers.
 */
import { isAbsolute, normalize, resolve } from "node:path";
import { isRecord, type Platform, type Scope } from "./client_configs.ts";

/** Claude Code's records for the current folder, as read by the caller. */
export interface ClaudeCodeApprovals {
  /** A file of approvals that exists but cannot be parsed (nothing is known approved), or null. */
  unreadable: string | null;
  /** Every "projects" entry of ~/.claude.json that names the current folder. */
  folders: Record<string, unknown>[];
  /** The project's settings files that exist and parse, with their paths for reasons. */
  settings: { path: string; value: Record<string, unknown> }[];
}

/** Why Claude Code would not start `name` (its name in the client's file) here, or null. */
export function claudeCodeRefusal(
  approvals: ClaudeCodeApprovals,
  scope: Scope,
  name: string,
): string | null {
  const listed = (record: Record<string, unknown>, key: string) =>
    Array.isArray(record[key]) && (record[key] as unknown[]).includes(name);
  const here = "in Claude Code for this folder";
  if (approvals.folders.some((f) => listed(f, "disabledMcpServers"))) {
    return `disabled ${here} (disabledMcpServers in ~/.claude.json)`;
  }
  if (scope !== "project") return null;
  if (approvals.unreadable !== null) {
    return `not approved ${here} (${approvals.unreadable}, where Claude Code keeps approvals, ` +
      "cannot be read)";
  }
  const sources: [string, Record<string, unknown>][] = [
    ...approvals.folders.map((f): [string, Record<string, unknown>] => ["~/.claude.json", f]),
    ...approvals.settings.map((s): [string, Record<string, unknown>] => [s.path, s.value]),
  ];
  const rejectedIn = sources.find(([, r]) => listed(r, "disabledMcpjsonServers"));
  if (rejectedIn) return `rejected ${here} (disabledMcpjsonServers in ${rejectedIn[0]})`;
  const approving = approvals.folders.length > 0 ? sources : [];
  const approved = approving.some(([, r]) =>
    r.enableAllProjectMcpServers === true || listed(r, "enabledMcpjsonServers")
  );
  if (approved) return null;
  return `not approved ${here} (not in enabledMcpjsonServers, and no ` +
    "enableAllProjectMcpServers, in ~/.claude.json or the project's .claude/settings*.json)";
}

/**
 * `path` in one spelling: absolute, `.` and `..` resolved, separators collapsed, no trailing
 * separator; case-folded where the file system usually ignores case (Windows, macOS).
 */
export function folderKey(path: string, os: Platform["os"]): string {
  const windows = os === "windows";
  let key = windows ? path.replaceAll("\\", "/") : path;
  key = isAbsolute(key) || windows ? normalize(key) : resolve(key);
  key = key.replace(/\/{2,}/g, "/");
  if (key.length > 1) key = key.replace(/\/+$/, "");
  return os === "linux" ? key : key.toLowerCase();
}

/** The "projects" keys of ~/.claude.json (in any spelling) that name `folder`. */
export function matchingProjectKeys(
  claudeJson: unknown,
  folder: { path: string; realPath?: string },
  os: Platform["os"],
  realPaths: Map<string, string>,
): string[] {
  const projects = isRecord(claudeJson) && isRecord(claudeJson.projects) ? claudeJson.projects : {};
  const want = folderKey(folder.path, os);
  const wantReal = folder.realPath === undefined ? undefined : folderKey(folder.realPath, os);
  return Object.keys(projects).filter((key) => {
    if (folderKey(key, os) === want) return true;
    const real = realPaths.get(key);
    return wantReal !== undefined && real !== undefined && folderKey(real, os) === wantReal;
  });
}
