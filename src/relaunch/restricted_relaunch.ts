/**
 * Starting the server with least privilege. Run from source, `serve` (and `run`, `agent`,
 * `tools`) does not do the work itself: it reads the config, computes the host's flags
 * (host_permissions.ts), and starts `main.ts` again with the same arguments plus
 * `--no-restrict`, under exactly those flags. The child inherits stdin, stdout and stderr, so
 * this process is not in the protocol's path: it waits, forwards signals, and exits with the
 * child's code.
 */
import type { Profile } from "../sandbox/profile.ts";
import { foldersOpenToOthers } from "../sandbox/open_folders.ts";
import { readEnv } from "../config/environment.ts";
import { dirname, join } from "node:path";
import { loadConfig, PROJECT_ROOT, UNAVAILABLE_PROFILES } from "../config/config.ts";
import { denoCommand } from "../upstream/deno_command.ts";
import { openAIConfigFromEnv } from "../agent/model_config.ts";
import {
  describeGrants,
  hostFlags,
  type HostGrants,
  hostGrants,
  runGrantFor,
} from "./server_permissions.ts";
import { createRedactor } from "../policy/redaction.ts";
import { locateRuntime, runtimeTrustedPaths } from "../sandbox/runtime.ts";
import { processUid } from "../_util/host_owner.ts";
import {
  cacheFolderRefusal,
  foldersAboveProblem,
  privateFolderProblem,
} from "../sandbox/private_folder.ts";
import type { Logger } from "../_util/log.ts";
import { pathExists } from "../_util/path_exists.ts";

/** The flag a server started this way gets (and users may pass to skip the restart). */
export const NO_RESTRICT = "--no-restrict";

/** Signals passed on to the server (Windows can only listen for SIGINT and SIGBREAK). */
const FORWARDED_SIGNALS: Deno.Signal[] = Deno.build.os === "windows"
  ? ["SIGINT", "SIGBREAK"]
  : ["SIGINT", "SIGTERM", "SIGHUP"];

export interface RestrictedHostOptions {
  /** This command's CLI arguments (passed on to the child). */
  args: string[];
  configPath: string | undefined;
  http: { host: string; port: number } | null;
  /** Files the command itself reads (the script of `run FILE`). */
  extraRead: string[];
  /** Whether to name the read-write folders other local users can reach (`serve` does). */
  sayOpenFolders?: boolean;
  log: Logger;
}

/**
 * What the server needs for its config (reads the config and the environment), and how to
 * scrub the config's secrets from a description of it (a server's path may hold a `${VAR}`).
 */
export async function computeHostGrants(
  options: Omit<RestrictedHostOptions, "args" | "log">,
): Promise<
  {
    grants: HostGrants;
    scrub: (text: string) => string;
    unavailableProfiles: Map<string, string>;
    /** The profiles the config loads (their folders are checked here, see open_folders.ts). */
    profiles: Profile[];
  }
> {
  const { configPath, http, extraRead } = options;
  const runtime = locateRuntime();
  const config = await loadConfig({
    path: configPath,
    runtimePaths: runtimeTrustedPaths(runtime),
  });
  const stdioCommands = config.servers.flatMap((s) =>
    s.kind === "stdio" ? [runGrantFor(denoCommand(s.command), s.cwd)] : []
  );
  const grants = hostGrants({
    config,
    configText: await Deno.readTextFile(config.path),
    denoPath: runtime.denoPath,
    pyodideDir: runtime.pyodideDir,
    cacheDir: runtime.cacheDir,
    serverCommands: stdioCommands,
    auditFolderExists: config.settings.audit_log === "" ||
      await pathExists(dirname(config.settings.audit_log)),
    model: openAIConfigFromEnv(readEnv),
    http,
    // The memory available, which sets how many sandboxes the pool may keep ready.
    extraRead: Deno.build.os === "linux" ? [...extraRead, "/proc/meminfo"] : extraRead,
  });
  return {
    grants,
    scrub: createRedactor(config.secrets).text,
    unavailableProfiles: config.unavailableProfiles,
    profiles: [...config.profiles.values()],
  };
}

/** Runs the command again as a child under the computed flags; resolves with its exit code. */
export async function runRestrictedHost(options: RestrictedHostOptions): Promise<number> {
  const { grants, scrub, unavailableProfiles, profiles } = await computeHostGrants(options);
  const uid = processUid();
  // Checked here: the host may not look at the folders above them. Said, not warned: on a
  // machine of one user (the checkout's own workspace profile) it is no danger, and a warning at
  // every start would teach people to overlook warnings.
  const openFolders = options.sayOpenFolders ? foldersOpenToOthers(profiles, uid ?? 0) : [];
  for (const { folder, profiles: names } of openFolders) {
    const which = names.map((name) => JSON.stringify(name)).join(", ");
    options.log.info(
      `profile ${which}: a read-write folder other local users can reach: a script of that ` +
        "profile can open it to them for a run, and what they do then can outlast it. Nothing " +
        "to do on a machine no one else logs in to; else put it in a folder they cannot enter " +
        "(README, Security model)",
      { folder },
    );
  }
  // The host cannot read the folders above its cache folder: they are checked here, and so is
  // the cache folder itself when it is there (one another user made first is theirs).
  const cacheDir = locateRuntime().cacheDir;
  const exposed = await Deno.lstat(cacheDir).then(
    () => privateFolderProblem(cacheDir, uid),
    () => foldersAboveProblem(cacheDir, uid),
  );
  if (exposed) {
    options.log.error(cacheFolderRefusal(exposed));
    return 1;
  }
  options.log.debug(`host permissions: ${scrub(describeGrants(grants))}`);
  const flags = hostFlags(grants);
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--no-prompt",
      // Deno.serve aborts request.signal only when a request fails, not after every response
      // (the MCP SDK reads it; the legacy behaviour printed a deprecation notice per session).
      "--unstable-no-legacy-abort",
      `--config=${join(PROJECT_ROOT, "deno.json")}`,
      ...flags,
      join(PROJECT_ROOT, "main.ts"),
      ...options.args,
      NO_RESTRICT,
    ],
    // Its folders are not granted to the child, which could not check them again.
    env: { [UNAVAILABLE_PROFILES]: JSON.stringify(Object.fromEntries(unavailableProfiles)) },
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  const forward = (signal: Deno.Signal) => () => {
    try {
      child.kill(signal);
    } catch {
      // already exited
    }
  };
  const listeners = FORWARDED_SIGNALS.map((signal) => [signal, forward(signal)] as const);
  for (const [signal, listener] of listeners) Deno.addSignalListener(signal, listener);
  try {
    return (await child.status).code;
  } finally {
    for (const [signal, listener] of listeners) Deno.removeSignalListener(signal, listener);
  }
}
