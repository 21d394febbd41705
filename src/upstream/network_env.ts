/**
 * The network settings a stdio upstream server inherits: proxy and CA variables. A server
 * started through Deno, Node, npx or uvx downloads its packages on first start, and behind a
 * company proxy or a TLS-inspecting gateway it can do so only with these. The SDK passes a child
 * just HOME, PATH and a few others, so they are added here, from the host's own environment.
 */
import type { EnvName } from "../config/environment.ts";

/** The variables passed on, in both spellings where tools read both. */
export const NETWORK_VARIABLES = [
  "HTTPS_PROXY",
  "https_proxy",
  "HTTP_PROXY",
  "http_proxy",
  "NO_PROXY",
  "no_proxy",
  "ALL_PROXY",
  "all_proxy",
  "NODE_EXTRA_CA_CERTS",
  "NODE_USE_ENV_PROXY",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "DENO_CERT",
  "DENO_TLS_CA_STORE",
  "REQUESTS_CA_BUNDLE",
] as const satisfies readonly EnvName[];

const PROXY_VARIABLES = NETWORK_VARIABLES.filter((name) => /^(https?|all)_proxy$/i.test(name));

/**
 * The secrets in the host's proxy variables, each with the variable it came from: a proxy URL
 * that holds credentials, and the credentials themselves (the password, or a user name alone,
 * which some proxies take as a token). Without a scheme (`user:pw@proxy:3128`, which Deno and
 * curl accept) it is read as http. Servers get them (they need the proxy); scripts, results and
 * logs must not. Checked like every secret by loadConfig (too short to scrub: refused).
 */
export function proxySecrets(
  read: (name: string) => string | undefined,
): { value: string; origin: string }[] {
  return PROXY_VARIABLES.flatMap((name) =>
    urlCredentials(read(name), `environment variable ${name}, the proxy's`)
  );
}

/**
 * The secrets of a URL with credentials in it (a proxy, a private package index): the URL as
 * written and its password (or its user, when it has no password), decoded; none without them.
 * `origin` says whose they are ("the proxy's"), for a refusal.
 */
export function urlCredentials(
  value: string | undefined,
  origin: string,
): { value: string; origin: string }[] {
  if (!value || !value.includes("@")) return [];
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`;
  if (!URL.canParse(withScheme)) return [];
  const { username, password } = new URL(withScheme);
  const credential = password || username;
  if (!credential) return [];
  const said = `${origin} ${password ? "password" : "user"}`;
  return [{ value, origin: said }, { value: decoded(credential), origin: said }];
}

/** A URL part with its %-escapes decoded, or as written when they do not decode. */
function decoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/**
 * The environment of a stdio server: `base` (the SDK's defaults), the network variables the
 * host has, then the entry's own `env`, which wins. An entry that sets a network variable to ""
 * leaves it out (`"HTTPS_PROXY": ""` for a server that must not use the proxy).
 */
export function serverEnvironment(
  base: Record<string, string>,
  read: (name: EnvName) => string | undefined,
  entryEnv: Record<string, string>,
): Record<string, string> {
  const env = { ...base };
  for (const name of NETWORK_VARIABLES) {
    const value = read(name);
    if (value !== undefined && value !== "") env[name] = value;
  }
  Object.assign(env, entryEnv);
  for (const name of NETWORK_VARIABLES) {
    if (entryEnv[name] === "") delete env[name];
  }
  return env;
}
