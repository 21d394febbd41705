/**
 * Pure decisions for the HTTP transport: whether a bind address needs a token, and whether a
 * request may pass (bearer token, Host and Origin against DNS rebinding).
 */

const LOOPBACK = new Set(["127.0.0.1", "::1", "[::1]", "localhost"]);

export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** Why the server must not start with these options, or null. */
export function checkBind(host: string, token: string | undefined): string | null {
  if (!isLoopback(host) && !token) {
    return `Cannot serve HTTP on ${host}: binding beyond loopback requires a bearer token (set CODEMODE_HTTP_TOKEN)`;
  }
  if (token !== undefined && token.length < 16) {
    return "Cannot serve HTTP: the bearer token must be at least 16 characters";
  }
  return null;
}

export interface GuardOptions {
  token: string | undefined;
  /** Host header values accepted (host:port). */
  allowedHosts: string[];
  /** Origins accepted when a request carries an Origin header. */
  allowedOrigins: string[];
}

/** The hosts and origins a server bound to `host:port` answers to. */
export function allowedFor(host: string, port: number, extraOrigins: string[] = []): {
  allowedHosts: string[];
  allowedOrigins: string[];
} {
  const names = isLoopback(host) ? ["127.0.0.1", "localhost", "[::1]"] : [host];
  const allowedHosts = names.map((n) => `${n}:${port}`);
  const allowedOrigins = [
    ...names.flatMap((n) => [`http://${n}:${port}`, `https://${n}:${port}`]),
    ...extraOrigins,
  ];
  return { allowedHosts, allowedOrigins };
}

/** An HTTP status and message when the request must be refused, else null. */
export function guardRequest(
  headers: { get(name: string): string | null },
  options: GuardOptions,
): { status: number; message: string } | null {
  const hostHeader = headers.get("host");
  if (!hostHeader || !options.allowedHosts.includes(hostHeader.toLowerCase())) {
    return { status: 403, message: `Host ${hostHeader ?? "(none)"} is not allowed` };
  }
  const origin = headers.get("origin");
  if (origin !== null && !options.allowedOrigins.includes(origin.toLowerCase())) {
    return { status: 403, message: `Origin ${origin} is not allowed` };
  }
  if (options.token !== undefined) {
    const given = /^Bearer (.+)$/.exec(headers.get("authorization") ?? "")?.[1] ?? "";
    if (!constantTimeEqual(given, options.token)) {
      return { status: 401, message: "A valid bearer token is required" };
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
