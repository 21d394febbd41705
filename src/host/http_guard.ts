/**
 * Pure decisions for the HTTP transport: whether a bind address needs a token (and host
 * names), and whether a request may pass (bearer token, Host and Origin against DNS rebinding).
 */

const LOOPBACK_NAMES = ["127.0.0.1", "localhost", "[::1]"];

/**
 * `host` as a URL spells it, whatever spelling was given: IPv4 in dotted decimal (`0` and `127.1`
 * too), IPv6 in brackets and compressed (`::0` is `[::]`), names in lower case; as given when it
 * is none of these.
 */
function canonicalHost(host: string): string {
  try {
    return new URL(`http://${bracketed(host)}/`).hostname;
  } catch {
    return host;
  }
}

export function isLoopback(host: string): boolean {
  const canonical = canonicalHost(host);
  // An address, not a name that starts like one ("127.evil.example" may resolve anywhere).
  return canonical === "localhost" || canonical === "[::1]" ||
    /^127\.\d+\.\d+\.\d+$/.test(canonical);
}

/** An address that listens on every interface, so it has no name of its own. */
export function isWildcard(host: string): boolean {
  const canonical = canonicalHost(host);
  // `::ffff:0.0.0.0` listens on every IPv4 interface.
  return canonical === "0.0.0.0" || canonical === "[::]" || canonical === "[::ffff:0:0]";
}

/** Why the server must not start with these options (every reason at once), or null. */
export function checkBind(
  host: string,
  token: string | undefined,
  allowedHosts: string[] = [],
): string | null {
  const problems: string[] = [];
  if (!isLoopback(host) && !token) {
    problems.push("binding beyond loopback requires a bearer token (set CODEMODE_HTTP_TOKEN)");
  }
  if (token !== undefined && token.length < 16) {
    problems.push("the bearer token must be at least 16 characters");
  }
  if (isWildcard(host) && allowedHosts.length === 0) {
    problems.push(
      "a wildcard address has no name for the Host check; name the host names clients use with --allow-host NAME (repeatable)",
    );
  }
  return problems.length === 0 ? null : `Cannot serve HTTP on ${host}: ${problems.join("; and ")}`;
}

/** A host name, IPv4 address or [IPv6] address, then an optional port (group 6). */
const HOST_AND_PORT =
  /^(\[[0-9a-f:.]+\]|[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*)(:(\d{1,5}))?$/;

/** A `--allow-host` value, lowercased: a host name or IP address, optionally with `:PORT`. */
export function parseAllowedHost(value: string): string {
  const name = value.toLowerCase();
  const port = HOST_AND_PORT.exec(name)?.[6];
  if (!HOST_AND_PORT.test(name) || (port !== undefined && Number(port) > 65535)) {
    throw new TypeError(
      `Cannot allow host "${value}": give a host name or IP address, optionally with :PORT (e.g. mcp.example.com)`,
    );
  }
  return name;
}

export interface GuardOptions {
  token: string | undefined;
  /** Host header values accepted (host:port). */
  allowedHosts: string[];
  /** Origins accepted when a request carries an Origin header. */
  allowedOrigins: string[];
}

/**
 * The Host header values and origins a server bound to `host:port` answers to: its own address
 * (with the loopback names on a loopback bind; those alone on a wildcard bind), and each of
 * `extra.hosts` (from --allow-host): a name with a port as given, a name without one as
 * `name:port` and as plain `name` (a reverse proxy that keeps the client's Host on the default
 * port).
 */
export function allowedFor(
  host: string,
  port: number,
  extra: { hosts?: string[]; origins?: string[] } = {},
): { allowedHosts: string[]; allowedOrigins: string[] } {
  const own = isWildcard(host)
    ? LOOPBACK_NAMES
    : isLoopback(host)
    ? [...LOOPBACK_NAMES, bracketed(host), canonicalHost(host)]
    : [bracketed(host), canonicalHost(host)];
  const authorities = [
    ...own.map((n) => `${n}:${port}`),
    ...(extra.hosts ?? []).flatMap((h) =>
      HOST_AND_PORT.exec(h)?.[6] !== undefined ? [h] : [`${h}:${port}`, h]
    ),
  ];
  const allowedHosts = [...new Set(authorities)];
  const allowedOrigins = [
    ...allowedHosts.flatMap((a) => [`http://${a}`, `https://${a}`]),
    ...(extra.origins ?? []),
  ];
  return { allowedHosts, allowedOrigins };
}

/** An IPv6 address as it appears in a Host header. */
function bracketed(host: string): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}

/** An HTTP status and message when the request must be refused, else null. */
export function guardRequest(
  headers: { get(name: string): string | null },
  options: GuardOptions,
): { status: number; message: string } | null {
  const hostHeader = headers.get("host");
  if (!hostHeader || !options.allowedHosts.includes(hostHeader.toLowerCase())) {
    return {
      status: 403,
      message: `Host ${hostHeader ?? "(none)"} is not allowed (the server answers the address ` +
        "it listens on; start it with --allow-host NAME for another)",
    };
  }
  const origin = headers.get("origin");
  if (origin !== null && !options.allowedOrigins.includes(origin.toLowerCase())) {
    return {
      status: 403,
      message: `Origin ${origin} is not allowed (start the server with --allow-origin ORIGIN to ` +
        "let a web page at it call)",
    };
  }
  if (options.token !== undefined) {
    // The scheme's name is case-insensitive (RFC 9110, 11.1).
    const given = /^Bearer (.+)$/i.exec(headers.get("authorization") ?? "")?.[1] ?? "";
    if (!constantTimeEqual(given, options.token)) {
      return {
        status: 401,
        message: "A valid bearer token is required (an Authorization: Bearer <token> header)",
      };
    }
  }
  return null;
}

function constantTimeEqual(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < Math.max(x.length, y.length); i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}
