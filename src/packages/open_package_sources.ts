/**
 * The package sources a host's settings describe: the local wheel folder, Pyodide's package set
 * (the official distribution of the pinned Pyodide unless `settings.pyodide_packages` names a
 * mirror URL or folder), and the package index. Downloads are kept under the cache folder.
 */
import { join } from "node:path";
import { PackageSources } from "./package_sources.ts";
import { OFFICIAL_DISTRIBUTION, PyodideDistribution } from "./pyodide_distribution.ts";
import { parseLock } from "./pyodide_lock.ts";

export interface PackageSettings {
  wheels_dir: string;
  package_index: string;
  pyodide_packages: string;
}

/** Where Pyodide's package set comes from: a URL ending in "/" or a folder. */
export function pyodidePackageSource(settings: PackageSettings): string {
  return settings.pyodide_packages || OFFICIAL_DISTRIBUTION;
}

export async function openPackageSources(
  settings: PackageSettings,
  /** Pyodide's package folder (it holds the lock shipped with the pinned version). */
  pyodideDir: string,
  cacheDir: string,
): Promise<PackageSources> {
  const pinnedLock = parseLock(await Deno.readTextFile(join(pyodideDir, "pyodide-lock.json")));
  return new PackageSources({
    wheelsDir: settings.wheels_dir,
    distribution: new PyodideDistribution({
      source: pyodidePackageSource(settings),
      pinnedLock,
      cacheDir: join(cacheDir, "pyodide-packages"),
    }),
    index: settings.package_index
      ? { url: settings.package_index, cacheDir: join(cacheDir, "wheels") }
      : null,
    platform: pinnedLock.info,
  });
}
