/**
 * `deno task install`: puts an `mcp-code-mode` command on PATH, so client configs can say
 * `"command": "mcp-code-mode", "args": ["serve"]` from any folder.
 *
 * The command is a small script that runs exactly what `deno task serve` runs: this Deno (by its
 * absolute path: MCP clients often start servers without the user's PATH), this checkout's
 * deno.json and lock file, and the launcher's three permissions (read, env, run; never `-A`);
 * `import`, `install` and `doctor`, which write config files or the cache, add write access.
 * `deno install --global` is not used: it copies the config and a 100 MB node_modules next to
 * the command, so the launcher and the server it re-starts would resolve Pyodide from two places.
 *
 * Where: `--bin DIR`, else `$DENO_INSTALL_ROOT/bin`, else `~/.local/bin` (on PATH by default on
 * most Linux systems); the output says how to add it to PATH when it is not there.
 */
import { parseArgs } from "node:util";
import { delimiter, join } from "node:path";
import { PROJECT_ROOT } from "../config/config.ts";
import { type Env, readEnv } from "../config/environment.ts";
import { writeAllSync } from "../_util/write_all.ts";

/** The flags `deno task serve` gives the launcher (the server then re-starts with its own). */
export const LAUNCHER_FLAGS = ["--no-prompt", "--allow-read", "--allow-env", "--allow-run"];

/**
 * The subcommands that write in the launcher process itself (client configs and
 * `mcp_servers.json`; doctor, the snapshot and its marks in the cache, as `deno run -A main.ts
 * doctor` does): only these get `--allow-write`, so `serve`, `run` and the rest start as `deno
 * task serve` does.
 */
export const WRITING_COMMANDS = ["import", "install", "doctor"];

export const COMMAND_NAME = "mcp-code-mode";

/** The command's file name and text for `os`. */
export function launcherScript(
  options: { deno: string; root: string; os: typeof Deno.build.os },
): { file: string; text: string } {
  const { deno, root, os } = options;
  // The folder is named in a comment line: as JSON, so a newline in it cannot end the comment.
  const where = JSON.stringify(root);
  const args = [...LAUNCHER_FLAGS, `--config=${join(root, "deno.json")}`, join(root, "main.ts")];
  const line = (write: boolean) => [deno, "run", ...(write ? ["--allow-write"] : []), ...args];
  if (os === "windows") {
    // cmd.exe expands %NAME% even inside quotes; %% is a literal %.
    const quoted = (write: boolean) =>
      line(write).map((a) => `"${a.replaceAll("%", "%%")}"`).join(" ");
    const checks = WRITING_COMMANDS.map((c) => `if /i "%~1"=="${c}" goto write\r\n`).join("");
    return {
      file: `${COMMAND_NAME}.cmd`,
      text: `@echo off\r\nrem written by deno task install in ${where}\r\n${checks}` +
        `${quoted(false)} %*\r\nexit /b %errorlevel%\r\n:write\r\n${quoted(true)} %*\r\n`,
    };
  }
  const quoted = (write: boolean) =>
    line(write).map((a) => `'${a.replaceAll("'", `'"'"'`)}'`).join(" ");
  return {
    file: COMMAND_NAME,
    text:
      `#!/bin/sh\n# written by \`deno task install\` in ${where}; delete this file to uninstall\n` +
      `case "$1" in ${WRITING_COMMANDS.join("|")}) exec ${quoted(true)} "$@" ;; esac\n` +
      `exec ${quoted(false)} "$@"\n`,
  };
}

/** The folder the command goes into. */
export function launcherFolder(options: { bin?: string; env: Env }): string {
  if (options.bin) return options.bin;
  const root = options.env("DENO_INSTALL_ROOT");
  if (root) return join(root, "bin");
  const home = options.env("HOME") ?? options.env("USERPROFILE");
  if (!home) throw new TypeError("Cannot choose where to install: HOME is not set (give --bin)");
  return join(home, ".local", "bin");
}

/** Whether `folder` is one of PATH's entries. */
export function onPath(folder: string, path: string): boolean {
  return path.split(delimiter).some((entry) => entry.replace(/[\\/]+$/, "") === folder);
}

async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { bin: { type: "string" } } });
  const folder = launcherFolder({ bin: values.bin, env: readEnv });
  const { file, text } = launcherScript({
    deno: Deno.execPath(),
    root: PROJECT_ROOT,
    os: Deno.build.os,
  });
  await Deno.mkdir(folder, { recursive: true });
  const path = join(folder, file);
  await Deno.writeTextFile(path, text, { mode: 0o755 });
  const hint = onPath(folder, readEnv("PATH") ?? "")
    ? ""
    : `\n${folder} is not on PATH; add it, e.g. in ~/.profile:\n  export PATH="${folder}:$PATH"\n`;
  writeAllSync(
    Deno.stdout,
    `installed ${path}\nclient configs can now say: "command": "${COMMAND_NAME}", "args": ["serve"]\n${hint}`,
  );
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
