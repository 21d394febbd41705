/**
 * `mcp_servers.json` + `permissions/*.json` + environment -> one resolved `Config`.
 *
 * Everything the rest of the server trusts is checked here once. Errors name the file, the
 * server or profile, and the field.
 */
import { denoCommand } from "../upstream/deno_command.ts";
import { readConfigVariable, readEnv } from "./environment.ts";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath as fromFileUrl } from "node:url";
import { isHttpUrl } from "../packages/hosts.ts";
import {
  FolderCheckError,
  mergeProfileFiles,
  type Profile,
  resolveProfile,
} from "../sandbox/profile.ts";
import { secretProblem } from "../policy/redaction.ts";
import { expandPlaceholders } from "./placeholders.ts";
import { proxySecrets, urlCredentials } from "../upstream/network_env.ts";
import { type TrustedPath, trustedPaths } from "../policy/trusted_paths.ts";
import { isThisServer } from "./this_server.ts";
import { closestName, didYouMean } from "./did_you_mean.ts";
import { isSecretEnvName, isShortSetting, literalSecretValues } from "./literal_secrets.ts";
export { SECRET_NAME } from "./literal_secrets.ts";
import { parseJsonc } from "../_util/jsonc.ts";

/**
 * Which MCP revision to speak to an upstream server: "auto" asks with `server/discover` first
 * (2026-07-28) and falls back to the 2025-11-25 handshake; the others use just that revision.
 */
export const UPSTREAM_PROTOCOLS = ["auto", "2025-11-25", "2026-07-28"] as const;
export type UpstreamProtocol = typeof UPSTREAM_PROTOCOLS[number];

export interface StdioServerConfig {
  kind: "stdio";
  name: string;
  protocol: UpstreamProtocol;
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  description: string;
}

export interface HttpServerConfig {
  kind: "http";
  name: string;
  protocol: UpstreamProtocol;
  /** MCP's Streamable HTTP, or the older HTTP+SSE transport (a client config's `"type": "sse"`). */
  transport: "streamable-http" | "sse";
  url: string;
  headers: Record<string, string>;
  description: string;
}

export type ServerConfig = StdioServerConfig | HttpServerConfig;

/**
 * A server the file lists that cannot start with this environment: a `${VAR}` that is not set,
 * or a secret too short to scrub. The others start; this one is shown as unavailable, and calls
 * to it say why.
 */
export interface UnavailableServer {
  name: string;
  description: string;
  reason: string;
}

export interface Settings {
  /** Booted sandboxes kept ready per profile in use. */
  pool_size: number;
  /** Executions that may wait for a sandbox before callers get a "busy" error. */
  max_waiting: number;
  default_profile: string;
  /** Profiles a caller may name in `execute_code`; all loaded profiles when absent. */
  allowed_profiles: string[];
  permissions_dir: string;
  /** Per-call timeout for upstream tools, in seconds. */
  tool_timeout_s: number;
  /** How long a person has to answer a question about a tool call (see a profile's `approve`). */
  approval_timeout_s: number;
  /** A tool call from a client with the Tasks extension still running after this becomes a task. */
  task_after_s: number;
  /** File that gets one JSON line per execution (none when empty). */
  audit_log: string;
  /** Folder of saved skills. */
  skills_dir: string;
  /**
   * Clients may read and import skills but not save or delete them (no save_skill and
   * delete_skill tools): skills are shared by every client, so whoever may save one decides
   * code that runs in other clients' sandboxes.
   */
  skills_read_only: boolean;
  /**
   * Record the shape (keys and value types, never values) of results of tools that declare no
   * outputSchema, so their stubs show an observed return type. Kept in the cache folder.
   */
  observe_results: boolean;
  /** Persistent sessions open at once, over all clients. */
  max_sessions: number;
  /** Persistent sessions one connection may hold at once (default: half of max_sessions). */
  max_sessions_per_connection: number;
  /** Seconds an idle session lives. */
  session_idle_s: number;
  /** Folder of Python wheels scripts may install ("" for none). */
  wheels_dir: string;
  /**
   * A PEP 503 simple index for packages not in wheels_dir ("" for none); used only for
   * profiles whose `net` allows its host.
   */
  package_index: string;
  /**
   * Pyodide's package set: a base URL serving `pyodide-lock.json` and the files it lists, or a
   * folder holding an unpacked Pyodide distribution; "" for the official distribution of the
   * pinned Pyodide. A URL is used only for profiles whose `net` allows its host.
   */
  pyodide_packages: string;
}

export interface Config {
  path: string;
  servers: ServerConfig[];
  unavailable: UnavailableServer[];
  settings: Settings;
  /** The profiles callers may use (settings.allowed_profiles), by name: no other is loaded. */
  profiles: Map<string, Profile>;
  /** Profiles refused for what a folder of theirs holds now, with the reason (see loadProfiles). */
  unavailableProfiles: Map<string, string>;
  /**
   * Values that must never reach a sandbox, a result or a log: everything `${VAR}` expanded to
   * in server entries, every HTTP header value, every `env` value under a name that says it is a
   * secret (`GITHUB_TOKEN`, `API_KEY`, ...: client configs often hold them literally), and the
   * credentials in the proxy variables.
   */
  secrets: string[];
  /** What was ignored or skipped while reading the file (logged when the server starts). */
  notes: ConfigNote[];
}

