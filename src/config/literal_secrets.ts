/**
 * Secrets a server entry holds written out, where no placeholder reads them (pure): the server
 * scrubs these as well as every value `${VAR}` takes, every header value and every `env` value
 * under a secret name (config.ts). Each is a guess from a name or a form, so a value too short to
 * scrub safely is left out rather than refused (the caller's rule). The forms:
 *
 * - in args and in `env` values under any name: `--token=V`, `--api-key V`, `--password:V`,
 *   `--oauth2Bearer V`, `GITHUB_TOKEN=V` (after `-e`), `--env=GITHUB_TOKEN=V`, the same inside a
 *   command line (`sh -c "API_KEY='V' node server.js"`) or a value (`Driver=x;Pwd=V;`,
 *   `NODE_OPTIONS=--api-key=V`); a header (`Authorization: Bearer V`, `X-Api-Key: V`,
 *   `-H Authorization V`); a secret-named member of a JSON object (`{"braveApiKey": "V"}`,
 *   `--config={…}`); of a URL, its password (`postgres://app:V@db/app`, also percent-decoded), a
 *   token as its user name or a path segment (`/mcp/sk-ak-V/sse`), and query or fragment
 *   parameters under secret names (`?access_token=V`, `?tavilyApiKey=V`, `#access_token=V`);
 * - in an HTTP server's URL: the same.
 *
 * A value a name alone points at is not taken when it reads as a setting (`--sort-key
 * created_at`, `--auth-mode=readonly`): see `readsAsSetting`; nor is a name about a secret a
 * secret name (`TOKEN_URL`, `--token-file`): see `ABOUT_A_SECRET`.
 *
 * Import's detector (clients/secrets.ts) reads more forms with a broader name rule: there a
 * false positive only hides a value in what it prints, here it would scrub it from every result.
 */
import type { ServerConfig } from "./config.ts";
import { secretFlagValues } from "./secret_flags.ts";
import { withoutPathTokens, withoutUrlPasswords } from "../_util/url_secrets.ts";
import { MIN_SECRET_LENGTH } from "../policy/redaction.ts";

/**
 * An environment variable's name that says its value is a secret, however it is written
 * (`GITHUB_TOKEN`, `api_key`, `DB_PASS`, `NOTION_AUTH`, `AWS_SECRET_ACCESS_KEY`, `GH_PAT`,
 * `MYSQL_PWD`, `SSH_PASSPHRASE`, `LINKEDIN_COOKIE`; not `PWD`, the shell's working folder).
 */
export const SECRET_NAME =
  /TOKEN|SECRET|PASSW|PASSPHRASE|(^|_)PASS$|_PWD$|CREDENTIAL|(^|_)AUTH($|_)|(^|_)(API_?)?KEY$|(^|_)PAT$|(^|_)COOKIE$/i;

/**
 * Words that make a secret-sounding name a setting about the secret, not the secret
 * (`TOKEN_URL`, `--token-file`, `AUTH_MODE`, `--auth-type`, `MAX_TOKENS`, `PASSWORD_MIN_LENGTH`).
 */
const ABOUT_A_SECRET =
  /(^|_)(URL|URI|ENDPOINT|FILE|PATH|DIR|MODE|TYPE|METHOD|PROVIDER|MAX|MIN|LIMIT|COUNT|LENGTH|SIZE|TTL|TIMEOUT|EXPIRY|TOKENS|TOKENIZER|TOKENIZERS)($|_)/i;

/** A name's words joined by `_`: `-` and `.` read as `_`, camelCase split (`tavilyApiKey`). */
function nameWords(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").replace(/[-.]/g, "_");
}

/** Whether an `env` name says its value is a secret (`SECRET_NAME`, a camelCase name too). */
export function isSecretEnvName(name: string): boolean {
  const words = nameWords(name);
  return SECRET_NAME.test(words) && !ABOUT_A_SECRET.test(words);
}

/**
 * A setting's, flag's, URL parameter's, header's or JSON key's name that says secret: as an
 * env name, or a bearer credential or an `Authorization` header by name (`--oauth2Bearer`,
 * `-H Authorization V`); ODBC's `Pwd` too.
 */
function isSecretSetting(name: string): boolean {
  const words = nameWords(name);
  return isSecretEnvName(name) || /^pwd$/i.test(name) ||
    (/(^|_)(BEARER|AUTHORIZATION)($|_)/i.test(words) && !ABOUT_A_SECRET.test(words));
}

