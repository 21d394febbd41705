/**
 * `import` and `install`: the file-reading and -writing edge around the pure decisions in
 * src/clients/ (where files are, how entries translate, how files merge). Both run in the
 * launcher's process, without the restricted relaunch and without loading the server.
 */
import { dirname, join, resolve } from "node:path";
import {
  type ClientName,
  CLIENTS,
  type ConfigSource,
  configSources,
  installScopes,
  installTarget,
  isClientName,
  isProjectFile,
  isRecord,
  type Platform,
  type Scope,
  valueAt,
} from "../clients/client_configs.ts";
import { type FileRead, readJsonFile } from "../clients/read_json_file.ts";
import { configMode, HIDDEN, literalSecrets, maskConfig, maskEntry } from "../clients/secrets.ts";
import { isInside, realTarget } from "../clients/real_target.ts";
import { describeEntry } from "../clients/describe_entry.ts";
import {
  type ClaudeCodeApprovals,
  claudeCodeRefusal,
  matchingProjectKeys,
} from "../clients/claude_code_approval.ts";
import {
  type Candidate,
  type CandidateStatus,
  installServer,
  mergeServers,
} from "../clients/merge.ts";
import { chooseLaunch, clientEntry, OUR_SERVER_NAME } from "../clients/our_entry.ts";
import { leftBehindNote, variablesLeftBehind } from "../clients/variables_left_behind.ts";
import { type ServerEntry, translateEntry, type Translation } from "../clients/translate.ts";
import { escapeUnsafe, shortenSpaces } from "../_util/safe_text.ts";
import { assertReplaceable, writeFileAtomically } from "../_util/atomic_write.ts";
import { PROJECT_ROOT } from "../config/config.ts";
import { readConfigVariable, readEnv } from "../config/environment.ts";
import { UsageError } from "./usage_error.ts";

/** What the commands need from the outside world (tests pass their own). */
export interface ClientsDeps {
  platform: Platform;
  /** Reads any environment variable (for "is it set" notes). */
  env: (name: string) => string | undefined;
  projectRoot: string;
  /** Where a command is on PATH, if it is. */
  which: (command: string) => string | undefined;
  execPath: string;
  standalone: boolean;
  now: () => Date;
  out: (text: string) => void;
}

/** The real machine: its HOME, config folders, PATH, clock and current folder. */
export function systemDeps(out: (text: string) => void): ClientsDeps {
  const home = readEnv("HOME") ?? readEnv("USERPROFILE");
  if (!home) throw new Error("Cannot find client configs: neither HOME nor USERPROFILE is set");
  const os = Deno.build.os === "darwin" || Deno.build.os === "windows" ? Deno.build.os : "linux";
  return {
    platform: {
      os,
      home,
      xdgConfigHome: readEnv("XDG_CONFIG_HOME"),
      appData: readEnv("APPDATA"),
      cwd: Deno.cwd(),
    },
    env: readConfigVariable,
    projectRoot: PROJECT_ROOT,
    which: (command) => findOnPath(command, readEnv("PATH") ?? "", os),
    execPath: Deno.execPath(),
    standalone: Deno.build.standalone,
    now: () => new Date(),
    out,
  };
}

/** Client names from the command line; an unknown one is a usage error. */
export function parseClients(names: string[]): ClientName[] {
  for (const name of names) {
    if (!isClientName(name)) {
      throw new UsageError(`unknown client "${name}" (known: ${CLIENTS.join(", ")})`);
    }
  }
  return names as ClientName[];
}

/** `import` as the CLI runs it. */
export function importCommand(
  flags: { from: string[]; dryRun: boolean; replace: boolean; project: boolean; config?: string },
  out: (text: string) => void,
): Promise<number> {
  const from = parseClients(flags.from);
  const configPath = resolve(
    flags.config ?? readEnv("CODEMODE_CONFIG") ?? join(PROJECT_ROOT, "mcp_servers.json"),
  );
  return runImport(
    { from, dryRun: flags.dryRun, replace: flags.replace, project: flags.project, configPath },
    systemDeps(out),
  );
}

/** `install` as the CLI runs it. */
export function installCommand(
  flags: { client?: string; scope?: string; dryRun: boolean; config?: string },
  out: (text: string) => void,
): Promise<number> {
  if (flags.client === undefined) {
    throw new UsageError(`install needs --client (one of ${CLIENTS.join(", ")})`);
  }
  const [client] = parseClients([flags.client]);
  const scope = flags.scope ?? "user";
  if (scope !== "user" && scope !== "project") {
    throw new UsageError(`--scope must be user or project, got "${scope}"`);
  }
  return runInstall(
    { client: client!, scope, dryRun: flags.dryRun, config: flags.config },
    systemDeps(out),
  );
}

