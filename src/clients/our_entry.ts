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
  /** Environment the client sets for the server (the cache folders, when not the defaults). */
  env?: Record<string, string>;
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
  /** The cache folder (CODEMODE_CACHE_DIR, absolute) the client's server should use, if set. */
  cacheDir?: string;
  /**
   * Deno's cache folder (DENO_DIR, absolute), if set: a client starts servers with a minimal
   * environment, and without it Deno would fetch every package again (offline: fail to start).
   */
  denoDir?: string;
}): Launch {
  let launch = chooseCommand(facts);
  if (facts.configPath !== undefined) {
    launch = {
      ...launch,
      args: [...launch.args, "--config", facts.configPath],
      why: `${launch.why}; with the config ${facts.configPath}`,
    };
  }
  if (facts.cacheDir !== undefined) {
    launch = {
      ...launch,
      env: { ...launch.env, CODEMODE_CACHE_DIR: facts.cacheDir },
      why: `${launch.why}; with the cache folder ${facts.cacheDir} (CODEMODE_CACHE_DIR)`,
    };
  }
  // The single binary carries its packages: Deno's cache is not read.
  if (facts.denoDir !== undefined && !facts.standalone) {
    launch = {
      ...launch,
      env: { ...launch.env, DENO_DIR: facts.denoDir },
      why: `${launch.why}; with Deno's cache ${facts.denoDir} (DENO_DIR)`,
    };
  }
  return launch;
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
  const entry = {
    command: launch.command,
    args: launch.args,
    ...(launch.env ? { env: launch.env } : {}),
  };
  return client === "claude-code" || client === "vscode" ? { type: "stdio", ...entry } : entry;
}