/**
 * Something in the file that was not used: a field only some MCP client understands (`debug`),
 * or one nobody does, or a server that cannot start here (`warn`).
 */
export interface ConfigNote {
  level: "debug" | "warn";
  message: string;
}

/** The project's root folder (where the default mcp_servers.json and permissions/ live). */
export const PROJECT_ROOT = fromFileUrl(new URL("../../", import.meta.url)).replace(/\/$/, "");

export interface LoadConfigOptions {
  /** Path of mcp_servers.json; default `$CODEMODE_CONFIG`, then the project's own file. */
  path?: string;
  env?: (name: string) => string | undefined;
  /** The runtime's own files (Pyodide, the snapshot cache, Deno), which no sandbox may write. */
  runtimePaths?: TrustedPath[];
}

export async function loadConfig(options: LoadConfigOptions = {}): Promise<Config> {
  const env = options.env ?? readConfigVariable;
  const given = options.path ?? env("CODEMODE_CONFIG") ?? join(PROJECT_ROOT, "mcp_servers.json");
  const path = resolve(given);
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (cause) {
    // `deno task --cwd` runs in the checkout: a path relative to the caller's folder misses.
    const relative = isAbsolute(given) ? "" : ` (a relative path starts from ${Deno.cwd()})`;
    throw new TypeError(`Cannot read config ${path}${relative}: ${(cause as Error).message}`, {
      cause,
    });
  }
  let raw: unknown;
  try {
    // Comments and trailing commas too: a VS Code mcp.json works as it is.
    raw = parseJsonc(text).value;
  } catch (cause) {
    throw new TypeError(`Cannot parse config ${path}: ${(cause as Error).message}`, { cause });
  }
  const parsed = parseConfigFile(raw, { path, env });
  const trusted = trustedPaths({
    projectRoot: PROJECT_ROOT,
    configPath: path,
    settings: parsed.settings,
    servers: parsed.servers.filter((s) => s.kind === "stdio"),
    // "deno" is the Deno running this server (see denoCommand), wherever PATH leads.
    resolveCommand: (name) => {
      const command = denoCommand(name);
      return isAbsolute(command) ? command : findOnPath(command, env("PATH") ?? "");
    },
    home: env("HOME"),
    isFile,
    runtime: options.runtimePaths ?? [],
  }).map((t) => ({ ...t, path: realPathOfWhatExists(t.path) }));
  // The launching process's verdict, which the restricted server (not granted those folders)
  // could not repeat.
  const unavailableProfiles = parseUnavailableProfiles(env(UNAVAILABLE_PROFILES));
  const profiles = await loadProfiles(
    parsed.settings.permissions_dir,
    trusted,
    unavailableProfiles,
  );
  const settings = parsed.settings;
  const cannotUseDefault = unavailableProfiles.get(settings.default_profile);
  if (cannotUseDefault) {
    throw new TypeError(
      `Cannot load config ${path}: settings.default_profile is unavailable: ${cannotUseDefault}`,
    );
  }
  if (!profiles.has(settings.default_profile)) {
    throw new TypeError(
      `Cannot load config ${path}: settings.default_profile "${settings.default_profile}" is not in ${settings.permissions_dir}`,
    );
  }
  if (settings.allowed_profiles.length === 0) {
    settings.allowed_profiles = [...profiles.keys(), ...unavailableProfiles.keys()];
  }
  for (const name of settings.allowed_profiles) {
    if (!profiles.has(name) && !unavailableProfiles.has(name)) {
      throw new TypeError(
        `Cannot load config ${path}: settings.allowed_profiles names unknown "${name}"`,
      );
    }
  }
  // Else every call that names no profile is refused, at run time, for a profile it never named.
  if (!settings.allowed_profiles.includes(settings.default_profile)) {
    throw new TypeError(
      `Cannot load config ${path}: settings.default_profile "${settings.default_profile}" is ` +
        "not in settings.allowed_profiles, so every call that names no profile would be " +
        "refused: add it there, or make default_profile one of them",
    );
  }
  // A profile callers may not use goes no further: the host is granted none of its folders,
  // nothing is built for it (a preload of it that cannot be had stopped the start), and no
  // listing names it.
  const allowed = new Set(settings.allowed_profiles);
  for (const name of [...profiles.keys()]) if (!allowed.has(name)) profiles.delete(name);
  for (const name of [...unavailableProfiles.keys()]) {
    if (!allowed.has(name)) unavailableProfiles.delete(name);
  }
  for (const [name, reason] of unavailableProfiles) {
    parsed.notes.push({ level: "warn", message: `profile "${name}" is unavailable: ${reason}` });
  }
  // The credentials in the proxy variables, and in a private package index's or Pyodide
  // mirror's URL (settings take no ${NAME}, so they are written in the file), are secrets; a
  // folder path, which the mirror may be, reads as a URL with no user. One too short to scrub
  // would leak quietly through every scrubbed surface: refuse it.
  const urlSecrets = [
    ...proxySecrets(env),
    ...urlCredentials(settings.package_index, "settings.package_index, the index's"),
    ...urlCredentials(settings.pyodide_packages, "settings.pyodide_packages, the mirror's"),
  ];
  for (const { value, origin } of urlSecrets) {
    const problem = secretProblem(value);
    if (problem) throw new TypeError(`Cannot load config ${path}: ${origin}: ${problem}`);
  }
  return {
    path,
    servers: parsed.servers,
    unavailable: parsed.unavailable,
    settings,
    profiles,
    unavailableProfiles,
    secrets: [...new Set([...parsed.secrets, ...urlSecrets.map((p) => p.value)])],
    notes: parsed.notes,
  };
}

