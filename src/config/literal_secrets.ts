/**
 * Secrets a server entry holds written out, where no placeholder reads them (pure): the server
 * scrubs these as well as every value `${VAR}` takes, every header value and every `env` value
 * under a secret name (config.ts). Each is a guess from a name or a form, so a value too short to
 * scrub safely is left out rather than refused (the caller's rule). The forms:
 *
 * - in args: `--token=V`, `--api-key V`, `--password:V`, `GITHUB_TOKEN=V` (after `-e`), and the
 *   same inside an arg that is a command line (`sh -c "API_KEY=V node server.js"`);
 * - in args and in `env` values under any name: a URL's password (`postgres://app:V@db/app`),
 *   a token as its user name or a path segment (`/mcp/sk-ak-V/sse`), a secret-named setting
 *   (`Driver=x;Pwd=V;`, `NODE_OPTIONS=--api-key=V`);
 * - in an HTTP server's URL: its password, token-shaped path segments, and query or fragment
 *   parameters under secret names (`?access_token=V`).
 *
 * Import's detector (clients/secrets.ts) reads more forms with a broader name rule: there a
 * false positive only hides a value in what it prints, here it would scrub it from every result.
 */
import type { ServerConfig } from "./config.ts";
import { secretFlagValues } from "./secret_flags.ts";
import { withoutPathTokens, withoutUrlPasswords } from "../_util/url_secrets.ts";

/**
 * An environment variable's name that says its value is a secret, however it is written
 * (`GITHUB_TOKEN`, `api_key`, `DB_PASS`, `NOTION_AUTH`, `AWS_SECRET_ACCESS_KEY`, `GH_PAT`,
 * `MYSQL_PWD`, `SSH_PASSPHRASE`; not `PWD`, the shell's working folder).
 */
export const SECRET_NAME =
  /TOKEN|SECRET|PASSW|PASSPHRASE|(^|_)PASS$|_PWD$|CREDENTIAL|(^|_)AUTH($|_)|(^|_)(API_?)?KEY$|(^|_)PAT$/i;

/** A setting's or flag's name that says secret (`-` read as `_`; ODBC's `Pwd` too). */
function isSecretSetting(name: string): boolean {
  return SECRET_NAME.test(name.replaceAll("-", "_")) || /^pwd$/i.test(name);
}

/** The literal secrets of `server`, each as the server's process and messages would show it. */
export function literalSecretValues(server: ServerConfig): string[] {
  const found = server.kind === "stdio"
    ? [
      ...flagValues(server.args),
      ...server.args.flatMap(inTextValues),
      ...Object.values(server.env).flatMap(inTextValues),
    ]
    : urlValues(server.url);
  return [...new Set(found)].filter((v) => v !== "");
}

/** Values of secret-named flags and settings among `words` (see secretFlagValues). */
function flagValues(words: readonly string[]): string[] {
  return secretFlagValues(words, isSecretSetting).map((f) => f.value);
}

/**
 * Secrets in one arg or env value read as text: URLs' passwords and path tokens, and the
 * secret-named settings and flags among its words (split at spaces and `;`, quotes taken off).
 */
function inTextValues(text: string): string[] {
  const words = text.split(/[\s;]+/).filter(Boolean).map((w) => w.replace(/^["']+|["']+$/g, ""));
  return [
    ...replacedParts(text, (t, marker) => withoutUrlPasswords(t, marker, () => false)),
    ...replacedParts(text, withoutPathTokens),
    ...flagValues(words),
  ];
}

/** An HTTP server URL's secrets: its password, path tokens, and secret-named parameters. */
function urlValues(text: string): string[] {
  const url = new URL(text);
  const parameters = [...url.searchParams, ...new URLSearchParams(url.hash.slice(1))];
  return [
    ...inTextValues(text),
    ...parameters.flatMap(([name, value]) => isSecretSetting(name) && value ? [value] : []),
  ];
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
