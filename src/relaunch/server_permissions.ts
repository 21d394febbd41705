/**
 * The host's own least privilege: from the loaded config, the Deno permission flags the server
 * process needs, and nothing more. Run from source, the server re-starts itself under these
 * flags; see restricted_host.ts. Pure: everything it looks at is passed in.
 */
import { HOST_ENV } from "../config/environment.ts";
import { dirname, isAbsolute, resolve } from "node:path";
import type { Config } from "../config/config.ts";
import { placeholderNames } from "../config/placeholders.ts";
import type { OpenAIModelConfig } from "../agent/model_config.ts";
import { pyodidePackageSource } from "../packages/open_package_sources.ts";
import { hostAllowed, isHttpUrl } from "../packages/hosts.ts";

export interface HostGrants {
  read: string[];
  write: string[];
  run: string[];
  env: string[];
  net: string[];
}

export interface HostNeeds {
  config: Config;
  /** The config file's text, for the `${VAR}` names it reads from the environment. */
  configText: string;
  /** The Deno executable: runs sandboxes, the snapshot builder and the memory watcher. */
  denoPath: string;
  /** Pyodide's package folder (read to locate and check the runtime). */
  pyodideDir: string;
  /** Snapshot and downloaded-wheel cache (read and written). */
  cacheDir: string;
  /** The command each stdio server runs, as it will be spawned. */
  serverCommands: string[];
  /** Whether the audit log's folder exists (when not, the host creates it: a new folder). */
  auditFolderExists: boolean;
  /** The API model the agent may call (null: none configured). */
  model: OpenAIModelConfig | null;
  /** Where `serve --http` listens (null: stdio). */
  http: { host: string; port: number } | null;
  /** Other files the command reads (the script of `run FILE`). */
  extraRead: string[];
}

/** What the host needs, as lists (deduplicated, in a stable order). */
export function hostGrants(needs: HostNeeds): HostGrants {
  const { config, cacheDir } = needs;
  const settings = config.settings;
  const optional = (path: string) => (path ? [path] : []);
  const packageSource = sourceLocation(pyodidePackageSource(settings));
  const profiles = [...config.profiles.values()];
  const profileFolders = profiles.flatMap((p) => p.folders.map((f) => f.host));
  const read = [
    config.path,
    settings.permissions_dir,
    needs.pyodideDir,
    cacheDir,
    needs.denoPath,
    settings.skills_dir,
    ...optional(settings.wheels_dir),
    ...(packageSource.url ? [] : [packageSource.path]),
    // Checked at load for symlinks leading out (the sandbox mounts them, the host only looks).
    ...profileFolders,
    ...needs.extraRead,
  ];
  // The audit log's folder only while it does not exist: a new folder holds nothing to protect.
  const auditFolder = settings.audit_log && !needs.auditFolderExists
    ? [dirname(settings.audit_log)]
    : [];
  // Read-write folders: the host takes back the write access a script gave others there
  // (src/execution/shared_write_modes.ts).
  const readWrite = profiles.flatMap((p) => p.folders.filter((f) => f.mode === "rw"))
    .map((f) => f.host);
  const write = [
    cacheDir,
    settings.skills_dir,
    ...optional(settings.audit_log),
    ...readWrite,
    ...auditFolder,
  ];
  const net = [
    ...config.servers.flatMap((s) => (s.kind === "http" ? [new URL(s.url).host] : [])),
    ...(settings.package_index ? [new URL(settings.package_index).host] : []),
    // Pyodide's package set is downloaded only for profiles that may reach it.
    ...(packageSource.url && profiles.some((p) => hostAllowed(packageSource.url!, p.net))
      ? [packageSource.url.host]
      : []),
    ...(needs.model ? [modelHost(needs.model)] : []),
    ...(needs.http ? [bindAddress(needs.http)] : []),
  ];
  return {
    read: unique(read),
    write: unique(write),
    run: unique([needs.denoPath, ...needs.serverCommands]),
    env: unique([...HOST_ENV, ...placeholderNames(needs.configText)]),
    net: unique(net),
  };
}

/** `deno run` flags for `grants`; an empty list grants nothing (never "everything"). */
export function hostFlags(grants: HostGrants): string[] {
  const flag = (name: string, values: string[]) => {
    if (values.length === 0) return [];
    const withComma = values.find((v) => v.includes(","));
    if (withComma !== undefined) {
      throw new TypeError(
        `Cannot grant the host ${name} "${withComma}": Deno permission lists cannot hold a comma ` +
          "(rename it, or start the server with --no-restrict)",
      );
    }
    return [`--allow-${name}=${values.join(",")}`];
  };
  return [
    ...flag("read", grants.read),
    ...flag("write", grants.write),
    ...flag("run", grants.run),
    ...flag("env", grants.env),
    ...flag("net", grants.net),
  ];
}

/**
 * A stdio server's command as `--allow-run` must name it: a relative path (`./bin/server`) is
 * spawned from the server's `cwd`, and Deno matches a granted path only in absolute form; bare
 * names (`npx`) are looked up on PATH by Deno itself.
 */
export function runGrantFor(command: string, cwd: string): string {
  return command.includes("/") && !isAbsolute(command) ? resolve(cwd, command) : command;
}

/** The host (with port, when given) the agent's model API is at. */
export function modelHost(model: OpenAIModelConfig): string {
  const url = model.kind === "azure" ? model.endpoint! : model.baseURL ?? DEFAULT_OPENAI_URL;
  return new URL(url).host;
}

const DEFAULT_OPENAI_URL = "https://api.openai.com/v1";

/** `--allow-net` entry for listening: the host alone when the port is picked by the system. */
function bindAddress({ host, port }: { host: string; port: number }): string {
  const name = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  return port === 0 ? name : `${name}:${port}`;
}

/** A package source as a URL to reach or a folder to read. */
function sourceLocation(source: string): { url: URL | null; path: string } {
  return isHttpUrl(source) ? { url: new URL(source), path: "" } : { url: null, path: source };
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}

/** One line naming every grant (logged at start). */
export function describeGrants(grants: HostGrants): string {
  return (Object.keys(grants) as (keyof HostGrants)[])
    .map((k) => `${k}: ${grants[k].length === 0 ? "none" : grants[k].join(", ")}`)
    .join("; ");
}