/**
 * Top-level keys that hold server entries: `servers` (ours and VS Code's) and `mcpServers`
 * (Claude Desktop, Claude Code, Cursor), so a client's config file works here as it is.
 */
const SERVER_LISTS = ["servers", "mcpServers"] as const;

/** Top-level keys MCP clients keep beside their servers: ignored, with a debug note. */
const CLIENT_TOP_LEVEL_FIELDS = new Set(["$schema", "inputs", "globalShortcut", "preferences"]);

/** Fields of a server entry that only some MCP client acts on: ignored, with a debug note. */
const CLIENT_SERVER_FIELDS = new Set([
  "alwaysAllow",
  "autoApprove",
  "dev",
  "gallery",
  "networkTimeout",
  "oauth",
  "timeout",
  "trust",
  "version",
]);

/**
 * What a client's `type` (or Cline's `transportType`) names, as our transport: stdio, MCP's
 * Streamable HTTP, or the older HTTP+SSE transport.
 */
const TRANSPORT_TYPES: Record<string, "stdio" | "streamable-http" | "sse"> = {
  "stdio": "stdio",
  "http": "streamable-http",
  "streamable-http": "streamable-http",
  "streamableHttp": "streamable-http",
  "sse": "sse",
};

/** Validates the parsed mcp_servers.json (pure apart from `env`). */
export function parseConfigFile(
  raw: unknown,
  ctx: { path: string; env: (name: string) => string | undefined },
): {
  servers: ServerConfig[];
  unavailable: UnavailableServer[];
  settings: Settings;
  /** The secrets of the servers that start (each refused server's are not used anywhere). */
  secrets: string[];
  notes: ConfigNote[];
} {
  const at = (where: string) => `Cannot load config ${ctx.path}: ${where}`;
  if (!isRecord(raw)) throw new TypeError(at("the file must hold a JSON object"));
  const notes: ConfigNote[] = [];
  const topLevel = [...SERVER_LISTS, "settings"];
  for (const key of Object.keys(raw)) {
    if (topLevel.includes(key) || key === "$comment") continue;
    // "server" for "servers", "setings" for "settings": ignoring it would start no servers, or
    // drop the settings (allowed_profiles, the audit log) the file means to have.
    const meant = closestName(key, topLevel);
    const sameList = meant !== undefined && SERVER_LISTS.includes(meant as never)
      ? SERVER_LISTS.some((list) => list in raw)
      : meant !== undefined && meant in raw;
    if (meant !== undefined && !sameList && !CLIENT_TOP_LEVEL_FIELDS.has(key)) {
      throw new TypeError(at(`unknown top-level field "${key}"; did you mean "${meant}"?`));
    }
    notes.push(
      CLIENT_TOP_LEVEL_FIELDS.has(key)
        ? { level: "debug", message: `ignored top-level field "${key}" (used by MCP clients)` }
        : {
          level: "warn",
          message: `ignored unknown top-level field "${key}"${didYouMean(key, topLevel)}`,
        },
    );
  }
  const configDir = dirname(ctx.path);
  const secrets = new Set<string>();
  const entries = new Map<string, unknown>();
  for (const list of SERVER_LISTS) {
    const rawServers = raw[list] ?? {};
    if (!isRecord(rawServers)) throw new TypeError(at(`"${list}" must be an object`));
    for (const [name, entry] of Object.entries(rawServers)) {
      if (entries.has(name)) {
        throw new TypeError(at(`server "${name}" is in both "servers" and "mcpServers"`));
      }
      entries.set(name, entry);
    }
  }
  const servers: ServerConfig[] = [];
  const unavailable: UnavailableServer[] = [];
  for (const [name, entry] of entries) {
    const note = (level: ConfigNote["level"], message: string) =>
      notes.push({ level, message: `server "${name}": ${message}` });
    // This server's secrets, each with where it first came from. An empty value hides nothing.
    const own = new Map<string, string>();
    const addSecret = (value: string, origin: string) => {
      if (value !== "" && !own.has(value)) own.set(value, origin);
    };
    const env = (variable: string) => {
      const value = ctx.env(variable);
      if (value !== undefined) addSecret(value, `\${${variable}}`);
      return value;
    };
    let server: ServerConfig | null;
    try {
      server = parseServer(name, entry, {
        where: (field) => `field "${field}"`,
        expand: (value, field) => expandPlaceholders(value, { configDir, env }, `field "${field}"`),
        configDir,
        note,
      });
    } catch (error) {
      // A mistake in one entry (or a value this environment gives it) leaves out that server.
      if (!(error instanceof TypeError)) throw error;
      server = null;
      unavailable.push({ name, description: descriptionOf(entry), reason: error.message });
    }
    if (server === null) continue;
    if (server.kind === "http") {
      for (const [header, value] of Object.entries(server.headers)) {
        addSecret(value, `header "${header}"`);
        // As fetch normalizes it, and so quotes it in its errors (a value it refuses).
        addSecret(withoutHttpWhitespace(value), `header "${header}"`);
      }
    } else {
      for (const [key, value] of Object.entries(server.env)) {
        if (isSecretEnvName(key) && !isShortSetting(value)) addSecret(value, `env "${key}"`);
      }
    }
    // A secret too short to scrub would leak quietly through every scrubbed surface.
    const problems = [...own].flatMap(([value, origin]) => {
      const problem = secretProblem(value);
      if (!problem) return [];
      // Every value a placeholder reads is taken as a secret, `${LOG_LEVEL}` as much as a token.
      const hint = origin.startsWith("${")
        ? " (every value read through a ${NAME} placeholder is taken as a secret; one that is " +
          "not can be written into the config as it is)"
        : "";
      return [`${origin}: ${problem}${hint}`];
    });
    if (problems.length > 0) {
      unavailable.push({ name, description: server.description, reason: problems[0]! });
      continue;
    }
    servers.push(server);
    for (const value of own.keys()) secrets.add(value);
    // Secrets written into args, env values or a URL (`--api-key=…`, `postgres://u:…@db`,
    // `?access_token=…`): scrubbed when long enough to scrub safely; a guess from a name or a
    // form, so a short one is left out rather than refused.
    for (const value of literalSecretValues(server)) {
      if (!secretProblem(value)) secrets.add(value);
    }
  }
  for (const { name, reason } of unavailable) {
    notes.push({ level: "warn", message: `server "${name}" not started: ${reason}` });
  }
  let settings: Settings;
  try {
    settings = parseSettings(raw.settings, configDir, (f) => `settings.${f}`);
  } catch (error) {
    throw error instanceof TypeError ? new TypeError(at(error.message)) : error;
  }
  return {
    servers,
    unavailable,
    settings,
    secrets: [...secrets],
    notes,
  };
}

