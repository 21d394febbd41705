/**
 * Literal secrets in imported entries (pure): which values are secrets, how to show a file
 * without them, and how private the written file must be so a secret never moves to a file
 * more readable than the one it came from.
 *
 * The name rule is broader than the server's (src/config/config.ts, which decides what is
 * scrubbed from results): here a false positive only hides a value or tightens a file mode.
 */
import { isRecord } from "./client_configs.ts";
import { parseEntryUrl } from "./entry_url.ts";
import { secretFlagValues } from "../config/secret_flags.ts";
import { SECRET_NAME as SERVER_SECRET_NAME } from "../config/config.ts";
import {
  isEncodedSecretConfig,
  isTokenShaped,
  withoutPathTokens,
  withoutUrlPasswords as withoutPasswordsAs,
} from "../_util/url_secrets.ts";
import type { ServerEntry } from "./translate.ts";
import { replaceUpToLast } from "../_util/replace_up_to_last.ts";

/** Env names whose literal values are probably secrets. */
// "unauth" is a setting, not a secret (NODE_TLS_REJECT_UNAUTHORIZED, whose value is shown).
const SECRET_NAME = /key|token|secret|passw|credential|(?<!un)auth|pat$|cookie|session/i;
const PLACEHOLDER_ONLY = /^(\$\{[A-Za-z_][A-Za-z0-9_]*\}|Bearer \$\{[A-Za-z_][A-Za-z0-9_]*\})$/;
export const HIDDEN = "[hidden]";

/** Import's rule, which takes in the server's as well (`DB_PASS`, `--pass`). */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name) || SERVER_SECRET_NAME.test(name) ||
    // `MYSQL_PWD`, `SSH_PASSPHRASE`; not the shell's working folder, nor `PWDEBUG`.
    (/pwd$|passphrase/i.test(name) && !/^(old)?pwd$/i.test(name));
}

/**
 * An env value as it may be shown: `HIDDEN` under a secret-looking name, else with the password
 * of any URL in it hidden (a database or proxy URL under any name) and its secret-named settings
 * (`NODE_OPTIONS="--api-key=V"`, `-Djavax.net.ssl.keyStorePassword=V`).
 */
export function shownEnvValue(key: string, value: string): string {
  return isSecretName(key) && isLiteral(value)
    ? HIDDEN
    : withoutInlineSecrets(withoutUrlSecrets(value));
}

/** `text` with the password of every `user:password@` in it hidden (a database URL, a proxy). */
function withoutUrlPasswords(text: string): string {
  return withoutPasswordsAs(text, HIDDEN, (password) => !isLiteral(password));
}

/** `text` with the secrets of the URLs in it hidden: passwords and token-shaped path segments. */
function withoutUrlSecrets(text: string): string {
  return withoutPathTokens(withoutUrlPasswords(text), HIDDEN);
}

/** Whether a query value is a config in base64 that holds a literal secret. */
function isEncodedSecret(value: string): boolean {
  return isEncodedSecretConfig(value, isSecretWord, isLiteral);
}

/** Whether `value` is written out (not only read from the environment). */
function isLiteral(value: string): boolean {
  return value !== "" && !PLACEHOLDER_ONLY.test(value);
}

/** Stands for HIDDEN inside a parsed URL (which would percent-encode the brackets). */
const MARK = "codemodehiddenx";

/**
 * `text` parsed as fetch reads it, with its literal secrets hidden (a password, token-shaped path
 * segments, query parameters with secret-looking names or a config in base64 holding a secret),
 * and what was hidden; null when it is no URL.
 */
