/** Hosts and URLs of package sources. */

/** Whether a profile's `net` entries cover a URL's host (with or without its port). */
export function hostAllowed(url: URL, allowed: readonly string[]): boolean {
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  return allowed.includes(url.hostname) || allowed.includes(`${url.hostname}:${port}`);
}

/** Whether a source setting is an http(s) URL (otherwise it is a folder path). */
export function isHttpUrl(source: string): boolean {
  return /^https?:\/\//.test(source);
}
