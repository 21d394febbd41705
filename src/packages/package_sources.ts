/**
 * Where requested Python packages come from: the local wheel folder first, then (only when the
 * calling profile may reach its host) a PEP 503 "simple" package index. The host downloads from
 * the index, checks the sha256 the index gives, and keeps the wheel in a cache folder, so the
 * next run does not download again.
 */
import { join } from "node:path";
import { sha256Hex } from "../_util/digest.ts";
import { writeFileAtomically } from "../_util/atomic_write.ts";
import {
  compareVersions,
  isPackageName,
  normalizeName,
  parseWheelName,
  type ResolvedWheel,
  WheelFolder,
} from "./wheels.ts";

export interface IndexOptions {
  /** Base URL of the simple index, e.g. https://index.example/simple/ */
  url: string;
  /** Folder for downloaded wheels. */
  cacheDir: string;
  fetch?: typeof fetch;
}

export class PackageSources {
  readonly #local: WheelFolder;
  readonly #index: IndexOptions | null;
  readonly #cache: WheelFolder | null;

  constructor(localDir: string, index: IndexOptions | null) {
    this.#local = new WheelFolder(localDir);
    this.#index = index;
    this.#cache = index ? new WheelFolder(index.cacheDir) : null;
  }

  /**
   * Wheels for `names`, or problems naming each package that cannot be had and why.
   * `allowedHosts` are the calling profile's `net` entries.
   */
  async resolve(
    names: string[],
    allowedHosts: readonly string[],
  ): Promise<{ wheels: ResolvedWheel[]; problems: string[] }> {
    const invalid = names.filter((name) => !isPackageName(name));
    if (invalid.length > 0) {
      return {
        wheels: [],
        problems: invalid.map((name) =>
          `${JSON.stringify(name.slice(0, 100))}: not a valid package name (PEP 508)`
        ),
      };
    }
    const local = await this.#local.resolve(names);
    if (local.missing.length === 0) return { wheels: local.wheels, problems: [] };
    const where = this.#local.dir
      ? `the local wheel folder (${this.#local.dir})`
      : "a local wheel folder (settings.wheels_dir is not set)";
    if (!this.#index || !this.#cache) {
      return {
        wheels: local.wheels,
        problems: local.missing.map((n) =>
          `${n}: not in ${where}, and no package index is configured`
        ),
      };
    }
    const index = new URL(this.#index.url);
    if (!hostAllowed(index, allowedHosts)) {
      return {
        wheels: local.wheels,
        problems: local.missing.map((n) =>
          `${n}: not in ${where}, and the profile does not allow the package index host ${index.host}`
        ),
      };
    }
    const problems: string[] = [];
    const cached = await this.#cache.resolve(local.missing);
    for (const name of cached.missing) {
      try {
        await this.#download(name);
      } catch (error) {
        problems.push(`${name}: ${(error as Error).message}`);
      }
    }
    const fetched = cached.missing.length > 0
      ? await this.#cache.resolve(cached.missing)
      : { wheels: [], missing: [] };
    for (const name of fetched.missing) {
      if (!problems.some((p) => p.startsWith(`${name}:`))) {
        problems.push(`${name}: no compatible wheel on the index`);
      }
    }
    return { wheels: [...local.wheels, ...cached.wheels, ...fetched.wheels], problems };
  }

  /** Downloads the newest compatible wheel of `name` from the index into the cache folder. */
  async #download(name: string): Promise<void> {
    const { url, cacheDir } = this.#index!;
    const doFetch = this.#index!.fetch ?? fetch;
    const page = new URL(`${normalizeName(name)}/`, url.endsWith("/") ? url : url + "/");
    const response = await doFetch(page, { signal: AbortSignal.timeout(30_000) });
    if (response.status === 404) throw new Error(`not found on the package index`);
    if (!response.ok) throw new Error(`the package index answered ${response.status}`);
    const links = [
      ...(await response.text()).matchAll(/<a\s[^>]*href="([^"]+)"[^>]*>([^<]+)<\/a>/gi),
    ]
      .map(([, href, text]) => ({
        href: new URL(href!.replaceAll("&amp;", "&"), page),
        file: text!.trim(),
      }))
      .map((link) => ({ ...link, wheel: parseWheelName(link.file) }))
      .filter((link) => link.wheel?.distribution === normalizeName(name));
    if (links.length === 0) throw new Error("no compatible wheel on the package index");
    const newest = links.sort((a, b) => compareVersions(b.wheel!.version, a.wheel!.version))[0]!;
    const expected = /sha256=([0-9a-f]{64})/.exec(newest.href.hash)?.[1];
    newest.href.hash = "";
    const download = await doFetch(newest.href, { signal: AbortSignal.timeout(120_000) });
    if (!download.ok) throw new Error(`downloading ${newest.file} answered ${download.status}`);
    const bytes = new Uint8Array(await download.arrayBuffer());
    if (expected) {
      if (await sha256Hex(bytes) !== expected) {
        throw new Error(`${newest.file} does not match the index's sha256`);
      }
    }
    await Deno.mkdir(cacheDir, { recursive: true });
    await writeFileAtomically(join(cacheDir, newest.file), bytes);
  }
}

/** Whether a profile's `net` entries cover the index URL's host (with or without its port). */
export function hostAllowed(url: URL, allowed: readonly string[]): boolean {
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  return allowed.includes(url.hostname) || allowed.includes(`${url.hostname}:${port}`);
}