function descriptionOf(entry: unknown): string {
  return isRecord(entry) && typeof entry.description === "string" ? entry.description : "";
}

const SERVER_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

/**
 * A URL that could not be read, as an error may quote it: its scheme and host only. User info
 * may hold any character (`/`, `?`, `#` among them), so all up to the last `@` goes; the path
 * and query go too (a token may be written there); what is left says which entry is wrong.
 */
function shownBadUrl(text: string): string {
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(text)?.[0] ?? "";
  const rest = text.slice(scheme.length);
  const at = rest.lastIndexOf("@");
  const host = at === -1 ? rest : rest.slice(at + 1);
  const end = host.search(/[/?#]/);
  return scheme + (at === -1 ? "" : "…@") + (end === -1 ? host : `${host.slice(0, end)}…`);
}

const SERVER_FIELDS = [
  "command",
  "args",
  "env",
  "cwd",
  "description",
  "disabled",
  "url",
  "headers",
  "protocol",
  "type",
  "transportType",
  "enabled",
];

/** Fields without which a server would be another program, or be reached elsewhere. */
const RUN_FIELDS = ["args", "env", "cwd", "headers"];

/**
 * Whether `key` is a typo of a field that decides what runs and the entry lacks that field:
 * "arg" for "args" would start a bare `deno` (a prompt that never answers), so the server is
 * left out with the reason instead.
 */
function meantMissingRunField(key: string, entry: Record<string, unknown>): boolean {
  const meant = closestName(key, SERVER_FIELDS);
  return meant !== undefined && RUN_FIELDS.includes(meant) && !(meant in entry);
}

function parseServer(
  name: string,
  entry: unknown,
  ctx: {
    where: (field: string) => string;
    expand: (value: string, field: string) => string;
    configDir: string;
    note: (level: ConfigNote["level"], message: string) => void;
  },
): ServerConfig | null {
  if (!SERVER_NAME.test(name)) {
    throw new TypeError(
      "the name must start with a letter and hold only letters, digits, _ and - (max 64)",
    );
  }
  if (!isRecord(entry)) throw new TypeError("the entry must be an object");
  for (const key of Object.keys(entry)) {
    if (SERVER_FIELDS.includes(key)) continue;
    if (key === "includeTools" || key === "excludeTools") {
      ctx.note(
        "warn",
        `ignored field "${key}": every tool of this server may be called unless a permission ` +
          "profile's allowed_tools says otherwise (see permissions/)",
      );
    } else if (CLIENT_SERVER_FIELDS.has(key)) {
      ctx.note("debug", `ignored field "${key}" (used by some MCP clients)`);
    } else if (key === "envFile") {
      ctx.note("warn", `ignored field "envFile": put the variables the server needs in "env"`);
    } else if (meantMissingRunField(key, entry)) {
      throw new TypeError(
        `unknown field "${key}"${didYouMean(key, SERVER_FIELDS)} (the server is not started ` +
          "without the field it would need)",
      );
    } else {
      ctx.note("warn", `ignored unknown field "${key}"${didYouMean(key, SERVER_FIELDS)}`);
    }
  }
  if (entry.disabled !== undefined && typeof entry.disabled !== "boolean") {
    throw new TypeError(ctx.where("disabled") + ": must be true or false");
  }
  if (entry.enabled !== undefined && typeof entry.enabled !== "boolean") {
    throw new TypeError(ctx.where("enabled") + ": must be true or false");
  }
  if (entry.disabled === true || entry.enabled === false) return null;
  // A client's config lists code mode beside its servers: started here, it would start itself.
  if (isThisServer(entry, PROJECT_ROOT)) {
    ctx.note(
      "warn",
      "not started: this entry starts code mode itself (copied from a client's config?), which " +
        "would start itself again; remove it",
    );
    return null;
  }
  // VS Code asks the user for an `${input:...}` when it starts the server; nobody can here.
  if (JSON.stringify(entry).includes("${input:")) {
    ctx.note(
      "warn",
      "not started: it uses a VS Code ${input:...} value, which only VS Code can ask for " +
        "(put the value in an environment variable and write ${NAME} instead)",
    );
    return null;
  }
  const description = optionalString(entry.description, ctx.where("description")) ?? "";
  const protocol = optionalString(entry.protocol, ctx.where("protocol")) ?? "auto";
  if (!(UPSTREAM_PROTOCOLS as readonly string[]).includes(protocol)) {
    throw new TypeError(
      ctx.where("protocol") +
        `: must be one of ${UPSTREAM_PROTOCOLS.map((p) => `"${p}"`).join(", ")}`,
    );
  }
  const typeField = entry.type !== undefined ? "type" : "transportType";
  const type = optionalString(entry[typeField], ctx.where(typeField));
  const transport = type === undefined ? undefined : TRANSPORT_TYPES[type];
  if (type !== undefined && transport === undefined) {
    throw new TypeError(
      ctx.where(typeField) +
        `: must be one of ${Object.keys(TRANSPORT_TYPES).map((t) => `"${t}"`).join(", ")}`,
    );
  }
  const hasCommand = entry.command !== undefined;
  const hasUrl = entry.url !== undefined;
  if (hasCommand === hasUrl) {
    const either = ["command", "url"];
    const typo = Object.keys(entry).find((k) =>
      !SERVER_FIELDS.includes(k) && didYouMean(k, either)
    );
    throw new TypeError(
      ctx.where("command") + ': give exactly one of "command" (stdio) or "url" (HTTP)' +
        (typo ? ` (found "${typo}"${didYouMean(typo, either)})` : ""),
    );
  }
  if (transport !== undefined && (transport === "stdio") !== hasCommand) {
    throw new TypeError(
      ctx.where(typeField) +
        `: "${type}" ${transport === "stdio" ? 'needs "command"' : 'needs "url"'}`,
    );
  }
  if (hasUrl) {
    const url = ctx.expand(requireString(entry.url, ctx.where("url")), "url");
    try {
      const parsed = new URL(url);
      if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new Error("scheme");
    } catch {
      // The file's own text, not the expanded value: a ${VAR} in it may hold a secret.
      const why = String(entry.url).includes("${") ? " with this environment's values" : "";
      throw new TypeError(
        ctx.where("url") + `: "${shownBadUrl(String(entry.url))}" is not an http(s) URL${why}`,
      );
    }
    for (const key of ["args", "env", "cwd"]) {
      if (entry[key] !== undefined) {
        throw new TypeError(ctx.where(key) + ": only for stdio servers");
      }
    }
    return {
      kind: "http",
      name,
      protocol: protocol as UpstreamProtocol,
      transport: transport === "sse" ? "sse" : "streamable-http",
      url,
      headers: stringMap(
        entry.headers,
        ctx.where("headers"),
        (v, k) => ctx.expand(v, `headers.${k}`),
      ),
      description,
    };
  }
  if (entry.headers !== undefined) {
    throw new TypeError(ctx.where("headers") + ": only for HTTP servers");
  }
  const command = ctx.expand(requireString(entry.command, ctx.where("command")), "command");
  const args = entry.args === undefined ? [] : stringArray(entry.args, ctx.where("args"))
    .map((a, i) => ctx.expand(a, `args[${i}]`));
  const env = stringMap(entry.env, ctx.where("env"), (v, k) => ctx.expand(v, `env.${k}`));
  const cwdRaw = entry.cwd === undefined
    ? "."
    : ctx.expand(requireString(entry.cwd, ctx.where("cwd")), "cwd");
  const cwd = isAbsolute(cwdRaw) ? cwdRaw : resolve(ctx.configDir, cwdRaw);
  return {
    kind: "stdio",
    name,
    protocol: protocol as UpstreamProtocol,
    command,
    args,
    env,
    cwd,
    description,
  };
}

/**
 * The settings, or a TypeError naming every one that is wrong (each with the value it was
 * given), so that one start shows them all.
 */
function parseSettings(raw: unknown, configDir: string, where: (f: string) => string): Settings {
  const settings: Settings = {
    pool_size: 2,
    max_waiting: 64,
    default_profile: "default",
    allowed_profiles: [],
    permissions_dir: join(PROJECT_ROOT, "permissions"),
    tool_timeout_s: 60,
    approval_timeout_s: 120,
    task_after_s: 5,
    audit_log: "",
    skills_dir: defaultSkillsDir(),
    skills_read_only: false,
    observe_results: true,
    max_sessions: 4,
    max_sessions_per_connection: 0, // set below from max_sessions unless given
    session_idle_s: 600,
    wheels_dir: "",
    package_index: "",
    pyodide_packages: "",
  };
  if (raw === undefined) return withDerivedDefaults(settings);
  if (!isRecord(raw)) throw new TypeError(where("(all)") + ": must be an object");
  const problems: string[] = [];
  for (const [key, value] of Object.entries(raw)) {
    try {
      parseSetting(settings, key, value, configDir, where);
    } catch (error) {
      if (!(error instanceof TypeError)) throw error;
      const unknown = !Object.hasOwn(settings, key);
      const shown = URL_SETTINGS.has(key) && typeof value === "string"
        ? JSON.stringify(shownBadUrl(value))
        : shownValue(value);
      problems.push(unknown ? error.message : `${error.message}, not ${shown}`);
    }
  }
  if (problems.length > 0) throw new TypeError(problems.join("; "));
  return withDerivedDefaults(settings);
}

/**
 * Settings that hold a URL, whose user info may hold a private index's token: a wrong one is
 * quoted by its scheme and host only (`shownBadUrl`).
 */
const URL_SETTINGS = new Set(["package_index", "pyodide_packages"]);

/** A value as a message quotes it: JSON, in at most 40 characters. */
function shownValue(value: unknown): string {
  const json = JSON.stringify(value) ?? String(value);
  return json.length > 40 ? `${json.slice(0, 40)}...` : json;
}

/** Sets `key` of `settings` from `value`, or throws a TypeError saying what it must be. */
function parseSetting(
  settings: Settings,
  key: string,
  value: unknown,
  configDir: string,
  where: (f: string) => string,
): void {
  switch (key) {
    case "pool_size":
    case "max_waiting":
      if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > 64) {
        throw new TypeError(where(key) + ": must be a whole number from 0 to 64");
      }
      settings[key] = value as number;
      break;
    case "max_sessions":
      if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > 64) {
        throw new TypeError(where(key) + ": must be a whole number from 0 to 64");
      }
      settings.max_sessions = value as number;
      break;
    case "max_sessions_per_connection":
      if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > 64) {
        throw new TypeError(where(key) + ": must be a whole number from 1 to 64");
      }
      settings.max_sessions_per_connection = value as number;
      break;
    case "session_idle_s":
    case "tool_timeout_s":
    case "approval_timeout_s":
      if (typeof value !== "number" || !(value > 0)) {
        throw new TypeError(where(key) + ": must be a positive number");
      }
      settings[key] = value;
      break;
    case "task_after_s":
      if (typeof value !== "number" || !(value >= 0)) {
        throw new TypeError(where(key) + ": must be a number of seconds, 0 or more");
      }
      settings.task_after_s = value;
      break;
    case "package_index": {
      const url = requireString(value, where(key));
      if (!isHttpUrl(url)) throw new TypeError(where(key) + ": must be an http(s) URL");
      settings.package_index = url;
      break;
    }
    case "pyodide_packages": {
      const source = requireString(value, where(key));
      if (/^[a-z][a-z0-9+.-]*:/i.test(source) && !isHttpUrl(source)) {
        throw new TypeError(where(key) + ": must be an http(s) URL or a folder");
      }
      settings.pyodide_packages = isHttpUrl(source)
        ? (source.endsWith("/") ? source : source + "/")
        : (isAbsolute(source) ? source : resolve(configDir, source));
      break;
    }
    case "wheels_dir": {
      const dir = requireString(value, where(key));
      settings.wheels_dir = isAbsolute(dir) ? dir : resolve(configDir, dir);
      break;
    }
    case "skills_dir": {
      const dir = requireString(value, where(key));
      settings.skills_dir = isAbsolute(dir) ? dir : resolve(configDir, dir);
      break;
    }
    case "audit_log": {
      const file = requireString(value, where(key));
      settings.audit_log = isAbsolute(file) ? file : resolve(configDir, file);
      break;
    }
    case "observe_results":
    case "skills_read_only":
      if (typeof value !== "boolean") throw new TypeError(where(key) + ": must be true or false");
      settings[key] = value;
      break;
    case "default_profile":
      settings.default_profile = requireString(value, where(key));
      break;
    case "allowed_profiles":
      settings.allowed_profiles = stringArray(value, where(key));
      // Left out, every profile is offered: an empty list read as that offered them all.
      if (settings.allowed_profiles.length === 0) {
        throw new TypeError(
          where(key) + ": is empty; leave it out to offer every profile, or name those offered",
        );
      }
      break;
    case "permissions_dir": {
      const dir = requireString(value, where(key));
      settings.permissions_dir = isAbsolute(dir) ? dir : resolve(configDir, dir);
      break;
    }
    default:
      throw new TypeError(
        where(key) + `: unknown setting${didYouMean(key, Object.keys(settings))}`,
      );
  }
}

