/**
 * Pyodide's `pyodide-lock.json`: the packages of one Pyodide distribution, each with its file,
 * sha256 and dependencies. Reading one is pure; where the lock and the files come from is
 * `pyodide_distribution.ts`.
 */
import { normalizeName, type PyodidePlatform } from "./wheels.ts";

export interface LockPackage {
  name: string;
  version: string;
  file_name: string;
  sha256: string;
  /** "site" (site-packages) or "dynlib" (a shared library other packages link against). */
  install_dir: "site" | "dynlib";
  depends: string[];
}

export interface PyodideLock {
  /** The platform the lock (and every file in it) is built for. */
  info: PyodidePlatform;
  /** By normalized name (PEP 503). */
  packages: Map<string, LockPackage>;
}

/** Reads a lock's text; throws a TypeError naming what is wrong with it. */
export function parseLock(text: string): PyodideLock {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new TypeError("not JSON");
  }
  const record = (value: unknown, what: string): Record<string, unknown> => {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new TypeError(`${what} is not an object`);
    }
    return value as Record<string, unknown>;
  };
  const text_ = (value: unknown, what: string): string => {
    if (typeof value !== "string") throw new TypeError(`${what} is not a string`);
    return value;
  };
  const top = record(raw, "the lock");
  const info = record(top.info, "info");
  const packages = new Map<string, LockPackage>();
  for (const [key, value] of Object.entries(record(top.packages, "packages"))) {
    const entry = record(value, `packages.${key}`);
    const fileName = text_(entry.file_name, `packages.${key}.file_name`);
    // A file name becomes part of a URL and a cache path: a plain name only.
    if (!/^[A-Za-z0-9][A-Za-z0-9._+-]*$/.test(fileName)) {
      throw new TypeError(`packages.${key}.file_name is not a plain file name`);
    }
    const sha256 = text_(entry.sha256, `packages.${key}.sha256`).toLowerCase();
    if (!/^[0-9a-f]{64}$/.test(sha256)) {
      throw new TypeError(`packages.${key}.sha256 is not a sha256`);
    }
    const depends = entry.depends ?? [];
    if (!Array.isArray(depends)) throw new TypeError(`packages.${key}.depends is not a list`);
    packages.set(normalizeName(key), {
      name: text_(entry.name ?? key, `packages.${key}.name`),
      version: text_(entry.version ?? "", `packages.${key}.version`),
      file_name: fileName,
      sha256,
      install_dir: entry.install_dir === "dynlib" ? "dynlib" : "site",
      depends: depends.map((d, i) => text_(d, `packages.${key}.depends[${i}]`)),
    });
  }
  return {
    info: {
      abi_version: text_(info.abi_version ?? "", "info.abi_version"),
      platform: text_(info.platform ?? "", "info.platform"),
      python: text_(info.python ?? "", "info.python"),
      arch: text_(info.arch ?? "", "info.arch"),
    },
    packages,
  };
}

/** Why a lock cannot serve this Pyodide (built for another platform), or null when it can. */
export function lockMismatch(lock: PyodidePlatform, runtime: PyodidePlatform): string | null {
  for (const key of ["abi_version", "platform", "python", "arch"] as const) {
    if (lock[key] !== runtime[key]) {
      return `it is for ${key} ${JSON.stringify(lock[key])}, this Pyodide has ` +
        JSON.stringify(runtime[key]);
    }
  }
  return null;
}
