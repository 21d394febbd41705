/** Whether a profile's `net` entries cover a URL's host (with or without its port). */
export function hostAllowed(url: URL, allowed: readonly string[]): boolean {
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  return allowed.includes(url.hostname) || allowed.includes(`${url.hostname}:${port}`);
}