function maskUrl(text: string): { shown: string; hidden: string[] } | null {
  const parsed = parseEntryUrl(text);
  if (!parsed) return null;
  const { url, show } = parsed;
  const hidden: string[] = [];
  if (url.password !== "" && isLiteral(show(url.password))) {
    url.password = MARK;
    hidden.push("a password in a URL");
  }
  // A token as the user name alone (`https://ghp_…@github.com/`, a Sentry DSN's key).
  if (isTokenShaped(show(url.username))) {
    url.username = MARK;
    hidden.push("a token in a URL's user name");
  }
  const fragment = new URLSearchParams(url.hash.slice(1));
  if ([...fragment].some(([key, value]) => isParameterSecret("#", key) && isLiteral(show(value)))) {
    url.hash = MARK;
    hidden.push("a secret in a URL's fragment");
  }
  const segments = url.pathname.split("/");
  if (segments.some((segment) => isTokenShaped(show(segment)))) {
    url.pathname = segments.map((s) => isTokenShaped(show(s)) ? MARK : s).join("/");
    hidden.push("a token in a URL's path");
  }
  for (const [key, value] of [...url.searchParams]) {
    const written = show(value);
    if ((isSecretName(key) && isLiteral(written)) || isEncodedSecret(written)) {
      url.searchParams.set(key, MARK);
      hidden.push(`URL parameter ${key}`);
    }
  }
  return { shown: show(url.href).replaceAll(MARK, HIDDEN), hidden };
}

/**
 * `args` with literal secrets hidden: values of secret-named flags (`--token=X`,
 * `--api-key X`), passwords in URLs and secret-named URL parameters; and whether any was.
 */
function maskArgs(args: string[]): { shown: string[]; hidden: boolean } {
  let hidden = false;
  const flagged = new Map(
    secretFlagValues(args, isSecretName).filter((f) => isLiteral(f.value)).map((f) => [f.index, f]),
  );
  const shown = args.map((arg, i) => {
    const flag = flagged.get(i);
    if (flag) {
      hidden = true;
      return `${flag.prefix}${HIDDEN}`;
    }
    if (/^https?:\/\//i.test(arg)) {
      const url = maskUrl(arg);
      if (url && url.hidden.length > 0) {
        hidden = true;
        return url.shown;
      }
    }
    const unpassed = withoutInlineSecrets(withoutUrlSecrets(arg));
    if (unpassed !== arg) hidden = true;
    return unpassed;
  });
  return { shown, hidden };
}

/**
 * A word's value: in braces as ODBC quotes (`PWD={a;b}`), or a shell word: quoted parts
 * (`"…"`, `'…'`, `$'…'`, the quotes kept with it), escaped characters (`\\ `) and plain ones up
 * to a space or a shell operator, in any mix (`abc"d e"`). In braces, ODBC's doubled `}}` stands
 * for one, and a `{` may stand anywhere but after a space or `=`, where another value in braces
 * may begin: read up to any `}`, text of `a={` repeated was scanned to its end from each
 * (40,000 characters: 0.46 s); without any `{` inside, `PWD={p{ss;w0rd}` showed its `;w0rd}`.
 */
const VALUE =
  "(\\{(?:[^}\\s=]|[\\s=](?!\\{)|\\}\\})*\\}|(?:\\$?'[^']*'|\"(?:[^\"\\\\]|\\\\.)*\"|\\\\.|[^\\s;&|'\"`)\\\\])+)";
/** How many settings deep a setting's value is read for one of its own (`--env=TOKEN=V`: 1). */
const MAX_SETTING_DEPTH = 3;
/** Where a word starts: a line's start, a space, a shell operator or an opening quote. */
const WORD_START = "(^|[\\s;&|('\"`])";
/** `NAME=V`, `--name=V`, `-Dname.with.dots=V`: a setting given its value. */
const ASSIGNMENT = new RegExp(`${WORD_START}((?:-D|--?)?[A-Za-z_][A-Za-z0-9_.-]*)=${VALUE}`, "g");
/** `--api-key V`: a flag, then its value as the next word. */
const FLAG_THEN_VALUE = new RegExp(`${WORD_START}(--?[A-Za-z][A-Za-z0-9_-]*)(\\s+)${VALUE}`, "g");
/**
 * `?api_key=V`, `&token=V`, `#access_token=V`, `?auth[token]=V`: a URL's query (or fragment)
 * parameter, wherever the URL is in the text.
 */
