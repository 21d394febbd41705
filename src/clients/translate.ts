/**
 * One client's server entry -> one entry of our `mcp_servers.json` (pure). Decides what is kept,
 * what is dropped (with a note for the user) and what cannot be imported (with the reason).
 */
import { isAbsolute, resolve } from "node:path";
import { parseConfigFile } from "../config/config.ts";
import { placeholderNames } from "../config/placeholders.ts";
import { isThisServer } from "../config/this_server.ts";
import { isRecord } from "./client_configs.ts";
import { deceptiveUrl } from "./entry_url.ts";
import { hasUnsafeCharacters } from "../_util/safe_text.ts";
import { isSecretName } from "./secrets.ts";
import { replaceUpToLast } from "../_util/replace_up_to_last.ts";

/** An entry as our config file spells it (the fields `parseConfigFile` knows). */
export interface ServerEntry {
  /** Written only for the older HTTP+SSE transport; stdio and Streamable HTTP go without it. */
  type?: "sse";
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  url?: string;
  headers?: Record<string, string>;
  description?: string;
  disabled?: boolean;
}

export type Translation =
  | { outcome: "import"; name: string; entry: ServerEntry; notes: string[] }
  | { outcome: "self" | "skip"; name: string; reason: string; notes: string[] };

export interface TranslateContext {
  /** The project folder of a project-scoped list (its servers run there). */
  projectDir?: string;
  home: string;
  /** This project's root folder, to recognise entries that start this server. */
  projectRoot: string;
  /** Whether an environment variable is set now (for notes only). */
  isSet: (name: string) => boolean;
}

/** Fields a client entry may have that mean something here; everything else is dropped. */
const STDIO_FIELDS = ["command", "args", "env", "cwd"];
const HTTP_FIELDS = ["url", "headers"];
const COMMON_FIELDS = ["type", "description", "disabled"];

const SERVER_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** VS Code's predefined variables (other than the ones rewritten): no meaning outside it. */
const EDITOR_VARIABLES = new Set([
  "workspaceFolderBasename",
  "pathSeparator",
  "cwd",
  "execPath",
  "file",
  "fileBasename",
  "fileBasenameNoExtension",
  "fileDirname",
  "fileExtname",
  "fileWorkspaceFolder",
  "relativeFile",
  "relativeFileDirname",
  "lineNumber",
  "selectedText",
  "defaultBuildTask",
]);

/**
 * The first field of an entry (or its name) holding characters that change how text prints
 * (see safe_text.ts), or null. Env values are left to the server: they are never printed.
 */
function unsafeField(clientName: string, raw: Record<string, unknown>): string | null {
  if (hasUnsafeCharacters(clientName)) return "the name";
  const strings = (value: unknown) => Array.isArray(value) ? value.map(String) : [];
  const fields: [string, unknown][] = [
    ["command", raw.command],
    ["url", raw.url],
    ["cwd", raw.cwd],
    ["description", raw.description],
    ...strings(raw.args).map((a, i): [string, unknown] => [`args[${i}]`, a]),
    ...Object.entries(isRecord(raw.headers) ? raw.headers : {}).flatMap((
      [k, v],
    ): [string, unknown][] => [[`a header name`, k], [`header ${k}`, v]]),
    ...Object.keys(isRecord(raw.env) ? raw.env : {}).map((
      k,
    ): [string, unknown] => [`an env name`, k]),
  ];
  for (const [field, value] of fields) {
    if (typeof value === "string" && hasUnsafeCharacters(value)) return field;
  }
  return null;
}

/** A valid server name for our config from a client's (which may hold dots, spaces, @ or /). */
export function ourServerName(name: string): string {
  if (SERVER_NAME.test(name)) return name;
  let valid = withoutEdgeDashes(name.replace(/[^A-Za-z0-9_-]+/g, "-"));
  if (!/^[A-Za-z]/.test(valid)) valid = withoutEdgeDashes(`mcp-${valid}`);
  return valid.slice(0, 64);
}

