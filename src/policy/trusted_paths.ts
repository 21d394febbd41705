/**
 * What the host runs or trusts, so that no profile may grant a sandbox write access over it: a
 * script that could rewrite the worker, the memory watcher, a profile or a skill would run its
 * own code at the next start, in the next execution, or with every permission.
 */
import { dirname, isAbsolute, join, resolve } from "node:path";

/** A path no sandbox may write, and what it is (for the refusal's message). */
export interface TrustedPath {
  path: string;
  what: string;
  /** Folders below `path` that a profile may still grant (the checkout's examples/). */
  except?: string[];
  /**
   * Only the folder itself is trusted, not what lies below it: a server's working folder, where
   * Deno, Node and Python look for config files (deno.json, package.json) and packages.
   */
  folderOnly?: boolean;
}

export interface TrustInputs {
  /** The checkout's root. */
  projectRoot: string;
  configPath: string;
  settings: {
    permissions_dir: string;
    skills_dir: string;
    wheels_dir: string;
    audit_log: string;
  };
  /** The stdio servers the host starts: their commands and the files their arguments name. */
  servers: { command: string; args: string[]; cwd: string }[];
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
  if (inputs.settings.audit_log) {
    paths.push({ path: inputs.settings.audit_log, what: "the audit log" });
  }
  for (const server of inputs.servers) paths.push(...serverPaths(server));
  return paths;
}

/**
 * What a stdio server runs: its working folder (config files found there or above, `deno task`,
 * `node .`), and, whole, the folders of its command and of every argument that names a path
 * (its script and the modules beside it; a data folder named this way is protected too, which
 * errs on the safe side). `-m pkg` names a package under the working folder.
 */
function serverPaths(server: { command: string; args: string[]; cwd: string }): TrustedPath[] {
  const at = (word: string) => isAbsolute(word) ? word : resolve(server.cwd, word);
  const paths: TrustedPath[] = [
    { path: server.cwd, what: "an upstream server's working folder", folderOnly: true },
  ];
  const words = [server.command, ...server.args];
  for (const [i, word] of words.entries()) {
    if (words[i - 1] === "-m") {
      paths.push({ path: at(word.split(".")[0]!), what: "a package an upstream server runs" });
    } else if (isPathWord(word)) {
      const path = at(word);
      paths.push({
        path: SCRIPT.test(word) || i === 0 ? dirname(path) : path,
        what: "files an upstream server runs",
      });
    }
  }
  return paths;
}

/** A word of a command line that names a file or folder (not a flag, a URL or `npm:x`). */
function isPathWord(word: string): boolean {
  if (word.startsWith("-") || /^[a-z][a-z0-9+.-]*:/i.test(word)) return false;
  return word === "." || word === ".." || word.includes("/") || SCRIPT.test(word);
}

const SCRIPT = /\.(ts|mts|js|mjs|cjs|py|sh)$/;

/** Whether write access to `folder` would reach into `trusted`. */
export function overlaps(folder: string, trusted: TrustedPath): boolean {
  if (isInside(trusted.path, folder)) return true; // the folder holds it
  return !trusted.folderOnly && isInside(folder, trusted.path) &&
    !(trusted.except ?? []).some((allowed) => isInside(folder, allowed));
}

/** Whether `path` is `folder` or lies below it. */
export function isInside(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith("/") ? folder : folder + "/");
}

/** Deno's cache folder (`deno info` tells the same), where it keeps npm packages and code. */
export function denoCacheDir(env: (name: string) => string | undefined, os: string): string {
  const explicit = env("DENO_DIR");
  if (explicit) return explicit;
  const home = env("HOME") ?? env("USERPROFILE") ?? "/";
  if (os === "darwin") return join(home, "Library", "Caches", "deno");
  if (os === "windows") return join(env("LOCALAPPDATA") ?? home, "deno");
  return join(env("XDG_CACHE_HOME") ?? join(home, ".cache"), "deno");
}