const QUERY_PARAMETER = /([?&#])([A-Za-z_%][A-Za-z0-9_.%[\]-]*)=([^&#\s'"`]+)/g;
/**
 * `{"apiKey": "V"}`, `{ apiKey: 'V' }`, `{'api_key': 'V'}`, `{"password": 1234}`: a member of a
 * JSON, JavaScript or Python object given on a command line (a key at the start or after `{` or
 * `,`, quoted or not; a quoted value or a number). `OBJECT_LIST_MEMBER`: the same given a list
 * (`"keys": ["V"]`), read only up to the text's last `]` (see replaceUpToLast: `,a:[` repeated
 * took quadratic time).
 */
const OBJECT_KEY =
  /((?:^|[{,])\s*(?:"((?:[^"\\]|\\.)+)"|'([^']+)'|([A-Za-z_$][\w$.-]*))\s*:\s*)/.source;
const OBJECT_MEMBER = new RegExp(
  OBJECT_KEY + /('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|-?\d[\d.eE+-]*)/.source,
  "g",
);
const OBJECT_LIST_MEMBER = new RegExp(OBJECT_KEY + /(\[[^\]]*\])/.source, "g");
/**
 * `process.env.API_KEY = 'V'`, `run(token = "V")`: a quoted value given to a name in code (a
 * script passed with `-c` or `-e`). An annotation's words are separated by spaces, never begin
 * or end with one: with spaces in three places side by side (`\s*`, the annotation, `\s*`), a
 * line of spaces took cubic time (3,000 characters of a client's config: 12.7 s of `import`).
 */
const CODE_ASSIGNMENT =
  /(\b([A-Za-z_$][\w$]*)(?:\s*:\s*[\w.[\],]+(?: +[\w.[\],]+)*)?\s*=\s*[bfrBFRuU]{0,2})('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`[^`]*`)/g;
/** `os.environ['TOKEN'] = 'V'`: the same into a subscript. */
const SUBSCRIPT_ASSIGNMENT =
  /(\[\s*(['"])([A-Za-z_$][\w$]*)\2\s*\]\s*=\s*[bfrBFRuU]{0,2})('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`[^`]*`)/g;
/** `--password:V`: a flag given its value after a colon. */
const COLON_FLAG = /((?:^|[\s'"])(--?[A-Za-z][A-Za-z0-9_-]*):)(\S+)/g;
/** `Password = V;`: a connection string's setting, spaces around its `=` (else an ASSIGNMENT). */
const CONNECTION_SETTING =
  /((?:^|;)\s*([A-Za-z][A-Za-z0-9_]*(?: +[A-Za-z0-9_]+)*)(?:\s+=\s*|\s*=\s+))([^;]*)/g;
/** `\"apiKey\": \"V\"`: the same with its quotes escaped (JSON inside a quoted shell word). */
const ESCAPED_JSON_MEMBER = /(\\"([A-Za-z_][A-Za-z0-9_.-]*)\\"\s*:\s*)\\"([^"\\]*)\\"/g;
/** `Bearer V`: a credential after its scheme. */
const SCHEME_VALUE = new RegExp(`(^|[\\s;&|('"\`=:])(Bearer|Basic|Token)(\\s+)${VALUE}`, "gi");
/** `X-Api-Key: V`: a header's value, every word of it up to a closing quote or the line's end. */
const HEADER_VALUE = new RegExp(
  "(^|[\\s;&|('\"`=])([A-Za-z][A-Za-z0-9_-]*:)(\\s*)([^'\"`\\n]+)",
  "g",
);

/**
 * Whether a URL parameter's name says secret. In a fragment, only by the server's narrower rule:
 * page anchors such as `#session=overview` are no secrets, `#access_token=V` is.
 */
function isParameterSecret(mark: string, name: string): boolean {
  return mark === "#" ? SERVER_SECRET_NAME.test(name) : isSecretWord(name);
}

/** A JSON key as a parser reads it (`api\\u005fkey` is `api_key`). */
function jsonKey(written: string): string {
  try {
    return JSON.parse(`"${written}"`);
  } catch {
    return written;
  }
}

/** A query parameter's name as a server reads it (`api%5Fkey` is `api_key`). */
function decodedName(name: string): string {
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

/**
 * Whether a setting's or flag's name (`--api-key`, `-Djavax.net.ssl.keyStorePassword`, ODBC's
 * `PWD`) says secret.
 */
function isSecretWord(name: string): boolean {
  return isSecretName(name.replace(/^(-D|-+)/, "").replace(/[-.]/g, "_")) || /pwd/i.test(name);
}

/**
 * `text` (an arg, a command, an env value: possibly a whole command line for `sh -c`) with the
 * values of its secret-named settings and flags, and credentials after `Bearer` or a secret-named
 * header, hidden. Placeholders stay: they are no secret written out.
 */
export function withoutInlineSecrets(text: string, depth = 0): string {
  const hide = (value: string) => isLiteral(value.replace(/^["']|["']$/g, ""));
  const hideMember = (
    match: string,
    head: string,
    doubled?: string,
    single?: string,
    bare?: string,
    value = "",
  ) => {
    const key = doubled !== undefined ? jsonKey(doubled) : single ?? bare ?? "";
    if (!isSecretWord(key) || !hide(value)) return match;
    // A list is hidden when it holds something like a secret, a digit in a string or a number
    // (`"keys": ["id", "name"]` is a list of field names; `"password": [12345678]` is not).
    if (value.startsWith("[") && !/\d/.test(value)) return match;
    const quote = /^['"]/.test(value) ? value[0] : "";
    return `${head}${quote}${HIDDEN}${quote}`;
  };
  const withoutParameters = text.replace(
    QUERY_PARAMETER,
    (match, mark: string, name: string, value: string) =>
      (isParameterSecret(mark, decodedName(name)) && hide(value)) || isEncodedSecret(value)
        ? `${mark}${name}=${HIDDEN}`
        : match,
  );
  return replaceUpToLast(withoutParameters, "]", OBJECT_LIST_MEMBER, hideMember)
    .replace(OBJECT_MEMBER, hideMember)
    .replace(
      CODE_ASSIGNMENT,
      (match, head: string, name: string, value: string) =>
        isSecretWord(name) && hide(value) ? `${head}${value[0]}${HIDDEN}${value[0]}` : match,
    )
    .replace(
      SUBSCRIPT_ASSIGNMENT,
      (match, head: string, _quote: string, name: string, value: string) =>
        isSecretWord(name) && hide(value) ? `${head}${value[0]}${HIDDEN}${value[0]}` : match,
    )
    .replace(
      COLON_FLAG,
      (match, head: string, flag: string, value: string) =>
        // `--keyfile:C:/keys/a.pem` names a file: no secret.
        isSecretWord(flag) && hide(value) && !/[/\\]/.test(value) ? `${head}${HIDDEN}` : match,
    )
    .replace(
      CONNECTION_SETTING,
      (match, head: string, name: string, value: string) =>
        isSecretWord(name.trim().replaceAll(" ", "_")) && hide(value.trim()) &&
          value.trim() !== HIDDEN
          ? `${head}${HIDDEN}`
          : match,
    )
    .replace(
      ESCAPED_JSON_MEMBER,
      (match, head: string, key: string, value: string) =>
        isSecretWord(key) && hide(value) ? `${head}\\"${HIDDEN}\\"` : match,
    )
    .replace(
      SCHEME_VALUE,
      (match, start: string, scheme: string, gap: string, value: string) =>
        // `token = 'V'` is an assignment (CODE_ASSIGNMENT), no scheme.
        hide(value) && !value.startsWith("=") ? `${start}${scheme}${gap}${HIDDEN}` : match,
    )
    .replace(
      ASSIGNMENT,
      (_match, start: string, name: string, value: string) =>
        isSecretWord(name) && hide(value)
          ? `${start}${name}=${HIDDEN}`
          // `--env=TOKEN=V`, `--set=apiKey=V`: the value may hold a setting of its own, read
          // MAX_SETTING_DEPTH deep; past that, one holding a setting is hidden whole (one level
          // a value, `(a=(a=(a=…` took quadratic time, and overflowed the stack).
          : depth < MAX_SETTING_DEPTH
          ? `${start}${name}=${withoutInlineSecrets(value, depth + 1)}`
          : `${start}${name}=${value.includes("=") ? HIDDEN : value}`,
    )
    .replace(
      FLAG_THEN_VALUE,
      (match, start: string, flag: string, gap: string, value: string) =>
        isSecretWord(flag) && !value.startsWith("-") && hide(value)
          ? `${start}${flag}${gap}${HIDDEN}`
          : match,
    )
    .replace(
      HEADER_VALUE,
      (match, start: string, name: string, gap: string, value: string) =>
        isSecretWord(name.slice(0, -1)) && hide(value.trim()) && !value.includes(HIDDEN)
          ? `${start}${name}${gap}${HIDDEN}`
          : match,
    );
}

/** A command line with its literal secrets hidden: those of its settings and of its URLs. */
function withoutCommandSecrets(command: string): string {
  return withoutInlineSecrets(withoutUrlSecrets(command));
}

/** Where `entry` holds a literal secret ("env GITHUB_TOKEN", "header Authorization"), if anywhere. */
export function literalSecrets(entry: ServerEntry): string[] {
  const found: string[] = [];
  for (const [key, value] of Object.entries(entry.env ?? {})) {
    if (isSecretName(key) && isLiteral(value)) found.push(`env ${key}`);
    else if (withoutUrlPasswords(value) !== value) found.push(`a password in env ${key}`);
    else if (shownEnvValue(key, value) !== value) found.push(`env ${key}`);
  }
  if (entry.command !== undefined && withoutCommandSecrets(entry.command) !== entry.command) {
    found.push("command");
  }
  // Every header value is a secret to the server (it scrubs them all).
  for (const [key, value] of Object.entries(entry.headers ?? {})) {
    if (isLiteral(value)) found.push(`header ${key}`);
  }
  if (entry.url !== undefined) found.push(...(maskUrl(entry.url)?.hidden ?? []));
  if (maskArgs(entry.args ?? []).hidden) found.push("args");
  return [...new Set(found)];
}

/** A server entry (in any shape) with its literal secrets replaced by `HIDDEN`, for printing. */
export function maskEntry(entry: unknown): unknown {
  if (!isRecord(entry)) return entry;
  const masked: Record<string, unknown> = { ...entry };
  const mapValues = (value: unknown, hide: (key: string, v: string) => boolean) =>
    isRecord(value)
      ? Object.fromEntries(
        Object.entries(value).map((
          [k, v],
        ) => [k, typeof v === "string" && hide(k, v) ? HIDDEN : v]),
      )
      : value;
  if (isRecord(entry.env)) {
    masked.env = Object.fromEntries(
      Object.entries(entry.env).map((
        [k, v],
      ) => [k, typeof v === "string" ? shownEnvValue(k, v) : v]),
    );
  }
  if ("headers" in entry) masked.headers = mapValues(entry.headers, (_, v) => isLiteral(v));
  if (typeof entry.command === "string") masked.command = withoutCommandSecrets(entry.command);
  if (typeof entry.url === "string") {
    masked.url = maskUrl(entry.url)?.shown ?? withoutUrlSecrets(entry.url);
  }
  if (Array.isArray(entry.args)) {
    const shown = maskArgs(entry.args.map(String)).shown;
    masked.args = entry.args.map((a, i) => typeof a === "string" ? shown[i] : a);
  }
  return masked;
}

/** Our config with every server's literal secrets hidden (both server lists), for printing. */
export function maskConfig(file: Record<string, unknown>): Record<string, unknown> {
  const out = { ...file };
  for (const key of ["servers", "mcpServers"]) {
    const servers = file[key];
    if (isRecord(servers)) {
      out[key] = Object.fromEntries(Object.entries(servers).map(([k, v]) => [k, maskEntry(v)]));
    }
  }
  return out;
}

/**
 * The mode to write our config with: owner-only (0600, or tighter if it was) when it takes in a
 * literal secret or anything from a file others cannot read; else the file's mode as it was
 * (null: the default for a new file). `why` says what made it private.
 */
export function configMode(
  current: number | null,
  taken: { entry: ServerEntry; name: string; sourcePath: string; sourceMode: number | null }[],
): { mode: number | null; why: string[] } {
  const why: string[] = [];
  const secrets = taken.flatMap((t) => {
    const found = literalSecrets(t.entry);
    return found.length > 0 ? [`"${t.name}" (${found.join(", ")})`] : [];
  });
  if (secrets.length > 0) why.push(`literal secrets in ${secrets.join(", ")}`);
  const privateFiles = new Set(
    taken.filter((t) => t.sourceMode !== null && (t.sourceMode & 0o004) === 0)
      .map((t) => t.sourcePath),
  );
  if (privateFiles.size > 0) {
    why.push(`entries from ${[...privateFiles].join(", ")}, which others cannot read`);
  }
  if (why.length === 0) return { mode: current, why };
  const mode = (current ?? 0o600) & 0o600;
  return { mode, why: mode === current ? [] : why };
}
