/**
 * What the host runs or trusts, so that no profile may grant a sandbox write access over it: a
 * script that could rewrite the worker, the memory watcher, a profile or a skill would run its
 * own code at the next start, in the next execution, or with every permission.
 */
import type { Env } from "../config/environment.ts";
import { isHttpUrl } from "../packages/hosts.ts";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";

/** A path no sandbox may write, and what it is (for the refusal's message). */
export interface TrustedPath {
  path: string;
  what: string;
  /** Folders below `path` that a profile may still grant (the checkout's examples/). */
  except?: string[];
}

export interface TrustInputs {
  /** The checkout's root. */
  projectRoot: string;
  configPath: string;
  settings: {
    permissions_dir: string;
    skills_dir: string;
    wheels_dir: string;
    /** A Pyodide package folder, or a URL (which is no path). */
    pyodide_packages: string;
    audit_log: string;
  };
  /** The stdio servers the host starts: their commands, arguments, environment and folders. */
  servers: { command: string; args: string[]; env?: Record<string, string>; cwd: string }[];
  /** Where a bare command name is found (PATH); undefined when it is not found. */
  resolveCommand?: (name: string) => string | undefined;
  /** Whether a path names an existing file (not a folder). */
  isFile?: (path: string) => boolean;
  /** The home folder, where launchers keep the packages they fetch (npx, uvx, pip --user). */
  home?: string;
  /** The runtime's own files: Pyodide, the snapshot cache, the Deno binary, Deno's cache. */
  runtime: TrustedPath[];
}

/**
 * Every path the host runs or trusts. Pure: the caller resolves these to real paths. The
 * checkout counts whole (code, tests, .git, lock file) except `examples/`, which holds sample
 * data and the shipped workspace.
 */
export function trustedPaths(inputs: TrustInputs): TrustedPath[] {
  const paths: TrustedPath[] = [
    {
      path: inputs.projectRoot,
      what: "the server's own files",
      except: [join(inputs.projectRoot, "examples")],
    },
    { path: inputs.configPath, what: "the config file" },
    { path: inputs.settings.permissions_dir, what: "the permission profiles" },
    { path: inputs.settings.skills_dir, what: "the skills folder" },
    ...inputs.runtime,
  ];
  if (inputs.settings.wheels_dir) {
    paths.push({ path: inputs.settings.wheels_dir, what: "the wheel folder" });
  }
  if (inputs.settings.pyodide_packages && !isHttpUrl(inputs.settings.pyodide_packages)) {
    paths.push({ path: inputs.settings.pyodide_packages, what: "the Pyodide package folder" });
  }
  if (inputs.settings.audit_log) {
    paths.push({ path: inputs.settings.audit_log, what: "the audit log" });
  }
  const examples = join(inputs.projectRoot, "examples");
  for (const server of inputs.servers) {
    paths.push(
      ...serverPaths(
        server,
        examples,
        inputs.resolveCommand ?? (() => undefined),
        inputs.isFile ?? (() => false),
        inputs.home,
      ),
    );
  }
  return paths;
}

/**
 * What a stdio server runs, each whole: its working folder (config files found there, `deno
 * task`, `node .`, `python -m`/`-c` imports; only the checkout's `examples/` below it may still
 * be granted), the folder of its command (a bare name as found on PATH), and every path named on
 * its command line or in its environment: as a word, after `--flag=`, inside a quoted shell
 * command, in `NODE_OPTIONS` or `PYTHONPATH`. A file named there counts with its whole folder
 * (a script's modules lie beside it, whatever its language), and so does a script that does not
 * exist yet. A data folder named this way is protected too, which errs on the safe side. And the
 * `node_modules` folder of every folder above those.
 */
function serverPaths(
  server: { command: string; args: string[]; env?: Record<string, string>; cwd: string },
  examples: string,
  resolveCommand: (name: string) => string | undefined,
  isFile: (path: string) => boolean,
  home: string | undefined,
): TrustedPath[] {
  const at = (word: string) => isAbsolute(word) ? word : resolve(server.cwd, word);
  const paths: TrustedPath[] = [{
    path: server.cwd,
    what: "an upstream server's working folder",
    except: isInside(examples, server.cwd) ? [examples] : [],
  }];
  const command = server.command.includes("/")
    ? at(server.command)
    : resolveCommand(server.command);
  if (command) paths.push(installationOf(command, home));
  paths.push(...launcherFolders(server.command, home));
  const words = [...server.args, ...Object.values(server.env ?? {})];
  for (const token of words.flatMap((word) => pathTokens(word, home))) {
    const path = at(token);
    paths.push({
      path: SCRIPT.test(token) || isFile(path) ? dirname(path) : path,
      what: "files an upstream server runs",
    });
  }
  // Node (and Deno, Bun) look for a package in node_modules/ beside the importing file and in
  // every folder above it: a module planted there would run as the server.
  const folders = paths.filter((p) =>
    p.what !== "the packages an upstream server's launcher keeps"
  );
  for (const folder of new Set(folders.flatMap((p) => ancestors(p.path)))) {
    paths.push({
      path: join(folder, "node_modules"),
      what: "where an upstream server finds its packages",
    });
  }
  return paths;
}

