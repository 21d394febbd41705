/**
 * Where requested Python packages come from, each with everything it depends on. A name is
 * looked for in the local wheel folder, then in Pyodide's own package set (its lock), then on a
 * PEP 503 "simple" index; a dependency (from the lock, or from a wheel's `Requires-Dist`) is
 * looked for the same way. Remote sources are used only when the calling profile's `net` allows
 * their host. The result lists every file dependencies first, or says for each package that
 * cannot be had why not.
 */
import { mib } from "../_util/bytes.ts";
import { raceAbort } from "../_util/race_abort.ts";
import { join } from "node:path";
import { sha256Hex } from "../_util/digest.ts";
import { writeFileAtomically } from "../_util/atomic_write.ts";
import { hostAllowed } from "./hosts.ts";
import { download, MAX_PACKAGE_BYTES, MAX_PAGE_BYTES } from "./capped_download.ts";
import type { PyodideDistribution } from "./pyodide_distribution.ts";
import type { PyodideLock } from "./pyodide_lock.ts";
import { type FolderWheel, WheelFolder } from "./wheel_folder.ts";
import {
  compareVersions,
  isPackageName,
  normalizeName,
  parseWheelName,
  type PyodidePlatform,
  wheelIncompatibility,
} from "./wheels.ts";
import { indexLinks } from "./index_links.ts";

/** A file the sandbox installs: a wheel, or a package file of Pyodide's distribution. */
export interface ResolvedPackage {
  name: string;
  file: string;
  /** Base64. */
  data: string;
  /** Where Pyodide installs it: site-packages, or the shared-library folder. */
  install_dir: "site" | "dynlib";
}

/**
 * What one execution may install: packages (dependencies included) and their files, as the
 * base64 the sandbox is sent (40 MiB, 30 MiB of files). The files travel in one message to the
 * sandbox (at most 64 MiB), and a request holds them while it waits for one; resolution stops
 * at either bound, so a package with thousands of dependencies, or large ones, is refused before
 * they are all read.
 */
export const RESOLVE_LIMITS = { packages: 100, bytes: 40 * 1024 * 1024 };

/** How long one request's package resolution may spend downloading, all files together. */
const RESOLVE_DEADLINE_MS = 180_000;

export interface IndexOptions {
  /** Base URL of the simple index, e.g. https://index.example/simple/ */
  url: string;
  /** Folder for downloaded wheels. */
  cacheDir: string;
  fetch?: typeof fetch;
}

export interface PackageSourceOptions {
  /** The local wheel folder ("" for none). */
  wheelsDir: string;
  distribution: PyodideDistribution | null;
  index: IndexOptions | null;
  /** The platform of the pinned Pyodide: which wheels can run in it. */
  platform: PyodidePlatform;
  /** How long one resolution may spend downloading (default `RESOLVE_DEADLINE_MS`). */
  deadlineMs?: number;
}

export interface Resolution {
  packages: ResolvedPackage[];
  problems: string[];
}

export class PackageSources {
  readonly #local: WheelFolder;
  readonly #distribution: PyodideDistribution | null;
  readonly #index: IndexOptions | null;
  readonly #indexCache: WheelFolder | null;
  readonly #platform: PyodidePlatform;
  readonly #deadlineMs: number;

  constructor(options: PackageSourceOptions) {
    this.#deadlineMs = options.deadlineMs ?? RESOLVE_DEADLINE_MS;
    this.#local = new WheelFolder(options.wheelsDir, options.platform);
    this.#distribution = options.distribution;
    this.#index = options.index;
    this.#indexCache = options.index
      ? new WheelFolder(options.index.cacheDir, options.platform)
      : null;
    this.#platform = options.platform;
  }

