/**
 * The entry `install` writes into a client's list: how that client should start this server
 * (pure; the caller says what is on PATH).
 */
import type { ClientName } from "./client_configs.ts";

/** The name of our entry in a client's list (the one the README's snippets use). */
export const OUR_SERVER_NAME = "code-mode";

export interface Launch {
  command: string;
  args: string[];
  /** Why this command, for the user. */
  why: string;
}

export function chooseLaunch(facts: {
  /** Where `mcp-code-mode` is on PATH, if it is. */
  installedCommand?: string;
  /** The running executable (deno, or the single binary). */
  execPath: string;
  /** Whether this is the single binary (`deno compile`). */
  standalone: boolean;
  projectRoot: string;
  /** The config the client's server should use (absolute), when not the default. */
  configPath?: string;
}): Launch {
  const launch = chooseCommand(facts);
  if (facts.configPath === undefined) return launch;
  return {
    ...launch,
    args: [...launch.args, "--config", facts.configPath],
    why: `${launch.why}; with the config ${facts.configPath}`,
  };
}

function chooseCommand(facts: Parameters<typeof chooseLaunch>[0]): Launch {
  // Commands by their full path: desktop apps often start servers without the user's PATH.
  if (facts.installedCommand) {
    return {
      command: facts.installedCommand,
      args: ["serve"],
      why: `the mcp-code-mode command on PATH, by its full path (${facts.installedCommand})`,
    };
  }
  if (facts.standalone) {
    return {
      command: facts.execPath,
      args: ["serve"],
      why: "no mcp-code-mode command on PATH: this single binary, by its full path",
    };
  }
  return {
    command: facts.execPath,
    args: ["task", "--cwd", facts.projectRoot, "serve"],
    why: "no mcp-code-mode command on PATH (`deno task install` puts one there): " +
      `deno task --cwd ${facts.projectRoot} serve, with this Deno by its full path`,
  };
}

/** Our entry in `client`'s shape (Claude Code and VS Code write the transport type). */
export function clientEntry(client: ClientName, launch: Launch): Record<string, unknown> {
  const entry = { command: launch.command, args: launch.args };
  return client === "claude-code" || client === "vscode" ? { type: "stdio", ...entry } : entry;
}