/**
 * Whether a value found by a guess from a name reads as a setting rather than a secret: a word
 * or name (`created_at`, `readonly`, `createdAt`, `ReadOnly`, `GITHUB_TOKEN`), words with a
 * few digits between separators (`github-oauth2`, `cl100k_base`), or a path of two
 * parts or more (`/home/me/.ssh/id_ed25519`, `keys\\id_rsa`) or a file name (`id_ed25519.pub`).
 * Taken for a secret, it would be scrubbed from every result.
 */
function readsAsSetting(value: string): boolean {
  const digits = value.replace(/[^0-9]/g, "").length;
  return /^[a-z][a-z_.-]*$/.test(value) || /^[A-Z][A-Z_]*$/.test(value) ||
    /^[a-z]+(?:[A-Z][a-z]+)+$/.test(value) || /^(?:[A-Z][a-z]+)+$/.test(value) ||
    (/^[a-z][a-z0-9]*(?:[_.-][a-z0-9]+)+$/.test(value) && digits <= 3) ||
    readsAsPath(value) || /^[\w-]+\.[a-z]{2,4}$/.test(value);
}

/**
 * Whether `value` is a path: absolute of two parts or more, from home, relative, or with `\`;
 * not base64 that starts with `/` (an AWS secret key: `+` or `=` in it, or parts that mix cases
 * and digits, `/k3Jd8QwZp1Lm9Xr/Tb7Vn2Hc5Gf0`).
 */
function readsAsPath(value: string): boolean {
  if (/[+=\s]/.test(value)) return false;
  const pathLike = /^(?:\/[^/]+\/[^/]|~\/|\.\.?\/|[A-Za-z]:[\\/])/.test(value) ||
    value.includes("\\");
  return pathLike &&
    value.split(/[\\/]/).every((part) =>
      !(/[a-z]/.test(part) && /[A-Z]/.test(part) && (part.match(/[0-9]/g)?.length ?? 0) >= 2)
    );
}

/**
 * Whether an `env` value under a secret name is a setting too short to be a secret, which is
 * neither scrubbed nor a reason to refuse the server: a number, `true`/`false`/`none` and the
 * like, or a word (`MAX_TOKENS=4096`, `DISABLE_AUTH=True`, `AUTH_TYPE=oauth2`).
 */
export function isShortSetting(value: string): boolean {
  return value.length < MIN_SECRET_LENGTH &&
    (/^[0-9]+$/.test(value) || /^[a-z][a-z_-]*$/.test(value) ||
      /^[A-Za-z][a-z-]*[0-9]?$/.test(value) ||
      /^(?:TRUE|FALSE)$/.test(value));
}

/** The literal secrets of `server`, each as the server's process and messages would show it. */
export function literalSecretValues(server: ServerConfig): string[] {
  const found = server.kind === "stdio"
    ? [
      ...flagValues(server.args),
      ...headerPairValues(server.args),
      ...server.args.flatMap(inTextValues),
      ...Object.values(server.env).flatMap(inTextValues),
    ]
    : inTextValues(server.url);
  return [...new Set(found)].filter((v) => v !== "");
}

/**
 * Values of secret-named flags and settings among `words` (see secretFlagValues), a setting's
 * own setting too (`--env=TOKEN=V`), quotes taken off (`API_KEY="V"`).
 */