/** Fills in the defaults that depend on other settings. */
function withDerivedDefaults(settings: Settings): Settings {
  if (settings.max_sessions_per_connection === 0) {
    settings.max_sessions_per_connection = defaultSessionsPerConnection(settings.max_sessions);
  }
  return settings;
}

/**
 * Persistent sessions one connection may hold when `max_sessions_per_connection` is not set:
 * half of the server's cap (rounded up, at least 1), so that one client cannot take them all.
 */
export function defaultSessionsPerConnection(maxSessions: number): number {
  return Math.max(1, Math.ceil(maxSessions / 2));
}

/** `$XDG_DATA_HOME/mcp-code-mode/skills`, else `~/.local/share/mcp-code-mode/skills`. */
function defaultSkillsDir(): string {
  const base = readEnv("XDG_DATA_HOME") ??
    join(readEnv("HOME") ?? Deno.cwd(), ".local", "share");
  return join(base, "mcp-code-mode", "skills");
}

/** Where a bare command name is found on PATH (as the host would run it), if anywhere. */
function findOnPath(name: string, path: string): string | undefined {
  return path.split(":").filter(Boolean).map((dir) => join(dir, name)).find(isFile);
}

/**
 * Whether `path` is a file; false when it is not there, or not readable by the restricted
 * server (the launcher, which can read it, checked already).
 */
