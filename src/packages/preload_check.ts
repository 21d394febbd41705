/**
 * Which packages can be baked into a memory snapshot. A snapshot holds WebAssembly memory only:
 * the shared libraries of a compiled package are separate WebAssembly modules that a restored
 * sandbox would not have, so only pure-Python files (wheels tagged `any`) can be preloaded.
 */
import type { ResolvedPackage } from "./package_sources.ts";
import { parseWheelName } from "./wheels.ts";

/** Why these files cannot be preloaded (naming the compiled ones), or null when they can. */
export function preloadRefusal(packages: readonly ResolvedPackage[]): string | null {
  const compiled = packages.filter((p) =>
    p.install_dir !== "site" || parseWheelName(p.file)?.platform !== "any"
  );
  if (compiled.length === 0) return null;
  return `${compiled.map((p) => `${p.name} (${p.file})`).join(", ")} ` +
    `${compiled.length === 1 ? "holds" : "hold"} compiled code, which a memory snapshot cannot ` +
    `keep; name ${compiled.length === 1 ? "it" : "them"} in "packages" at run time instead`;
}