function flagValues(words: readonly string[]): string[] {
  const nested = words.flatMap((w) => w.includes("=") ? [w, w.slice(w.indexOf("=") + 1)] : [w]);
  return secretFlagValues(nested, isSecretSetting)
    .map((f) => f.value.replace(/^["']+|["']+$/g, ""))
    .filter((v) => !readsAsSetting(v));
}

/**
 * Values of secret-named headers given as two words after a header flag: `-H Authorization V`,
 * `--headers x-api-key V` (mcp-proxy's form).
 */
function headerPairValues(words: readonly string[]): string[] {
  return words.flatMap((word, i) =>
    i >= 1 && i + 1 < words.length && /^(-H|--headers?)$/.test(words[i - 1]!) &&
      /^[A-Za-z][A-Za-z0-9-]*$/.test(word) && isSecretSetting(word)
      ? [words[i + 1]!.replace(/^(?:Bearer|Basic|Token)\s+/i, "")]
      : []
  );
}

/** Where a shell word ends: a space or an operator. */
const WORD_BREAK = /[\s;&|()]+/;
/** A URL in text (`scheme://` up to a space, a quote or a shell operator). */
const URL_IN_TEXT = /[A-Za-z][A-Za-z0-9+.-]{0,31}:\/\/[^\s'"`;|)]*/g;
/** `Authorization: Bearer V`, `X-Api-Key: V`: a header as a command line gives it. */
const HEADER = /(?:^|[\s"'=])([A-Za-z][A-Za-z0-9-]*):\s*(?:(?:Bearer|Basic|Token)\s+)?([^\s"']+)/gi;
/** `API_KEY="V W"`: a setting given a quoted value, which may hold spaces. */
const QUOTED_SETTING = /(?:^|[\s;&|(])([A-Za-z_][A-Za-z0-9_]*)=(?:"([^"]*)"|'([^']*)')/g;
/** `Password = V`: a connection string's setting (`;` between them), spaces around its `=`. */
const CONNECTION_SETTING = /^\s*([A-Za-z][A-Za-z0-9_ ]*?)\s*=\s*(.*?)\s*$/s;
/** `Bearer V`: a credential after its scheme. */
const SCHEME_VALUE = /(?:^|[\s"'=:])(?:Bearer|Basic|Token)\s+([^\s"';]+)/gi;

/**
 * Secrets in one arg or env value read as text: URLs' passwords, path tokens and secret-named
 * parameters; the secret-named settings and flags among its words; a secret-named header's
 * value or a credential after `Bearer`; and secret-named members of a JSON object it is.
 */
function inTextValues(text: string): string[] {
  const words = text.split(WORD_BREAK).filter(Boolean).map((w) => w.replace(/^["']+|["']+$/g, ""));
  return [
    ...replacedParts(text, (t, marker) => withoutUrlPasswords(t, marker, () => false))
      .flatMap((password) => [password, decodedOrSame(password)]),
    ...replacedParts(text, withoutPathTokens),
    ...[...text.matchAll(URL_IN_TEXT)].flatMap(([url]) => urlParameterValues(url)),
    ...flagValues(words),
    ...headerPairValues(words),
    ...[...text.matchAll(HEADER)].flatMap(([, name, value]) =>
      isSecretSetting(name!) ? [value!] : []
    ),
    ...[...text.matchAll(SCHEME_VALUE)].map(([, value]) => value!),
    ...[...text.matchAll(QUOTED_SETTING)].flatMap(([, name, double, single]) =>
      isSecretSetting(name!) ? [double ?? single!] : []
    ),
    ...(text.includes(";") ? text.split(";") : []).flatMap((piece) => {
      const [, name, value] = CONNECTION_SETTING.exec(piece) ?? [];
      return name && value && isSecretSetting(name.replaceAll(" ", "_")) && !readsAsSetting(value)
        ? [value]
        : [];
    }),
    ...jsonMemberValues(text),
    ...(text.includes("=") ? jsonMemberValues(text.slice(text.indexOf("=") + 1)) : []),
  ];
}

/** Values of a URL's query and fragment parameters under secret names. */
function urlParameterValues(text: string): string[] {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return [];
  }
  const parameters = [...url.searchParams, ...new URLSearchParams(url.hash.slice(1))];
  return parameters.flatMap(([name, value]) => isSecretSetting(name) && value ? [value] : []);
}

/** String members under secret names, at any depth, of the JSON object `text` is (if it is). */
function jsonMemberValues(text: string): string[] {
  if (!/^\s*\{/.test(text)) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  const found: string[] = [];
  const visit = (node: unknown, depth: number) => {
    if (depth > 20 || node === null || typeof node !== "object") return;
    for (const [key, value] of Object.entries(node)) {
      if (typeof value === "string" && isSecretSetting(key) && !readsAsSetting(value)) {
        found.push(value);
      } else visit(value, depth + 1);
    }
  };
  visit(parsed, 0);
  return found;
}

/** Stands for a hidden part while `replacedParts` looks for it (no config holds it). */
const MARKER = "\u0000codemode-hidden\u0000";

/**
 * The parts of `text` that `mask`, a pure substitution, replaced with its marker, in order.
 * When they cannot be told apart for certain (two markers side by side, a marker in `text`),
 * the whole of `text` is the part: scrubbing more is safe, less is not.
 */
export function replacedParts(
  text: string,
  mask: (text: string, marker: string) => string,
): string[] {
  const kept = mask(text, MARKER).split(MARKER);
  if (kept.length === 1) return [];
  const parts: string[] = [];
  let at = kept[0]!.length;
  for (let i = 1; i < kept.length; i++) {
    const next = kept[i]!;
    const last = i === kept.length - 1;
    if (!last && next === "") return [text];
    const end = last ? text.length - next.length : text.indexOf(next, at + 1);
    if (end <= at) return [text];
    parts.push(text.slice(at, end));
    at = end + next.length;
  }
  const rebuilt = kept[0]! + parts.map((p, i) => p + kept[i + 1]!).join("");
  return rebuilt === text ? parts : [text];
}

/** `text` percent-decoded (a URL's password as a driver reads it), or as it is if it is not. */
function decodedOrSame(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