/**
 * Writes `value` as JSON to `path` atomically with permission bits `mode` (null: the default
 * for a new file), keeping a timestamped copy of the old file, if any, beside it (returned);
 * creates the folder when the file is new. A symlinked file is written through the link.
 */
async function writeJsonWithBackup(
  path: string,
  value: unknown,
  old: { exists: boolean; mode: number | null },
  now: Date,
): Promise<string | null> {
  const target = await Deno.realPath(path).catch(() => path);
  let backup: string | null = null;
  await assertReplaceable(target); // before the backup: a refused write leaves nothing behind
  if (old.exists) {
    backup = `${target}.${now.toISOString().replace(/[:.]/g, "-")}.bak`;
    await Deno.copyFile(target, backup);
    if (old.mode !== null && Deno.build.os !== "windows") await Deno.chmod(backup, old.mode);
  } else {
    await Deno.mkdir(dirname(target), { recursive: true });
  }
  await writeFileAtomically(target, JSON.stringify(value, null, 2) + "\n", {
    mode: old.mode ?? undefined,
    userFile: true,
  });
  return backup;
}

/**
 * Claude Code's approvals for the current folder: every ~/.claude.json "projects" entry naming
 * it in any spelling (or through a symlink), and the project's .claude/settings*.json.
 */
async function readClaudeCodeApprovals(
  claudeJson: FileRead,
  platform: Platform,
): Promise<ClaudeCodeApprovals> {
  const realPath = (path: string) => Deno.realPath(path).catch(() => undefined);
  const settings: ClaudeCodeApprovals["settings"] = [];
  let unreadable = claudeJson.status === "broken" ? "~/.claude.json" : null;
  for (const file of ["settings.local.json", "settings.json"]) {
    const path = join(platform.cwd, ".claude", file);
    const read = await readJsonFile(path);
    if (read.status === "broken" || (read.status === "ok" && !isRecord(read.value))) {
      unreadable ??= path;
    } else if (read.status === "ok") {
      settings.push({ path, value: read.value as Record<string, unknown> });
    }
  }
  if (claudeJson.status !== "ok") return { unreadable, folders: [], settings };
  const projects = valueAt(claudeJson.value, ["projects"]);
  const keys = isRecord(projects) ? Object.keys(projects) : [];
  const realPaths = new Map<string, string>();
  for (const key of keys) {
    const real = await realPath(key);
    if (real !== undefined) realPaths.set(key, real);
  }
  const folder = { path: platform.cwd, realPath: await realPath(platform.cwd) };
  const folders = matchingProjectKeys(claudeJson.value, folder, platform.os, realPaths)
    .map((key) => (projects as Record<string, unknown>)[key])
    .filter(isRecord);
  return { unreadable, folders, settings };
}

function describeSource(s: ConfigSource): string {
  const where = s.keyPath.length > 1
    ? ` (${s.keyPath.slice(0, -1).map((k) => `[${JSON.stringify(k)}]`).join("")})`
    : "";
  return `${s.client} ${s.scope}: ${s.path}${where}`;
}

/** An entry's transport and command line or URL (a password in a URL hidden). */
function summary(full: ServerEntry): string {
  const entry = maskEntry(full) as ServerEntry;
  if (typeof entry.url === "string") {
    return `${entry.type === "sse" ? "sse " : "http"}  ${entry.url}`;
  }
  const args = (entry.args ?? []).join(" ");
  return `stdio ${entry.command}${args ? " " + args : ""}`;
}

export interface ImportOptions {
  from: ClientName[];
  dryRun: boolean;
  replace: boolean;
  /** Take the servers of the current folder's project files too (else they are only shown). */
  project: boolean;
  /** Our config file to write (resolved by the caller). */
  configPath: string;
}

/**
 * Reads every list of servers the chosen clients keep, prints what it found, and merges the
 * servers into our config. Exit code 0, or 1 when a client file or our config could not be
 * read (what could be read is still merged).
 */
