/**
 * Pyodide's own package set as a package source: a lock and the files it lists, from a base URL
 * (by default the official distribution of the pinned Pyodide) or an unpacked distribution in a
 * local folder. Every file is checked against the lock's sha256 before a sandbox gets it;
 * downloads are kept in a cache folder, so the next run does not download again.
 */
import { readPlainTextFileSync } from "../_util/plain_file.ts";
import { shownUrl } from "../_util/url_secrets.ts";
import { join } from "node:path";
import { sha256Hex } from "../_util/digest.ts";
import { writeFileAtomically } from "../_util/atomic_write.ts";
import { PYODIDE_VERSION } from "../_util/version.ts";
import { lockMismatch, type LockPackage, parseLock, type PyodideLock } from "./pyodide_lock.ts";
import { encodeBase64 } from "../_util/bytes.ts";
import { hostAllowed, isHttpUrl } from "./hosts.ts";
import {
  download,
  MAX_PACKAGE_BYTES,
  MAX_PAGE_BYTES,
  PACKAGE_CACHE_BYTES,
  readPackageFile,
} from "./capped_download.ts";
import { BoundedCache } from "../_util/bounded_cache.ts";

/** Where Pyodide publishes the package set of a version (the address Pyodide itself uses). */
export const OFFICIAL_DISTRIBUTION = `https://cdn.jsdelivr.net/pyodide/v${PYODIDE_VERSION}/full/`;

export interface DistributionOptions {
  /** A base URL (http or https, ending in "/") or an absolute folder path. */
  source: string;
  /** The lock shipped with the pinned Pyodide: the official distribution's, and the platform. */
  pinnedLock: PyodideLock;
  /** Folder for downloaded files. */
  cacheDir: string;
  fetch?: typeof fetch;
}

