/**
 * A folder of wheels (the local wheel folder, or the cache of wheels downloaded from an index):
 * finds the newest wheel of a name that runs in this Pyodide, with what it requires.
 */
import { join } from "node:path";
import { encodeBase64 } from "../_util/bytes.ts";
import { BoundedCache } from "../_util/bounded_cache.ts";
import { PACKAGE_CACHE_BYTES, readPackageFile } from "./capped_download.ts";
import { readWheelMetadata, requiredNames } from "./wheel_metadata.ts";
import {
  compareVersions,
  normalizeName,
  parseWheelName,
  type PyodidePlatform,
  type WheelFile,
  wheelIncompatibility,
} from "./wheels.ts";

/** A wheel found in a folder: its file name, base64 bytes, and the distributions it requires. */
export interface FolderWheel {
  file: string;
  data: string;
  requires: string[];
}

/** Finds and reads wheels from one folder, keeping what it read (the host-side cache). */
export class WheelFolder {
  readonly dir: string;
  readonly #platform: PyodidePlatform;
  readonly #cache = new BoundedCache<string, { mtime: number; wheel: FolderWheel }>(
    PACKAGE_CACHE_BYTES,
  );

  constructor(dir: string, platform: PyodidePlatform) {
    this.dir = dir;
    this.#platform = platform;
  }

  /**
   * The newest wheel of `name` that runs in this Pyodide, or, when there is none, why each
   * wheel of that name was refused (empty when the folder holds none).
   */
  async find(name: string): Promise<{ wheel: FolderWheel | null; refused: string[] }> {
    const key = normalizeName(name);
    let best: WheelFile | null = null;
    const refused: string[] = [];
    if (this.dir) {
      try {
        for await (const entry of Deno.readDir(this.dir)) {
          const wheel = entry.isFile ? parseWheelName(entry.name) : null;
          if (!wheel || wheel.distribution !== key) continue;
          const reason = wheelIncompatibility(wheel, this.#platform);
          if (reason) refused.push(reason);
          else if (!best || compareVersions(wheel.version, best.version) > 0) best = wheel;
        }
      } catch {
        // a missing folder has no wheels
      }
    }
    if (!best) return { wheel: null, refused };
    return { wheel: await this.#read(best.file), refused: [] };
  }

  async #read(file: string): Promise<FolderWheel> {
    const path = join(this.dir, file);
    const { mtime } = await Deno.stat(path);
    const stamp = mtime?.getTime() ?? 0;
    const cached = this.#cache.get(path);
    if (cached && cached.mtime === stamp) return cached.wheel;
    const bytes = readPackageFile(path, file);
    const distribution = parseWheelName(file)?.distribution;
    const metadata = await readWheelMetadata(bytes, distribution).catch((error) => {
      throw new Error(`${file}: ${(error as Error).message}`);
    });
    const wheel = {
      file,
      data: encodeBase64(bytes),
      requires: metadata ? requiredNames(metadata, this.#platform) : [],
    };
    this.#cache.set(path, { mtime: stamp, wheel }, wheel.data.length);
    return wheel;
  }
}