function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/**
 * The real path of `path`, or of its nearest existing parent joined with the rest (an audit log
 * that is not written yet is still protected where it will be). The restricted server may not
 * read some of these; the launcher, which can, has refused a bad profile before it starts.
 */
function realPathOfWhatExists(path: string): string {
  try {
    return Deno.realPathSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotCapable) return path;
    const parent = dirname(path);
    return parent === path ? path : join(realPathOfWhatExists(parent), basename(path));
  }
}

/**
 * `value` without HTTP whitespace (tab, line feed, carriage return, space) at its ends, as fetch
 * normalizes a header (pure). Walked, not matched: `[\t\n\r ]+$` was tried from every space of
 * a run that another character ends, quadratic.
 */
function withoutHttpWhitespace(value: string): string {
  const isSpace = (c: string | undefined) => c === "\t" || c === "\n" || c === "\r" || c === " ";
  let start = 0;
  let end = value.length;
  while (start < end && isSpace(value[start])) start++;
  while (end > start && isSpace(value[end - 1])) end--;
  return value.slice(start, end);
}

/** How the restricted relaunch tells its child which profiles it found unavailable. */
export const UNAVAILABLE_PROFILES = "CODEMODE_UNAVAILABLE_PROFILES";

/** The profiles and reasons in `UNAVAILABLE_PROFILES` (a JSON object of strings), if any. */
export function parseUnavailableProfiles(text: string | undefined): Map<string, string> {
  let value: unknown;
  try {
    value = JSON.parse(text ?? "{}");
  } catch {
    return new Map();
  }
  if (!isRecord(value)) return new Map();
  return new Map(
    Object.entries(value).filter((e): e is [string, string] => typeof e[1] === "string"),
  );
}