/** The folders above `path`, nearest first, up to the root. */
function ancestors(path: string): string[] {
  const above: string[] = [];
  for (let folder = dirname(path);; folder = dirname(folder)) {
    above.push(folder);
    if (dirname(folder) === folder) return above;
  }
}

/**
 * Where a server's command finds the code it runs: its folder, or when that is a `bin/`, the
 * installation above it (a venv, a Python or Node install: their `lib/` holds the packages a
 * `.pth` file or a module there would run).
 */
function installationOf(command: string, home: string | undefined): TrustedPath {
  const folder = dirname(command);
  const above = dirname(folder);
  // A personal or system `bin/` (~/bin, /bin) is no installation: the folder itself, not all
  // of the home folder or the whole file system.
  const installed = /^(bin|Scripts)$/.test(basename(folder)) && above !== "/" && above !== home
    ? above
    : folder;
  return { path: installed, what: "the installation of an upstream server's command" };
}

/** For a well-known launcher, the folders under the home folder where it keeps what it runs. */
function launcherFolders(command: string, home: string | undefined): TrustedPath[] {
  const launcher = LAUNCHER_FOLDERS.find(([name]) => name.test(basename(command)));
  if (!launcher || !home) return [];
  return launcher[1].map((below) => ({
    path: join(home, below),
    what: "the packages an upstream server's launcher keeps",
  }));
}

/** Launchers and where, under the home folder, they find or fetch the code they run. */
const LAUNCHER_FOLDERS: [RegExp, string[]][] = [
  [/^python[0-9.]*$/, [".local/lib"]], // user site-packages
  // Node also loads modules from ~/.node_modules and ~/.node_libraries, always.
  [/^(npx|npm|node|pnpm|yarn)$/, [
    ".npm",
    ".node_modules",
    ".node_libraries",
    ".cache/pnpm",
    ".local/share/pnpm",
    ".yarn",
  ]],
  [/^(uvx|uv)$/, [".cache/uv", ".local/share/uv"]],
  [/^pipx$/, [".local/pipx", ".local/share/pipx"]],
  [/^(bunx|bun)$/, [".bun"]],
  [/^deno$/, [".cache/deno", ".deno"]],
];

/**
 * The paths a command-line word or environment value names: the word itself, and the pieces of a
 * `--flag=value`, a `NAME=value`, a shell command, code given inline (`python -c`, a quoted
 * string, a call's arguments) or a `:`-separated list; `~/` and `$HOME/` stand for `home`. Not
 * flags. Errs on the side of protecting too much: a piece that only looks like a path protects
 * a path that does not matter.
 */
function pathTokens(word: string, home: string | undefined): string[] {
  return word.split(/[\s:;=,()'"`]+/).flatMap((piece) => {
    if (piece === "" || piece.startsWith("-")) return [];
    const homed = /^(~|\$HOME|\$\{HOME\})\//.exec(piece);
    if (homed) return home ? [join(home, piece.slice(homed[0].length))] : [];
    const isPath = piece === "." || piece === ".." || piece.includes("/") || SCRIPT.test(piece);
    return isPath ? [piece] : [];
  });
}

const SCRIPT = /\.(ts|tsx|mts|cts|js|jsx|mjs|cjs|py|sh|rb|php|pl|lua)$/;

/** Whether write access to `folder` would reach into `trusted`. */
export function overlaps(folder: string, trusted: TrustedPath): boolean {
  if (isInside(trusted.path, folder)) return true; // the folder holds it
  return isInside(folder, trusted.path) &&
    !(trusted.except ?? []).some((allowed) => isInside(folder, allowed));
}

/** Whether `path` is `folder` or lies below it. */
export function isInside(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith("/") ? folder : folder + "/");
}

/** Deno's cache folder (`deno info` tells the same), where it keeps npm packages and code. */
export function denoCacheDir(env: Env, os: string): string {
  const explicit = env("DENO_DIR");
  if (explicit) return explicit;
  const home = env("HOME") ?? env("USERPROFILE") ?? "/";
  if (os === "darwin") return join(home, "Library", "Caches", "deno");
  if (os === "windows") return join(env("LOCALAPPDATA") ?? home, "deno");
  return join(env("XDG_CACHE_HOME") ?? join(home, ".cache"), "deno");
}
