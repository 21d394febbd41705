/**
 * What the host runs or trusts, so that no profile may grant a sandbox write access over it: a
 * script that could rewrite the worker, the memory watcher, a profile or a skill would run its
 * own code at the next start, in the next execution, or with every permission.
 */
import { isAbsolute, join, resolve } from "node:path";

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
  for (const server of inputs.servers) {
    // The command when it is a path, and arguments that name programs (not data folders).
    const programs = [server.command, ...server.args.filter((arg) => SCRIPT.test(arg))];
    for (const word of programs) {
      if (!word.includes("/") || /^[a-z][a-z0-9+.-]*:/i.test(word)) continue; // `deno`, npm:
      paths.push({
        path: isAbsolute(word) ? word : resolve(server.cwd, word),
        what: "a file an upstream server runs",
      });
    }
  }
  return paths;
}

const SCRIPT = /\.(ts|mts|js|mjs|cjs|py|sh)$/;

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
export function denoCacheDir(env: (name: string) => string | undefined, os: string): string {
  const explicit = env("DENO_DIR");
  if (explicit) return explicit;
  const home = env("HOME") ?? env("USERPROFILE") ?? "/";
  if (os === "darwin") return join(home, "Library", "Caches", "deno");
  if (os === "windows") return join(env("LOCALAPPDATA") ?? home, "deno");
  return join(env("XDG_CACHE_HOME") ?? join(home, ".cache"), "deno");
}