/**
 * Loads every `*.json` profile in `dir`; no rw folder may overlap `protectedPaths`. Given
 * `unavailable`, a profile refused only for what one of its folders holds (`FolderCheckError`)
 * goes there with the reason instead of failing the load: a script with write access to the
 * folder could otherwise stop the server's next start. A profile already there is not loaded.
 */
export async function loadProfiles(
  dir: string,
  protectedPaths: TrustedPath[],
  unavailable?: Map<string, string>,
): Promise<Map<string, Profile>> {
  const profiles = new Map<string, Profile>();
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(dir));
  } catch (cause) {
    throw new TypeError(`Cannot read permission profiles in ${dir}: ${(cause as Error).message}`, {
      cause,
    });
  }
  const files = new Map<string, unknown>();
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    if (!entry.isFile || !entry.name.endsWith(".json")) continue;
    const file = join(dir, entry.name);
    try {
      files.set(entry.name.slice(0, -".json".length), JSON.parse(await Deno.readTextFile(file)));
    } catch (cause) {
      throw new TypeError(`Cannot load profile ${file}: ${(cause as Error).message}`, { cause });
    }
  }
  // Follows `extends` chains (base first), refusing unknown bases and cycles.
  const flatten = (name: string, chain: string[]): unknown => {
    const raw = files.get(name);
    if (typeof raw !== "object" || raw === null || !("extends" in raw)) return raw;
    const base = (raw as { extends: unknown }).extends;
    if (typeof base !== "string" || !files.has(base)) {
      throw new TypeError(
        `Cannot load profile "${name}", field "extends": no profile "${String(base)}" in ${dir}`,
      );
    }
    if (chain.includes(base)) {
      throw new TypeError(
        `Cannot load profile "${name}", field "extends": a cycle (${
          [...chain, name, base].join(" -> ")
        })`,
      );
    }
    return mergeProfileFiles(flatten(base, [...chain, name]), raw as Record<string, unknown>);
  };
  for (const name of files.keys()) {
    if (unavailable?.has(name)) continue;
    const raw = flatten(name, []);
    try {
      profiles.set(
        name,
        resolveProfile(name, raw, {
          baseDir: dir,
          realPath: (p) => Deno.realPathSync(p),
          protectedPaths,
          findEscapingLink,
        }),
      );
    } catch (error) {
      if (!(error instanceof FolderCheckError) || !unavailable) throw error;
      unavailable.set(name, error.message);
    }
  }
  return profiles;
}