  /**
   * The files `names` need, dependencies first, or problems naming each package that cannot be
   * had and why. `allowedHosts` are the calling profile's `net` entries. `signal` (the caller
   * gave up) aborts every download of the resolution, as its deadline does.
   */
  async resolve(
    names: string[],
    allowedHosts: readonly string[],
    limits: { packages: number; bytes: number } = RESOLVE_LIMITS,
    signal?: AbortSignal,
  ): Promise<Resolution> {
    const invalid = names.filter((name) => !isPackageName(name));
    if (invalid.length > 0) {
      return {
        packages: [],
        problems: invalid.map((name) =>
          `${JSON.stringify(name.slice(0, 100))}: not a valid package name (PEP 508)`
        ),
      };
    }
    const packages: ResolvedPackage[] = [];
    // Why packages cannot be had, each reason once with the packages it stops.
    const failed = new Map<string, string[]>();
    const fail = (label: string, reason: string) =>
      failed.set(reason, [...(failed.get(reason) ?? []), label]);
    const seen = new Set<string>();
    // Every download of this resolution together: a slow source cannot hold the request, nor
    // one its caller has given up on (it held its execution's turn, whatever the client did).
    const timeout = AbortSignal.timeout(this.#deadlineMs);
    const deadline = signal ? AbortSignal.any([timeout, signal]) : timeout;
    let lock: Promise<PyodideLock | string> | null = null;
    // The mirror's lock is one download for every caller, on its own timeout: this resolution
    // stops waiting for it when its deadline passes or its caller gives up.
    const distributionLock = () =>
      lock ??= raceAbort(this.#distribution!.lock(allowedHosts), deadline, () => {
        throw deadline.reason;
      }).catch((e) => (e as Error).message);

    const bytes = () => packages.reduce((n, p) => n + p.data.length, 0);
    const tooMuch = () =>
      seen.size > limits.packages || bytes() > limits.bytes
        ? `more than one execution may install (${limits.packages} packages with their ` +
          `dependencies, ${mib(limits.bytes * 3 / 4)} of files; a profile's preload keeps ` +
          "large packages in its snapshot instead)"
        : null;
    let stopped = false; // past a bound: told once, nothing more is read
    const need = async (name: string, neededBy: string | null): Promise<void> => {
      if (stopped) return;
      const over = tooMuch();
      if (over) {
        stopped = true;
        fail(names.join(", "), over);
        return;
      }
      // A dependency's name comes from a lock or a wheel: checked like a caller's before use.
      if (!isPackageName(name)) {
        fail(
          `${JSON.stringify(name.slice(0, 100))} (needed by ${neededBy})`,
          "not a valid package name (PEP 508)",
        );
        return;
      }
      const key = normalizeName(name);
      if (seen.has(key)) return;
      seen.add(key);
      const label = neededBy ? `${key} (needed by ${neededBy})` : key;
      try {
        await look(key, label);
      } catch (error) {
        fail(label, (error as Error).message);
      }
    };
    const look = async (key: string, label: string): Promise<void> => {
      const reasons: string[] = [];

      const local = await this.#local.find(key);
      if (local.wheel) return await this.#addWheel(key, local.wheel, packages, need);
      reasons.push(
        ...local.refused,
        ...(local.refused.length > 0 ? [] : [
          this.#local.dir
            ? `not in the local wheel folder (${this.#local.dir})`
            : "no local wheel folder is set (settings.wheels_dir)",
        ]),
      );

      if (this.#distribution) {
        const found = await distributionLock();
        const entry = typeof found === "string" ? undefined : found.packages.get(key);
        if (typeof found === "string") reasons.push(`${this.#distribution.where}: ${found}`);
        else if (!entry) reasons.push(`not in ${this.#distribution.where}`);
        if (entry && !INSTALLABLE_ARCHIVE.test(entry.file_name)) {
          // Pyodide's own lock holds wheels and zip archives only; the sandbox unpacks no other.
          fail(
            label,
            `${this.#distribution.where}: ${entry.file_name} is not a wheel or a zip archive`,
          );
          return;
        }
        if (entry) {
          for (const dependency of entry.depends) await need(dependency, key);
          try {
            const data = await this.#distribution.file(entry, allowedHosts, deadline);
            packages.push({
              name: key,
              file: entry.file_name,
              data,
              install_dir: entry.install_dir,
            });
          } catch (error) {
            fail(label, `${this.#distribution.where}: ${(error as Error).message}`);
          }
          return;
        }
      }

      const indexed = await this.#fromIndex(key, allowedHosts, deadline);
      if (typeof indexed !== "string") return await this.#addWheel(key, indexed, packages, need);
      reasons.push(indexed);
      fail(label, reasons.join("; "));
    };
    for (const name of names) await need(name, null);
    const over = tooMuch();
    if (over && !stopped) fail(names.join(", "), over);
    const problems = [...failed].map(([reason, labels]) => `${labels.join(", ")}: ${reason}`);
    return { packages, problems };
  }

