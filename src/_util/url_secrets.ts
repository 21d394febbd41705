/**
 * Secrets a URL carries where no name says so (pure): a password in its user info, a token as
 * a path segment (`/mcp/sk-ak-…/sse`, `/s/<uuid>/`), a query value that is base64 of a JSON
 * config holding a secret-named member (`?config=eyJhcGlLZXkiOi…`). Import hides them when it
 * prints an entry (clients/secrets.ts), and errors show a URL without them (`shownUrl`); a false
 * positive only hides a value.
 */

/**
 * A URL in text: `scheme://` up to a space, a quote or a shell operator. A scheme is at most 32
 * characters: unbounded, it was looked for again from each `.` of a long dotted word (quadratic).
 */
const URL_IN_TEXT = /\b[A-Za-z][A-Za-z0-9+.-]{0,31}:\/\/[^\s'"`;|)]*/g;

/**
 * A token as a path segment: 20 or more URL-safe characters with a run of 16 letters and
 * digits holding both (so words joined by dashes are no token), or a UUID.
 */
export function isTokenShaped(segment: string): boolean {
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(segment)) return true;
  if (!/^[A-Za-z0-9_~.+=-]{20,}$/.test(segment)) return false;
  return (segment.match(/[A-Za-z0-9]{16,}/g) ?? []).some((run) =>
    /[0-9]/.test(run) && /[A-Za-z]/.test(run)
  );
}

/**
 * Whether `value` is base64 (standard or URL-safe) of a JSON object with a literal value under
 * a secret-looking key, at any depth: a config handed over in a URL.
 */
export function isEncodedSecretConfig(
  value: string,
  isSecretKey: (key: string) => boolean,
  isLiteral: (value: string) => boolean,
): boolean {
  const text = decodeBase64Text(decodeURIComponentSafe(value));
  if (text === null || !/^\s*\{/.test(text)) return false;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return false;
  }
  const holdsSecret = (node: unknown): boolean => {
    if (Array.isArray(node)) return node.some(holdsSecret);
    if (node === null || typeof node !== "object") return false;
    return Object.entries(node).some(([key, v]) =>
      (typeof v === "string" && isSecretKey(key) && isLiteral(v)) || holdsSecret(v)
    );
  };
  return holdsSecret(parsed);
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The UTF-8 text `value` encodes in base64, or null when it is not base64 of text. */
function decodeBase64Text(value: string): string | null {
  if (value.length < 8 || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(value)) return null;
  const standard = value.replaceAll("-", "+").replaceAll("_", "/");
  try {
    const bytes = Uint8Array.from(
      atob(standard.padEnd(Math.ceil(standard.length / 4) * 4, "=")),
      (c) => c.charCodeAt(0),
    );
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}

/**
 * `text` with the password of every `scheme://user:password@` in it replaced by `hidden` (and a
 * token-shaped user name given alone, `//ghp_…@github.com`), read
 * as a URL parser reads the user info (up to the last `@` before the path, so a password may
 * hold `@`, `?`, `#` or a quote), and, when no `@` comes before the path, up to the first `@`
 * after it (a password holding `/`, which no parser reads as one, is still written out). A
 * number right after `host:` is a port, not a password. `keep(password)` keeps a placeholder.
 */
export function withoutUrlPasswords(
  text: string,
  hidden: string,
  keep: (password: string) => boolean,
): string {
  const withoutUsers = text.replace(
    /(\/\/)([A-Za-z0-9_~.+=-]{20,})([:@])/g,
    (match, slashes: string, user: string, after: string) =>
      isTokenShaped(user) && !keep(user) ? `${slashes}${hidden}${after}` : match,
  );
  return withoutUsers.replace(/(\/\/[^/\s:]*:)(\S*)/g, (match, head: string, rest: string) => {
    // A number before the path, the query or the end is a port (`//host:8080?to=a@b`,
    // `//ollama:11434/api?from=me@x`, `//registry:4873/@acme`), unless a path segment of its own
    // comes before the `@` after a name that is no host (no dot): `//admin:2024/x@db`.
    const host = head.slice(2, -1);
    const noHost = !/[.[]/.test(host) && !/^localhost$/i.test(host);
    if (/^\d+(?:[/?#]|$)/.test(rest) && !(noHost && /^\d+\/[^/?#@]+@/.test(rest))) {
      return match;
    }
    const slash = rest.indexOf("/");
    const beforePath = slash === -1 ? rest : rest.slice(0, slash);
    let at = beforePath.lastIndexOf("@");
    if (at === -1 && slash !== -1) at = rest.indexOf("@", slash);
    if (at <= 0) return match;
    const password = rest.slice(0, at);
    return keep(password) ? match : `${head}${hidden}${rest.slice(at)}`;
  });
}

/** `text` with every token-shaped path segment of the URLs in it replaced by `hidden`. */
export function withoutPathTokens(text: string, hidden: string): string {
  return text.replace(URL_IN_TEXT, (url) => {
    const start = url.indexOf("//") + 2;
    const pathStart = url.indexOf("/", start);
    if (pathStart === -1) return url;
    const end = url.slice(pathStart).search(/[?#]/);
    const pathEnd = end === -1 ? url.length : pathStart + end;
    const path = url.slice(pathStart, pathEnd).split("/")
      .map((segment) => isTokenShaped(segment) ? hidden : segment).join("/");
    return url.slice(0, pathStart) + path + url.slice(pathEnd);
  });
}

/**
 * `url` as a message may show it: its origin and path, without user info, query or fragment, and
 * with token-shaped path segments hidden (a private index's token is written in one of these).
 */
export function shownUrl(url: URL): string {
  const path = url.pathname.split("/").map((s) => isTokenShaped(s) ? "…" : s).join("/");
  return `${url.origin}${path}${url.search || url.hash ? "?…" : ""}`;
}