/** `text` without dashes at its ends; not `/^-+|-+$/`, which tried `-+$` at every dash. */
function withoutEdgeDashes(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && text[start] === "-") start++;
  while (end > start && text[end - 1] === "-") end--;
  return text.slice(start, end);
}

/** Translates one entry named `clientName` of a client's list. */
export function translateEntry(
  clientName: string,
  raw: unknown,
  ctx: TranslateContext,
): Translation {
  const name = ourServerName(clientName);
  const notes: string[] = [];
  if (name !== clientName) {
    notes.push(
      `renamed from "${clientName}" (names here are letters, digits, _ and -, starting with a letter)`,
    );
  }
  const skip = (reason: string): Translation => ({ outcome: "skip", name, reason, notes });
  if (!isRecord(raw)) return skip("the entry is not a JSON object");
  const hidden = unsafeField(clientName, raw);
  if (hidden) {
    return skip(
      `${hidden} holds control, text-direction or invisible characters, which can hide what ` +
        "it runs or where it connects when printed, or what the model is told",
    );
  }
  if (isThisServer(raw, ctx.projectRoot)) {
    return { outcome: "self", name, reason: "this server itself", notes };
  }
  const type = raw.type;
  let kind: "stdio" | "http";
  if (type === "stdio") kind = "stdio";
  else if (
    type === "http" || type === "streamable-http" || type === "streamableHttp" || type === "sse"
  ) {
    kind = "http";
  } else if (type === undefined) kind = raw.url !== undefined ? "http" : "stdio";
  else return skip(`unknown transport "type": ${JSON.stringify(type)}`);

  const entry: ServerEntry = type === "sse" ? { type: "sse" } : {};
  if (typeof raw.description === "string" && raw.description !== "") {
    entry.description = raw.description;
  }
  if (raw.disabled === true) entry.disabled = true;
  if (kind === "stdio") {
    if (typeof raw.command !== "string" || raw.command === "") {
      return skip('no "command" (a stdio server needs one)');
    }
    entry.command = raw.command;
    if (raw.args !== undefined) {
      if (!Array.isArray(raw.args) || raw.args.some((a) => !isScalar(a))) {
        return skip('"args" is not a list of strings');
      }
      if (raw.args.length > 0) entry.args = raw.args.map(String);
    }
    if (raw.env !== undefined) {
      const env = stringMap(raw.env, "env", notes);
      if (env === null) return skip('"env" is not an object of strings');
      if (Object.keys(env).length > 0) entry.env = env;
    }
    if (raw.cwd !== undefined) {
      if (typeof raw.cwd !== "string") return skip('"cwd" is not a string');
      entry.cwd = raw.cwd;
    }
  } else {
    if (typeof raw.url !== "string" || raw.url === "") return skip('no "url"');
    entry.url = raw.url;
    const deceptive = ctx.projectDir !== undefined ? deceptiveUrl(raw.url) : null;
    if (deceptive) return skip(deceptive);
    if (type === undefined && /\/sse\/?$/.test(raw.url)) {
      notes.push(
        "no transport type given and the URL ends in /sse: connected with Streamable HTTP; if " +
          'the server speaks only the older HTTP+SSE transport, add "type": "sse" to its entry',
      );
    }
    if (raw.headers !== undefined) {
      const headers = stringMap(raw.headers, "headers", notes);
      if (headers === null) return skip('"headers" is not an object of strings');
      if (Object.keys(headers).length > 0) entry.headers = headers;
    }
  }
  const known = [...COMMON_FIELDS, ...(kind === "stdio" ? STDIO_FIELDS : HTTP_FIELDS)];
  const dropped = Object.keys(raw).filter((k) => !known.includes(k));
  if (typeof raw.envFile === "string") {
    notes.push(
      `envFile ${raw.envFile} is not read here: put its variables in "env" or the environment`,
    );
  }
  if (dropped.length > 0) {
    notes.push(`dropped fields this server does not use: ${dropped.join(", ")}`);
  }

  // Placeholders: every client's forms become ours (${NAME}), or the entry cannot be imported.
  const problems: string[] = [];
  const rewrite = (value: string) => rewriteVariables(value, ctx, notes, problems);
  if (entry.command !== undefined) entry.command = rewrite(entry.command);
  if (entry.args) entry.args = entry.args.map(rewrite);
  if (entry.env) entry.env = mapValues(entry.env, rewrite);
  if (entry.cwd !== undefined) entry.cwd = rewrite(entry.cwd);
  if (entry.url !== undefined) entry.url = rewrite(entry.url);
  if (entry.headers) entry.headers = mapValues(entry.headers, rewrite);
  if (problems.length > 0) return skip([...new Set(problems)].join("; "));

  // Project servers run in their project's folder (as the clients start them); the user's own
  // in the home folder, not in mcp_servers.json's (this checkout, whose deno.json and lock
  // file a Deno-based server would otherwise pick up).
  if (kind === "stdio" && ctx.projectDir !== undefined) {
    entry.cwd = entry.cwd === undefined ? ctx.projectDir : resolve(ctx.projectDir, entry.cwd);
  } else if (kind === "stdio" && entry.cwd === undefined) {
    entry.cwd = ctx.home;
    notes.push(
      `runs in your home folder, as a client starts it: no "cwd" was given, and without one ` +
        "it would run in mcp_servers.json's folder",
    );
  } else if (entry.cwd !== undefined && !isAbsolute(entry.cwd) && !entry.cwd.startsWith("${")) {
    notes.push(`"cwd" ${entry.cwd} is relative: here it is taken from mcp_servers.json's folder`);
  }
  for (const [key, value] of Object.entries(entry.env ?? {})) {
    if (isSecretName(key) && value !== "" && !value.includes("${")) {
      notes.push(
        `env ${key} holds a literal value: better as "\${${key}}" with ${key} set in the ` +
          "environment (values from the environment are scrubbed from results and logs)",
      );
    }
  }
  if (kind === "stdio" && downloadsAtStart(entry)) {
    notes.push(
      "npx -y fetches the package each time it starts: offline, or with a registry that does " +
        "not answer, the server waits until code mode gives up on it; install the package " +
        "and name its command where the machine may be offline",
    );
  }
  // Read with the server's own parser from the rewritten entry: what the server will expand.
  const unset = entryVariables(entry).filter((v) => !ctx.isSet(v)).sort();
  if (unset.length > 0) {
    notes.push(
      `needs ${
        unset.join(", ")
      } in the environment (not set now; code mode leaves this server out ` +
        "until they are set)",
    );
  }
  const invalid = refusal(name, entry);
  if (invalid) return skip(invalid);
  return { outcome: "import", name, entry, notes };
}