export class PyodideDistribution {
  readonly #options: DistributionOptions;
  readonly #isUrl: boolean;
  #remoteLock: Promise<PyodideLock> | null = null;
  /** Checked files by path: their mtime and base64, kept until the file changes, within `PACKAGE_CACHE_BYTES`. */
  readonly #verified = new BoundedCache<string, { mtime: number; data: string }>(
    PACKAGE_CACHE_BYTES,
  );

  constructor(options: DistributionOptions) {
    this.#options = options;
    this.#isUrl = isHttpUrl(options.source);
  }

  /** How messages name this source. */
  get where(): string {
    // Its list is the lock shipped with Pyodide: a package not in it was not looked up online.
    if (this.#options.source === OFFICIAL_DISTRIBUTION) {
      return `Pyodide ${PYODIDE_VERSION}'s own package set (files from ${OFFICIAL_DISTRIBUTION})`;
    }
    return this.#isUrl
      ? `Pyodide's packages at ${shownUrl(new URL(this.#options.source))}`
      : `the Pyodide package folder ${this.#options.source}`;
  }

  /**
   * The lock of this source. Throws an Error saying why it cannot be had: a host the profile
   * does not allow, an unreachable source, a lock for another Pyodide.
   */
  async lock(allowedHosts: readonly string[]): Promise<PyodideLock> {
    const { source, pinnedLock } = this.#options;
    if (source === OFFICIAL_DISTRIBUTION) return pinnedLock;
    let lock: PyodideLock;
    if (this.#isUrl) {
      this.#requireHost(allowedHosts);
      this.#remoteLock ??= this.#fetchLock().catch((error) => {
        this.#remoteLock = null; // try again next time
        throw error;
      });
      lock = await this.#remoteLock;
    } else {
      let text: string;
      try {
        // As a package file is: a regular file, within a lock page's bound.
        text = readPlainTextFileSync(join(source, "pyodide-lock.json"), MAX_PAGE_BYTES);
      } catch (error) {
        throw new Error(`its pyodide-lock.json cannot be read (${(error as Error).message})`);
      }
      lock = readLock(text);
    }
    const mismatch = lockMismatch(lock.info, pinnedLock.info);
    if (mismatch) {
      throw new Error(`its pyodide-lock.json is not for Pyodide ${PYODIDE_VERSION}: ${mismatch}`);
    }
    return lock;
  }

  /** A package's file, base64, checked against the lock's sha256. Throws an Error saying why not. */
  async file(
    entry: LockPackage,
    allowedHosts: readonly string[],
    deadline?: AbortSignal,
  ): Promise<string> {
    if (!this.#isUrl) {
      const path = join(this.#options.source, entry.file_name);
      const data = await this.#readVerified(path, entry);
      if (data === null) throw new Error(`${entry.file_name} is not in the folder`);
      return data;
    }
    const path = join(this.#options.cacheDir, entry.file_name);
    const cached = await this.#readVerified(path, entry).catch(() => null);
    if (cached !== null) return cached;
    this.#requireHost(allowedHosts);
    const url = new URL(entry.file_name, this.#options.source);
    const bytes = await download(url, MAX_PACKAGE_BYTES, {
      fetch: this.#options.fetch,
      deadline,
    });
    await requireLockChecksum(bytes, entry);
    await Deno.mkdir(this.#options.cacheDir, { recursive: true });
    await writeFileAtomically(path, bytes);
    return this.#remember(path, entry, bytes, (await Deno.stat(path)).mtime?.getTime() ?? 0);
  }

  /** The file's base64 when it exists and matches the lock; null when it does not exist. */
  async #readVerified(path: string, entry: LockPackage): Promise<string | null> {
    let mtime: number;
    try {
      mtime = (await Deno.stat(path)).mtime?.getTime() ?? 0;
    } catch {
      return null;
    }
    const known = this.#verified.get(`${path}\0${entry.sha256}`);
    if (known && known.mtime === mtime) return known.data;
    const bytes = readPackageFile(path, entry.file_name);
    await requireLockChecksum(bytes, entry);
    return this.#remember(path, entry, bytes, mtime);
  }

  /** A checked file's base64, kept until the file changes. */
  #remember(path: string, entry: LockPackage, bytes: Uint8Array, mtime: number): string {
    const data = encodeBase64(bytes);
    this.#verified.set(`${path}\0${entry.sha256}`, { mtime, data }, data.length);
    return data;
  }

  #requireHost(allowedHosts: readonly string[]): void {
    const url = new URL(this.#options.source);
    if (!hostAllowed(url, allowedHosts)) {
      throw new Error(`the profile does not allow the host ${url.host} (add it to "net")`);
    }
  }

  async #fetchLock(): Promise<PyodideLock> {
    const url = new URL("pyodide-lock.json", this.#options.source);
    const bytes = await download(url, MAX_PAGE_BYTES, {
      fetch: this.#options.fetch,
      timeoutMs: 30_000,
    });
    return readLock(new TextDecoder().decode(bytes));
  }
}

/** Throws unless `bytes` have the sha256 the lock gives for `entry`. */
async function requireLockChecksum(bytes: Uint8Array, entry: LockPackage): Promise<void> {
  // Wheels and Pyodide's shared-library archives are zip files: anything else (a tar under a
  // .whl name) failed in the sandbox's unpacking, and the run ended as SANDBOX_CRASHED.
  if (!isZipArchive(bytes)) throw new Error(`${entry.file_name} is not a zip archive`);
  const actual = await sha256Hex(bytes);
  if (actual !== entry.sha256) {
    throw new Error(
      `checksum mismatch: ${entry.file_name} has sha256 ${actual}, the lock says ${entry.sha256}`,
    );
  }
}

/** Whether `bytes` start as a zip archive does (a local file header, or an empty archive's end). */
function isZipArchive(bytes: Uint8Array): boolean {
  const [p, k, a, b] = bytes;
  return p === 0x50 && k === 0x4b && ((a === 3 && b === 4) || (a === 5 && b === 6));
}

function readLock(text: string): PyodideLock {
  try {
    return parseLock(text);
  } catch (error) {
    throw new Error(`its pyodide-lock.json is not a valid lock: ${(error as Error).message}`);
  }
}
