/**
 * What an imported entry will do when the server starts it, as lines for the user (pure): the
 * command line alone hides what matters most, such as a header that sends a variable away or an
 * env key that makes a well-known program load other code.
 */
import { placeholderNames } from "../config/placeholders.ts";
import { hostOf } from "./entry_url.ts";
import { envRisk } from "./risky_env.ts";
import { shownEnvValue } from "./secrets.ts";
import type { ServerEntry } from "./translate.ts";

export interface EntryDescription {
  /** Header names, env keys, cwd, and every ${VAR} read with where. */
  details: string[];
  warnings: string[];
}

/** Characters of a description shown (the rest is elided). */
const DESCRIPTION_SHOWN = 160;

const ONLY_PLACEHOLDER = /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/;

export function describeEntry(
  entry: ServerEntry,
  options: { fromProject: boolean },
): EntryDescription {
  const details: string[] = [];
  const warnings: string[] = [];
  if (entry.description !== undefined) {
    // The model reads it in the tool index: the user should see it too (escaped when printed).
    details.push(`description: ${JSON.stringify(shorten(entry.description, DESCRIPTION_SHOWN))}`);
  }
  const headers = Object.keys(entry.headers ?? {});
  if (headers.length > 0) details.push(`headers: ${headers.join(", ")} (values not shown)`);
  const env = Object.entries(entry.env ?? {});
  if (env.length > 0) {
    const shown = env.map(([k, v]) => ONLY_PLACEHOLDER.test(v) ? `${k}=${v}` : k);
    details.push(`env: ${shown.join(", ")}`);
  }
  if (entry.cwd !== undefined) details.push(`cwd: ${entry.cwd}`);

  // Every variable read, with where: a value the server sends or hands to a program.
  const places: [string, string | undefined][] = [
    ["command", entry.command],
    ...(entry.args ?? []).map((a, i): [string, string] => [`args[${i}]`, a]),
    ["cwd", entry.cwd],
    ...env.map(([k, v]): [string, string] => [`env ${k}`, v]),
    ["url", entry.url],
    ...Object.entries(entry.headers ?? {}).map(([k, v]): [string, string] => [`header ${k}`, v]),
  ];
  const reads = new Map<string, string[]>();
  for (const [where, value] of places) {
    // The server's own parser: what is shown is what it will expand.
    for (const name of placeholderNames(value ?? "")) {
      reads.set(name, [...(reads.get(name) ?? []), where]);
    }
  }
  if (reads.size > 0) {
    details.push(
      `reads: ${[...reads].map(([name, where]) => `\${${name}} (${where.join(", ")})`).join(", ")}`,
    );
  }

  for (const [key, value] of env) {
    const risk = envRisk(key);
    // A setting is shown; a secret among them (DENO_AUTH_TOKENS, a proxy's password) is not.
    if (risk) warnings.push(`env ${key}=${JSON.stringify(shownEnvValue(key, value))} ${risk}`);
  }
  if (options.fromProject && entry.url !== undefined) {
    const host = hostOf(entry.url);
    const sent: [string, string][] = [
      ["in the url", entry.url],
      ...Object.entries(entry.headers ?? {}).map(([k, v]): [string, string] => [`header ${k}`, v]),
    ];
    for (const [where, value] of sent) {
      for (const name of placeholderNames(value)) {
        warnings.push(`sends $${name} to ${host} (${where})`);
      }
    }
  }
  return { details, warnings };
}

function shorten(text: string, length: number): string {
  const chars = [...text];
  return chars.length <= length
    ? text
    : `${chars.slice(0, length).join("")}… (${chars.length} characters)`;
}
