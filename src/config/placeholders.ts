/**
 * `${...}` placeholders in server entries, in the forms the common MCP clients write them, so a
 * client's config pasted as mcp_servers.json means what it meant there:
 *
 * | form                 | from                        | value                                  |
 * |----------------------|-----------------------------|----------------------------------------|
 * | `${NAME}`            | ours, Claude Code, Cursor   | the environment's NAME (must be set)   |
 * | `${NAME:-default}`   | Claude Code                 | NAME, or `default` when unset or empty |
 * | `${env:NAME}`        | VS Code, Cursor             | the environment's NAME (must be set)   |
 * | `${CONFIG_DIR}`      | ours                        | the config file's folder               |
 * | `${workspaceFolder}` | VS Code, Cursor             | the config file's folder               |
 * | `${input:ID}`        | VS Code (asks the user)     | cannot be answered here: an error      |
 *
 * Anything else in `${...}` is left as written.
 */
import { replaceUpToLast } from "../_util/replace_up_to_last.ts";

const PLACEHOLDER =
  /\$\{(?:(input:[^}]*|workspaceFolder)|(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?)\}/g;

/** Where a placeholder's value comes from: the config's folder, or the environment. */
export interface PlaceholderSources {
  configDir: string;
  env: (name: string) => string | undefined;
}

/** Replaces every placeholder in `value`; `where` prefixes errors ("Cannot load config …"). */
export function expandPlaceholders(
  value: string,
  sources: PlaceholderSources,
  where: string,
): string {
  return replaceUpToLast(
    value,
    "}",
    PLACEHOLDER,
    (whole, special: string | undefined, name: string | undefined, fallback?: string) => {
      if (special === "workspaceFolder") return sources.configDir;
      if (special !== undefined) {
        throw new TypeError(
          `${where}: ${whole} asks the user for a value, which only VS Code can do; ` +
            "put the value in an environment variable and write ${NAME} instead",
        );
      }
      if (name === "CONFIG_DIR") return sources.configDir;
      const found = sources.env(name!);
      if (fallback !== undefined) return found === undefined || found === "" ? fallback : found;
      if (found === undefined) {
        throw new TypeError(
          `${where}: environment variable ${name} is not set (where code mode starts: for a ` +
            `server an MCP client starts, in the "env" of its entry)`,
        );
      }
      return found;
    },
  );
}

/**
 * The environment variables a config's text reads through placeholders (not CONFIG_DIR); with
 * `required`, only those without a default (`${NAME}`, not `${NAME:-default}`).
 */
export function placeholderNames(text: string, options: { required?: boolean } = {}): string[] {
  // No placeholder ends past the last "}" (see replaceUpToLast).
  const closed = text.slice(0, text.lastIndexOf("}") + 1);
  const names = [...closed.matchAll(PLACEHOLDER)].flatMap((m) =>
    m[2] && !(options.required && m[3] !== undefined) ? [m[2]] : []
  );
  return [...new Set(names.filter((name) => name !== "CONFIG_DIR"))];
}
