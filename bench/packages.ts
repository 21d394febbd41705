/**
 * The package bench: fresh-sandbox time to first result for a script that imports a package
 * preloaded in its profile's snapshot, against the same package installed at run time, against
 * no package. The package is made here (a dependency and 40 modules of pure Python, served from
 * a local Pyodide mirror folder), so the run needs no network.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { join } from "node:path";
import { buildWheel, lockText, writeDistribution } from "../tests/_wheels.ts";

export interface PackageBenchDeps {
  /** Starts the server with this config and cache folder. */
  connect(config: string, cacheDir: string): Promise<{ client: Client; pid: number }>;
  execute(client: Client, args: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Waits until the server `pid` is quiet: its pools refilled, no boot running. */
  untilQuiet(pid: number): Promise<void>;
}

export interface PackageBenchSamples {
  none: number[];
  runtime: number[];
  preloaded: number[];
}

/** A package whose import does real work: 40 modules, each with a class and some functions. */
async function benchDistribution(dir: string): Promise<void> {
  const modules: Record<string, string> = {};
  for (let i = 0; i < 40; i++) {
    modules[`part${i}.py`] =
      `import dataclasses, json\n\n@dataclasses.dataclass\nclass Row${i}:\n` +
      `    key: str\n    value: float = 0.0\n\n    def doubled(self):\n        return self.value * 2\n\n` +
      Array.from(
        { length: 10 },
        (_, f) => `def f${f}(x):\n    return json.dumps({"x": x, "n": ${f}})\n`,
      )
        .join("\n");
  }
  const parts = Array.from({ length: 40 }, (_, i) => `from . import part${i}\n`).join("");
  const dependency = await buildWheel({ name: "benchdep", value: 1 });
  const library = await buildWheel({
    name: "benchlib",
    value: 41,
    imports: ["benchdep"],
    extraFiles: modules,
    initSuffix: parts,
  });
  await writeDistribution(
    dir,
    await lockText([{ wheel: dependency }, { wheel: library, depends: ["benchdep"] }]),
    [dependency, library],
  );
}

const IMPORT = "import benchlib\nbenchlib.part39.f1(benchlib.value())";

/** Interleaved samples of the three cases, each at an agent's pace against a refilled pool. */
export async function runPackageBench(
  deps: PackageBenchDeps,
  rounds: number,
): Promise<PackageBenchSamples> {
  const dir = await Deno.makeTempDir();
  try {
    await benchDistribution(join(dir, "pyodide"));
    await Deno.mkdir(join(dir, "permissions"));
    await Deno.writeTextFile(join(dir, "permissions", "default.json"), "{}");
    await Deno.writeTextFile(
      join(dir, "permissions", "preloaded.json"),
      JSON.stringify({ preload: ["benchlib"] }),
    );
    const config = join(dir, "mcp_servers.json");
    await Deno.writeTextFile(
      config,
      JSON.stringify({
        servers: {},
        settings: {
          pool_size: 1,
          permissions_dir: "permissions",
          pyodide_packages: "pyodide",
          allowed_profiles: ["default", "preloaded"],
        },
      }),
    );
    const { client, pid } = await deps.connect(config, join(dir, "cache"));
    const cases = {
      none: { code: "print(1)" },
      runtime: { code: IMPORT, packages: ["benchlib"] },
      preloaded: { code: IMPORT, profile: "preloaded" },
    };
    for (const args of Object.values(cases)) await deps.execute(client, args); // warm both pools
    const samples: PackageBenchSamples = { none: [], runtime: [], preloaded: [] };
    for (let i = 0; i < rounds; i++) {
      for (const [name, args] of Object.entries(cases)) {
        await deps.untilQuiet(pid);
        const t0 = performance.now();
        await deps.execute(client, args);
        samples[name as keyof PackageBenchSamples].push(performance.now() - t0);
      }
    }
    await client.close();
    return samples;
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