const MAX_SCANNED_ENTRIES = 20_000;

/**
 * Why `folder` may not be granted because of its links, or null: a symlink below it that
 * resolves outside it (or dangles), a file with a hard link outside it (its other name may lie
 * anywhere, a trusted file included), a folder that cannot be listed, or more entries than can
 * be checked (what was not checked is not granted). Checked when profiles load. A sandbox
 * cannot create symlinks, but it can hard-link two files of a read-write folder: those links are
 * all inside, found here, so the folder is granted still.
 */
export function findEscapingLink(folder: string): string | null {
  const pending = [folder];
  let seen = 0;
  /** Files with several links: how many of their names were found inside, and one of them. */
  const linked = new Map<string, { found: number; links: number; path: string }>();
  while (pending.length > 0) {
    const dir = pending.pop()!;
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(dir)];
    } catch {
      return `${dir}, a folder that cannot be listed to check it for links`;
    }
    for (const entry of entries) {
      if (++seen > MAX_SCANNED_ENTRIES) {
        return `more than ${MAX_SCANNED_ENTRIES} entries, too many to check for links (grant a smaller folder)`;
      }
      const path = join(dir, entry.name);
      if (entry.isSymlink) {
        let target: string;
        try {
          target = Deno.realPathSync(path);
        } catch {
          return linkOut(path);
        }
        if (target !== folder && !target.startsWith(folder + "/")) return linkOut(path);
      } else if (entry.isDirectory) {
        pending.push(path);
      } else if (entry.isFile) {
        const { nlink, dev, ino } = Deno.lstatSync(path);
        if ((nlink ?? 1) <= 1) continue;
        if (ino === null) return linkOut(path); // cannot tell where its other names are
        const key = `${dev}:${ino}`;
        const file = linked.get(key) ?? { found: 0, links: nlink!, path };
        file.found++;
        linked.set(key, file);
      }
    }
  }
  const outside = [...linked.values()].find((file) => file.found < file.links);
  return outside ? linkOut(outside.path) : null;
}

const linkOut = (path: string) =>
  `${path}, a link that may lead outside the folder (a symlink pointing out, or a file with several hard links)`;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function requireString(value: unknown, where: string): string {
  if (typeof value !== "string" || value === "") {
    throw new TypeError(`${where}: must be a non-empty string`);
  }
  return value;
}

function optionalString(value: unknown, where: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string") throw new TypeError(`${where}: must be a string`);
  return value;
}

function stringArray(value: unknown, where: string): string[] {
  if (!Array.isArray(value) || value.some((v) => typeof v !== "string")) {
    throw new TypeError(`${where}: must be an array of strings`);
  }
  return value as string[];
}

function stringMap(
  value: unknown,
  where: string,
  map: (value: string, key: string) => string,
): Record<string, string> {
  if (value === undefined) return {};
  if (!isRecord(value)) throw new TypeError(`${where}: must be an object of strings`);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== "string") throw new TypeError(`${where}.${k}: must be a string`);
    out[k] = map(v, k);
  }
  return out;
}
