/**
 * Where a write to a path really lands, following symlinks of the file and of its folders, and
 * whether that stays inside a folder. A project's `.vscode/mcp.json` may be a link (or sit in
 * a linked folder) that points at another of the user's files: `install --scope project` must
 * not edit that file while saying it edits the project's.
 */
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";

export type RealTarget =
  | { status: "ok"; path: string }
  /** A symlink whose target does not exist (writing would create a file there). */
  | { status: "dangling"; link: string; points: string };

export async function realTarget(path: string): Promise<RealTarget> {
  const info = await Deno.lstat(path).catch((error) => {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  });
  if (info === null) {
    const parent = dirname(path);
    if (parent === path) return { status: "ok", path };
    const real = await realTarget(parent);
    return real.status === "ok" ? { status: "ok", path: join(real.path, basename(path)) } : real;
  }
  try {
    return { status: "ok", path: await Deno.realPath(path) };
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound) || !info.isSymlink) throw error;
    return {
      status: "dangling",
      link: path,
      points: resolve(dirname(path), await Deno.readLink(path)),
    };
  }
}

/** Whether `path` is `folder` or lies inside it (both real, absolute paths). */
export function isInside(path: string, folder: string): boolean {
  const rel = relative(folder, path);
  return rel === "" || (rel !== ".." && !/^\.\.[\\/]/.test(rel) && !isAbsolute(rel));
}