export async function runImport(options: ImportOptions, deps: ClientsDeps): Promise<number> {
  const out = printer(deps.out);
  const clients = options.from.length > 0 ? options.from : [...CLIENTS];
  let failed = false;
  // In the order found: a list of servers, or a line saying why there is none.
  const reports: {
    source: ConfigSource;
    message?: string;
    translations?: Translation[];
    warnings?: string[];
    /** The permission bits of the file read (null: unknown, as on Windows). */
    mode?: number | null;
  }[] = [];
  const seen = new Set<string>();
  const missing = new Set<string>();
  // ~/.claude.json holds two lists and Claude Code's approvals: read each file once.
  const reads = new Map<string, Promise<FileRead>>();
  const readOnce = (path: string) => {
    if (!reads.has(path)) reads.set(path, readJsonFile(path));
    return reads.get(path)!;
  };
  for (const client of clients) {
    for (const source of configSources(client, deps.platform)) {
      const id = JSON.stringify([source.path, source.keyPath]);
      if (seen.has(id)) continue; // e.g. Cursor's project file when the folder is HOME
      seen.add(id);
      const read = await readOnce(source.path);
      if (read.status === "missing") {
        if (!missing.has(source.path)) reports.push({ source, message: "not found" });
        missing.add(source.path);
        continue;
      }
      if (read.status === "broken") {
        reports.push({ source, message: `cannot read: ${read.message}` });
        failed = true;
        continue;
      }
      const servers = valueAt(read.value, source.keyPath);
      if (servers === undefined) {
        reports.push({ source, message: "no servers" });
        continue;
      }
      if (!isRecord(servers)) {
        reports.push({
          source,
          message: `cannot read: "${source.keyPath.at(-1)}" is not an object`,
        });
        failed = true;
        continue;
      }
      const approvals = client === "claude-code"
        ? await readClaudeCodeApprovals(
          await readOnce(installTarget(client, "user", deps.platform)!.path),
          deps.platform,
        )
        : null;
      const translations = Object.entries(servers).map(([name, raw]): Translation => {
        const t = translateEntry(name, raw, {
          projectDir: source.projectDir,
          home: deps.platform.home,
          projectRoot: deps.projectRoot,
          isSet: (v) => deps.env(v) !== undefined,
        });
        const refused = t.outcome === "import" && approvals !== null
          ? claudeCodeRefusal(approvals, source.scope, name)
          : null;
        return refused ? { outcome: "skip", name: t.name, reason: refused, notes: t.notes } : t;
      });
      const prefix = source.keyPath.join(".") + ".";
      const twice = read.duplicateKeys.filter((k) => k.startsWith(prefix));
      const warnings = twice.length === 0 ? [] : [
        `keys given twice (the last one is used, as the client does): ${twice.join(", ")}`,
      ];
      reports.push({ source, translations, warnings, mode: read.mode });
    }
  }
  const found = reports.filter((r) => r.translations !== undefined);

  const ours = await readJsonFile(options.configPath);
  if (ours.status === "broken") {
    out(`Cannot import into ${options.configPath}: ${ours.message}`);
    return 1;
  }
  if (ours.status === "ok" && ours.lossyNumbers.length > 0) {
    out(
      `Cannot import into ${options.configPath}: rewriting it would change these numbers, ` +
        `which JSON cannot hold exactly: ${ours.lossyNumbers.join(", ")}`,
    );
    return 1;
  }
  // The user's own lists first, so their entries win a name over a project file's.
  const taken = (source: ConfigSource) => !isProjectFile(source) || options.project;
  const ordered = [
    ...found.filter((r) => !isProjectFile(r.source)),
    ...found.filter((r) => isProjectFile(r.source)),
  ];
  const candidates: Candidate[] = [];
  const candidateFiles: { sourcePath: string; sourceMode: number | null }[] = [];
  const index = new Map<Translation, number>();
  for (const { source, translations, mode } of ordered) {
    if (!taken(source)) continue;
    for (const t of translations!) {
      if (t.outcome !== "import") continue;
      index.set(t, candidates.length);
      candidateFiles.push({ sourcePath: source.path, sourceMode: mode ?? null });
      candidates.push({
        name: t.name,
        entry: t.entry,
        from: `${source.client} ${source.scope}`,
        fromProject: isProjectFile(source),
      });
    }
  }
  let plan;
  try {
    plan = mergeServers(ours.status === "ok" ? ours.value : null, candidates, {
      replace: options.replace,
    });
  } catch (error) {
    out(`Cannot import into ${options.configPath}: ${(error as Error).message}`);
    return 1;
  }

  let held = 0;
  /** Project files with servers Claude Code has not approved here. */
  const unapproved = new Set<string>();
  for (const { source, message, translations, warnings } of reports) {
    if (translations === undefined) {
      out(`${describeSource(source)}: ${message}`);
      continue;
    }
    out(`${describeSource(source)}`);
    for (const warning of warnings ?? []) out(`  warning: ${warning}`);
    if (translations.length === 0) out("  (no servers)");
    for (const t of translations) {
      if (t.outcome === "import" && !taken(source)) held++;
      if (t.outcome === "skip" && t.reason.startsWith("not approved")) unapproved.add(source.path);
      const line = t.outcome === "import"
        ? taken(source)
          ? statusLine(t.name, summary(t.entry), plan.statuses[index.get(t)!]!, source)
          : `  ? ${t.name}  ${summary(t.entry)}  (not imported without --project)`
        : t.outcome === "self"
        ? `  - ${t.name}  left out: ${t.reason}`
        : `  ! ${t.name}  not imported: ${t.reason}`;
      out(line);
      if (t.outcome === "import") {
        const { details, warnings } = describeEntry(t.entry, {
          fromProject: isProjectFile(source),
        });
        for (const detail of details) out(`      ${detail}`);
        for (const warning of warnings) out(`      warning: ${warning}`);
      }
      for (const note of t.notes) out(`      note: ${note}`);
    }
  }
  if (held > 0) {
    out(
      `Not imported: ${held} server${held === 1 ? "" : "s"} marked ?. Project servers are not ` +
        `imported without --project: they come from files in this folder ` +
        `(${deps.platform.cwd}), chosen by whoever made it; read what each runs above first.`,
    );
  }
  for (const path of unapproved) {
    // Newcomer 65: a plain project .mcp.json, never opened in Claude Code, imported nothing,
    // with no word of what else to do.
    out(
      `Servers Claude Code has not approved in this folder are not imported. To use the ` +
        `servers of ${path} anyway, read what each runs above, then serve that file as it is: ` +
        `deno task serve --config ${path}`,
    );
  }

  const added = plan.statuses.filter((s) => s.status === "added").length;
  const replaced = plan.statuses.filter((s) => s.status === "replaced").length;
  if (candidates.length === 0 && found.length === 0) {
    out(`No client config found; ${options.configPath} left as it was.`);
    return failed ? 1 : 0;
  }
  if (!plan.changed) {
    out(`Nothing to add to ${options.configPath}.`);
    return failed ? 1 : 0;
  }
  const counts = `${added} added` + (replaced ? `, ${replaced} replaced` : "");
  const written = candidates.flatMap((c, i) => {
    const status = plan.statuses[i]!.status;
    return status === "added" || status === "replaced"
      ? [{ entry: c.entry, name: c.name, ...candidateFiles[i]! }]
      : [];
  });
  const { mode, why } = configMode(ours.status === "ok" ? ours.mode : null, written);
  const privately = `${options.configPath} ${options.dryRun ? "would be" : "is"} written ` +
    `owner-only (mode 0${mode?.toString(8)}): ${why.join("; ")}`;
  // The checkout's own file is tracked by git: a commit would carry the secrets away.
  const tracked = resolve(options.configPath) === resolve(deps.projectRoot, "mcp_servers.json") &&
      written.some((w) => literalSecrets(w.entry).length > 0)
    ? `Warning: ${options.configPath} is this checkout's, which git tracks: a commit would carry ` +
      "the literal secrets above. Import into a file of your own instead (--config " +
      "~/.config/mcp-code-mode/mcp_servers.json, then CODEMODE_CONFIG or --config for serve), " +
      "or turn them into ${NAME} placeholders read from the environment."
    : null;
  if (options.dryRun) {
    out(`Dry run: ${options.configPath} would be (${counts}; literal secrets shown as ${HIDDEN}):`);
    const shown = JSON.stringify(maskConfig(plan.file), null, 2);
    deps.out(escapeUnsafe(shortenSpaces(shown), { keepNewlines: true }) + "\n");
    if (why.length > 0) out(privately);
    if (tracked) out(tracked);
    return failed ? 1 : 0;
  }
  if (why.length > 0) out(privately);
  if (tracked) out(tracked);
  try {
    const backup = await writeJsonWithBackup(options.configPath, plan.file, {
      exists: ours.status === "ok",
      mode,
    }, deps.now());
    out(`Wrote ${options.configPath} (${counts})${backup ? `; the old file is ${backup}` : ""}.`);
  } catch (error) {
    out(writeFailure(options.configPath, error));
    return 1;
  }
  return failed ? 1 : 0;
}