/** Whether an entry runs `npx -y` (or `--yes`): a package fetched at every start. */
function downloadsAtStart(entry: ServerEntry): boolean {
  const program = (entry.command ?? "").split(/[\\/]/).pop()!.replace(/\.(cmd|exe)$/i, "");
  return program === "npx" && (entry.args ?? []).some((a) => a === "-y" || a === "--yes");
}

/**
 * Rewrites `${...}` forms: VS Code's and Cursor's `${env:NAME}`, `${input:ID}` (asked of the
 * user by VS Code: becomes a variable the user must set), `${workspaceFolder}`, `${userHome}`;
 * Claude Code's `${NAME}` and `${NAME:-default}`. Others land in `problems`.
 */
function rewriteVariables(
  value: string,
  ctx: TranslateContext,
  notes: string[],
  problems: string[],
): string {
  return replaceUpToLast(value, "}", /\$\{([^}]*)\}/g, (whole, inner: string) => {
    const env = /^env:(.+)$/.exec(inner);
    if (env && VAR_NAME.test(env[1]!)) {
      return `\${${env[1]}}`;
    }
    const input = /^input:(.+)$/.exec(inner);
    if (input) {
      const name = inputVariable(input[1]!);
      notes.push(
        `${whole} is asked of the user by VS Code, which cannot happen here: it became \${${name}}`,
      );
      return `\${${name}}`;
    }
    if (inner === "workspaceFolder" || inner === "workspaceRoot") {
      if (ctx.projectDir !== undefined) return ctx.projectDir;
      problems.push(`uses ${whole}, which has no value outside an open workspace`);
      return whole;
    }
    if (inner === "userHome") return ctx.home;
    if (VAR_NAME.test(inner) && !EDITOR_VARIABLES.has(inner)) return whole;
    const fallback = /^([A-Za-z_][A-Za-z0-9_]*):-(.*)$/.exec(inner);
    if (fallback) {
      const [, variable, otherwise] = fallback as unknown as [string, string, string];
      if (/[${}]/.test(otherwise)) {
        // The rewrite is one pass: "${A:-$}{env:B}" would become "${env:B}", a read of B that
        // nothing here showed. The default is not quoted: it may be a secret written out.
        problems.push(`uses ${placeholderName(`${variable}:-`)}, whose default holds $, { or }`);
        return whole;
      }
      // Kept as written: the server reads the variable when set, else the default, as Claude
      // Code does (a default baked in now would ignore the variable set later).
      return whole;
    }
    problems.push(`uses ${placeholderName(inner)}, which has no equivalent here`);
    return whole;
  });
}

