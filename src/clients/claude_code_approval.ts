/**
 * What the user told Claude Code about the servers of one folder, kept in ~/.claude.json under
 * "projects"[<folder>] (pure). Claude Code asks before it starts a `.mcp.json` server and
 * records the answer; import follows it, so a server the user turned down is not brought over.
 *
 * | key                          | meaning                                                     |
 * |------------------------------|-------------------------------------------------------------|
 * | disabledMcpServers           | servers (any scope) the user disabled in this folder        |
 * | disabledMcpjsonServers       | `.mcp.json` servers the user rejected                       |
 * | enabledMcpjsonServers        | `.mcp.json` servers the user approved (others are not)      |
 * | enableAllProjectMcpServers   | true: every `.mcp.json` server is approved                  |
 */
import { isRecord, type Scope, valueAt } from "./client_configs.ts";

/** Why Claude Code would not start `name` (its name in the client's file) here, or null. */
export function claudeCodeRefusal(
  claudeJson: unknown,
  projectDir: string,
  scope: Scope,
  name: string,
): string | null {
  const folder = valueAt(claudeJson, ["projects", projectDir]);
  if (!isRecord(folder)) return null;
  const list = (key: string): string[] | null =>
    Array.isArray(folder[key]) ? (folder[key] as unknown[]).filter(isString) : null;
  if (list("disabledMcpServers")?.includes(name)) {
    return "disabled in Claude Code for this folder (disabledMcpServers in ~/.claude.json)";
  }
  if (scope !== "project") return null;
  if (list("disabledMcpjsonServers")?.includes(name)) {
    return "rejected in Claude Code for this folder (disabledMcpjsonServers in ~/.claude.json)";
  }
  if (folder.enableAllProjectMcpServers === true) return null;
  const enabled = list("enabledMcpjsonServers");
  if (enabled !== null && !enabled.includes(name)) {
    return "not approved in Claude Code for this folder (not in enabledMcpjsonServers in " +
      "~/.claude.json)";
  }
  return null;
}

function isString(value: unknown): value is string {
  return typeof value === "string";
}