export interface InstallOptions {
  client: ClientName;
  scope: Scope;
  dryRun: boolean;
  /** The config the installed entry starts the server with (`serve --config`), if given. */
  config?: string;
}

/** Adds this server to a client's list (idempotent). Exit 0, or 1 when the file cannot change. */
export async function runInstall(options: InstallOptions, deps: ClientsDeps): Promise<number> {
  const out = printer(deps.out);
  const target = installScopes(options.client).includes(options.scope)
    ? installTarget(options.client, options.scope, deps.platform)
    : null;
  if (!target) {
    throw new UsageError(
      `${options.client} has no ${options.scope} scope (it has: ${
        installScopes(options.client).join(", ")
      })`,
    );
  }
  if (options.scope === "project") {
    // A project file must stay in the project: not a link to another of the user's files.
    const real = await realTarget(target.path);
    const folder = await Deno.realPath(deps.platform.cwd);
    if (real.status === "dangling") {
      out(
        `Cannot install into ${target.path}: it is a symlink to ${real.points}, which does not ` +
          "exist (the file was not changed)",
      );
      return 1;
    }
    if (!isInside(real.path, folder)) {
      out(
        `Cannot install into ${target.path}: it resolves to ${real.path}, outside this folder ` +
          `(${folder}) through a symlink; a project file is written only inside the project ` +
          "(nothing was changed)",
      );
      return 1;
    }
    if (real.path !== target.path) out(`(${target.path} is a symlink to ${real.path})`);
  }
  const configPath = options.config === undefined
    ? undefined
    : resolve(deps.platform.cwd, options.config);
  if (configPath?.includes("${")) {
    // Clients expand `${NAME}` in an entry's args: the entry would serve another path.
    throw new UsageError(`--config: ${configPath} holds "\${", which clients expand in args`);
  }
  if (configPath && !(await Deno.stat(configPath).then((s) => s.isFile, () => false))) {
    throw new UsageError(`--config: no config file at ${configPath}`);
  }
  const cacheSetting = deps.env("CODEMODE_CACHE_DIR");
  const cacheDir = cacheSetting ? resolve(deps.platform.cwd, cacheSetting) : undefined;
  if (cacheDir?.includes("${")) {
    throw new UsageError(`CODEMODE_CACHE_DIR: ${cacheDir} holds "\${", which clients expand`);
  }
  const denoSetting = deps.env("DENO_DIR");
  const denoDir = denoSetting ? resolve(deps.platform.cwd, denoSetting) : undefined;
  if (denoDir?.includes("${")) {
    throw new UsageError(`DENO_DIR: ${denoDir} holds "\${", which clients expand`);
  }
  const launch = chooseLaunch({
    installedCommand: deps.which("mcp-code-mode"),
    execPath: deps.execPath,
    standalone: deps.standalone,
    projectRoot: deps.projectRoot,
    configPath,
    cacheDir,
    denoDir,
  });
  const entry = clientEntry(options.client, launch);
  const read = await readJsonFile(target.path);
  if (read.status === "broken") {
    out(`Cannot install into ${target.path}: ${read.message} (the file was not changed)`);
    return 1;
  }
  if (read.status === "ok" && read.lossyNumbers.length > 0) {
    out(
      `Cannot install into ${target.path}: rewriting it would change these numbers, which ` +
        `JSON cannot hold exactly: ${read.lossyNumbers.join(", ")} (the file was not changed)`,
    );
    return 1;
  }
  let plan;
  try {
    plan = installServer(
      read.status === "ok" ? read.value : null,
      target.keyPath,
      OUR_SERVER_NAME,
      entry,
    );
  } catch (error) {
    out(`${(error as Error).message} (${target.path} was not changed)`);
    return 1;
  }
  out(`${describeSource(target)}${read.status === "missing" ? " (new file)" : ""}`);
  out(`  "${OUR_SERVER_NAME}": ${JSON.stringify(entry)}`);
  out(`  launch: ${launch.why}`);
  const configText = await Deno.readTextFile(
    configPath ?? join(deps.projectRoot, "mcp_servers.json"),
  )
    .catch(() => "");
  // The entry as written, with what an earlier one kept (its own env, say).
  const written = plan.after[OUR_SERVER_NAME] as { env?: Record<string, string> } | undefined;
  const note = leftBehindNote(variablesLeftBehind(configText, deps.env, written?.env ?? {}));
  if (note) out(note);
  if (plan.change === "none") {
    out(`Already installed: ${target.path} is unchanged.`);
    return 0;
  }
  const names = (servers: Record<string, unknown>) =>
    Object.keys(servers).map((n) => n === OUR_SERVER_NAME ? `${n} (${plan.change})` : n);
  out(`  servers before: ${Object.keys(plan.before).join(", ") || "(none)"}`);
  out(`  servers after:  ${names(plan.after).join(", ")}`);
  if (plan.previousFields !== undefined) {
    // Field names only: the old entry's values may be secrets (an API key in its env).
    out(
      `  updated ${Object.keys(entry).join(", ")} of the "${OUR_SERVER_NAME}" entry there ` +
        `(its fields: ${plan.previousFields.join(", ") || "none"}; kept as they were: ${
          plan.keptFields!.join(", ") || "none"
        }${
          "env" in entry && plan.previousFields.includes("env")
            ? "; its env's own variables kept beside ours"
            : ""
        })`,
    );
  }
  if (read.status === "ok" && read.hadComments) {
    out("  note: the file's comments are not kept (the backup has them)");
  }
  if (read.status === "ok" && read.duplicateKeys.length > 0) {
    out(
      `  warning: keys given twice, of which only the last is kept: ${
        read.duplicateKeys.join(", ")
      }`,
    );
  }
  if (options.dryRun) {
    out("Dry run: nothing written.");
    return 0;
  }
  try {
    const backup = await writeJsonWithBackup(target.path, plan.file, {
      exists: read.status === "ok",
      mode: read.status === "ok" ? read.mode : null,
    }, deps.now());
    out(`Wrote ${target.path}${backup ? `; the old file is ${backup}` : ""}.`);
  } catch (error) {
    out(writeFailure(target.path, error));
    return 1;
  }
  return 0;
}