/** Every variable `entry` reads through placeholders, as the server's parser finds them. */
export function entryVariables(entry: ServerEntry): string[] {
  const strings = [
    entry.command,
    ...(entry.args ?? []),
    entry.cwd,
    ...Object.values(entry.env ?? {}),
    entry.url,
    ...Object.values(entry.headers ?? {}),
  ];
  return [...new Set(strings.flatMap((s) => placeholderNames(s ?? "")))];
}

/** The environment variable standing for a VS Code input id ("api-key" -> API_KEY). */
export function inputVariable(id: string): string {
  const name = id.toUpperCase().replace(/[^A-Z0-9_]+/g, "_");
  return /^[A-Z_]/.test(name) ? name : `INPUT_${name}`;
}

/** Why our config would refuse `entry`, or null: checked by the config's own parser. */
function refusal(name: string, entry: ServerEntry): string | null {
  // Placeholders are checked for form only: any variable stands for a long, URL-shaped value.
  const placeholder = () => "https://placeholder.invalid";
  try {
    const parsed = parseConfigFile({ servers: { [name]: entry } }, {
      path: "mcp_servers.json",
      env: placeholder,
    });
    // An entry the server would leave out (a mistake, a literal secret too short to scrub).
    if (parsed.unavailable.length > 0) return parsed.unavailable[0]!.reason;
    return null;
  } catch (error) {
    return (error as Error).message.replace(/^Cannot load config mcp_servers\.json: /, "");
  }
}

function isScalar(value: unknown): boolean {
  return typeof value === "string" || typeof value === "number" || typeof value === "boolean";
}

/** An object of strings (numbers and booleans written as strings; null values dropped). */
function stringMap(
  value: unknown,
  field: string,
  notes: string[],
): Record<string, string> | null {
  if (!isRecord(value)) return null;
  const out: Record<string, string> = {};
  for (const [key, v] of Object.entries(value)) {
    if (v === null) {
      notes.push(`${field}.${key} is null (unset in the client): left out`);
      continue;
    }
    if (!isScalar(v)) return null;
    out[key] = String(v);
  }
  return out;
}

function mapValues(
  map: Record<string, string>,
  f: (value: string) => string,
): Record<string, string> {
  return Object.fromEntries(Object.entries(map).map(([k, v]) => [k, f(v)]));
}

/**
 * A `${…}` form as a reason may quote it: its name, and `…` for whatever follows (a default, which
 * may be a secret written out: `${API_KEY-sk-…}`, `${env:TOKEN:=…}`).
 */
function placeholderName(inner: string): string {
  const name = /^(?:env:)?[A-Za-z_][A-Za-z0-9_]*/.exec(inner)?.[0] ?? "";
  return name === inner ? `\${${inner}}` : `\${${name}…}`;
}