  async #addWheel(
    name: string,
    wheel: FolderWheel,
    packages: ResolvedPackage[],
    need: (name: string, neededBy: string) => Promise<void>,
  ): Promise<void> {
    for (const dependency of wheel.requires) await need(dependency, name);
    packages.push({ name, file: wheel.file, data: wheel.data, install_dir: "site" });
  }

  /** The wheel of `name` from the index (downloaded once, then from the cache), or why not. */
  async #fromIndex(
    name: string,
    allowedHosts: readonly string[],
    deadline: AbortSignal,
  ): Promise<FolderWheel | string> {
    if (!this.#index || !this.#indexCache) return "no package index is configured";
    // Before the cache: a wheel another profile fetched is the index's all the same.
    const index = new URL(this.#index.url);
    if (!hostAllowed(index, allowedHosts)) {
      return `the profile does not allow the package index host ${index.host}`;
    }
    const cached = await this.#indexCache.find(name);
    // Where it was downloaded from (the index may link its files to another host); a wheel
    // cached without it (by an older version) is downloaded again, which checks the host.
    const origin = cached.wheel &&
      await Deno.readTextFile(originFile(this.#index.cacheDir, cached.wheel.file))
        .then((text) => new URL(text.trim()), () => null);
    if (cached.wheel && origin) {
      if (hostAllowed(origin, allowedHosts)) return cached.wheel;
      return `the profile does not allow the host ${origin.host} the index links ${cached.wheel.file} to`;
    }
    try {
      await this.#download(name, allowedHosts, deadline);
    } catch (error) {
      return (error as Error).message;
    }
    const fetched = await this.#indexCache.find(name);
    return fetched.wheel ?? "no compatible wheel on the package index";
  }

  /** Downloads the newest compatible wheel of `name` from the index into the cache folder. */
  async #download(
    name: string,
    allowedHosts: readonly string[],
    deadline: AbortSignal,
  ): Promise<void> {
    const { url, cacheDir } = this.#index!;
    const options = { fetch: this.#index!.fetch, deadline };
    const index = new URL(url.endsWith("/") ? url : url + "/");
    // `name` passed isPackageName: the page is always a folder of the index itself.
    const page = new URL(`${normalizeName(name)}/`, index);
    let html: string;
    try {
      html = new TextDecoder().decode(
        await download(page, MAX_PAGE_BYTES, { ...options, timeoutMs: 30_000 }),
      );
    } catch (error) {
      if (/ answered 404$/.test((error as Error).message)) {
        throw new Error("not found on the package index");
      }
      throw error;
    }
    const links = indexLinks(html)
      .map(({ href, text }) => ({
        href: new URL(href.replaceAll("&amp;", "&"), page),
        wheel: parseWheelName(text.trim()),
      }))
      .filter((link) => link.wheel?.distribution === normalizeName(name));
    const refused = links.map((link) => wheelIncompatibility(link.wheel!, this.#platform));
    const runnable = links.filter((_, i) => refused[i] === null);
    if (runnable.length === 0) {
      const reasons = refused.filter((r) => r !== null);
      throw new Error(
        reasons.length > 0
          ? `no wheel on the package index runs here: ${reasons.join("; ")}`
          : "no wheel on the package index",
      );
    }
    const newest = runnable.sort((a, b) => compareVersions(b.wheel!.version, a.wheel!.version))[0]!;
    const file = newest.wheel!.file;
    const expected = /sha256=([0-9a-f]{64})/.exec(newest.href.hash)?.[1];
    if (!expected) throw new Error(`the package index gives no sha256 for ${file}`);
    if (!hostAllowed(newest.href, allowedHosts)) {
      throw new Error(
        `the profile does not allow the host ${newest.href.host} the index links ${file} to`,
      );
    }
    newest.href.hash = "";
    const bytes = await download(newest.href, MAX_PACKAGE_BYTES, options);
    if (await sha256Hex(bytes) !== expected) {
      throw new Error(`checksum mismatch: ${file} does not match the index's sha256`);
    }
    await Deno.mkdir(cacheDir, { recursive: true });
    await writeFileAtomically(originFile(cacheDir, file), newest.href.origin);
    await writeFileAtomically(join(cacheDir, file), bytes);
  }
}

/** What a Pyodide lock's file may be: a wheel, or a zip archive (its shared libraries). */
const INSTALLABLE_ARCHIVE = /\.(?:whl|zip)$/;

/** The file beside a cached index wheel that says where it was downloaded from. */
function originFile(cacheDir: string, wheel: string): string {
  return join(cacheDir, `${wheel}.origin`);
}