function statusLine(
  name: string,
  what: string,
  s: CandidateStatus,
  source: ConfigSource,
): string {
  switch (s.status) {
    case "added":
      return `  + ${name}  ${what}`;
    case "replaced":
      return `  ~ ${name}  ${what} (replaced the entry there)`;
    case "present":
      return `  = ${name}  already there`;
    case "kept":
      return isProjectFile(source)
        ? `  ! ${name}  not imported: a different "${name}" is there (a project file's entry ` +
          "never replaces it, even with --replace)"
        : `  ! ${name}  not imported: a different "${name}" is there (--replace overwrites it)`;
    case "collides":
      return `  ! ${name}  not imported: its Python name ${s.identifier} is that of "${s.other}" ` +
        "(in the sandbox one module would shadow the other)";
    case "duplicate":
      return s.same
        ? `  = ${name}  the same as in ${s.first}`
        : `  ! ${name}  not imported: differs from "${name}" in ${s.first}, which was taken`;
  }
}

/**
 * Prints one line per call, every unsafe character of it escaped and long whitespace shortened:
 * names, commands and messages from client files cannot start lines of their own, hide text or
 * push it off screen (see safe_text.ts).
 */
function printer(out: (text: string) => void): (line: string) => void {
  return (line) => out(escapeUnsafe(shortenSpaces(line)) + "\n");
}

/** Why `path` could not be written, as one "Cannot ..." sentence. */
function writeFailure(path: string, error: unknown): string {
  const message = (error as Error).message;
  if (error instanceof Deno.errors.NotCapable) {
    return `Cannot write ${path}: this process may not write there (run it with ` +
      "--allow-write, or -A)";
  }
  // atomic_write's own refusals already say what and why.
  return message.startsWith("Cannot ") ? message : `Cannot write ${path}: ${message}`;
}

/** Where `command` is on `path` (a PATH value), if anywhere. */
export function findOnPath(command: string, path: string, os: Platform["os"]): string | undefined {
  const names = os === "windows" ? [`${command}.exe`, `${command}.cmd`, command] : [command];
  for (const dir of path.split(os === "windows" ? ";" : ":").filter(Boolean)) {
    for (const name of names) {
      try {
        if (Deno.statSync(join(dir, name)).isFile) return join(dir, name);
      } catch {
        // not here
      }
    }
  }
  return undefined;
}
