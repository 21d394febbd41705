/**
 * The shared-interpreter peer, pydantic's mcp-run-python, run from a local checkout for
 * side-by-side figures: `CODEMODE_BENCH_PEER=/path/to/mcp-run-python deno task bench`.
 *
 * The checkout's Deno server (`mcp_run_python/deno/src`) runs as it is, over stdio, with three
 * things put in place so it runs offline on the Pyodide we pin:
 * - its import map points at the SDK, zod and Pyodide this project locks (JSR, which it names
 *   for argument parsing, is replaced by a few lines on `node:util`);
 * - `prepareEnvCode.ts`, which its build makes from `build/prepare_env.py`, is made the same way;
 * - `micropip` and `pydantic`, which it loads from Pyodide's package CDN (not reachable here),
 *   are stand-ins: `micropip.install` does nothing (the bench installs no packages) and
 *   `pydantic_core.to_json` is `json.dumps` (the bench's scripts return no value to encode).
 * The Python it runs, and the interpreter it keeps between calls, are the peer's own.
 */
import { join } from "node:path";

export const PEER_ENV = "CODEMODE_BENCH_PEER";

export interface PeerCommand {
  command: string;
  args: string[];
  cwd: string;
  /** Removes the prepared folder. */
  cleanup(): Promise<void>;
}

/** The peer's checkout, or why it cannot be used. */
export function locatePeer(): { dir: string } | { missing: string } {
  const dir = Deno.env.get(PEER_ENV);
  if (!dir) return { missing: `${PEER_ENV} is not set` };
  try {
    Deno.statSync(join(dir, "mcp_run_python/deno/src/main.ts"));
    Deno.statSync(join(dir, "build/prepare_env.py"));
  } catch {
    return { missing: `${dir} is not a checkout of mcp-run-python` };
  }
  return { dir };
}

const PARSE_ARGS_SHIM = `import { parseArgs as parse } from "node:util";
export function parseArgs(args, options = {}) {
  const spec = {};
  for (const name of options.string ?? []) spec[name] = { type: "string" };
  const { values, positionals } = parse({ args, options: spec, allowPositionals: true, strict: false });
  return { ...(options.default ?? {}), ...values, _: positionals };
}
`;

const PYODIDE_SHIM = `import { loadPyodide as load } from "npm:pyodide@PYODIDE_VERSION";
export * from "npm:pyodide@PYODIDE_VERSION";
// Offline stand-ins for the packages the peer loads from Pyodide's CDN, by package name.
const STAND_INS = {
  micropip: ["micropip", "async def install(*args, **kwargs):\\n    pass\\n"],
  pydantic: ["pydantic_core", "import json\\n" +
    "def to_json(value, indent=None, fallback=None):\\n" +
    "    return json.dumps(value, indent=indent, default=fallback).encode()\\n"],
};
export async function loadPyodide(options) {
  const pyodide = await load(options);
  const original = pyodide.loadPackage.bind(pyodide);
  pyodide.loadPackage = async (names, opts) => {
    const others = [];
    for (const name of Array.isArray(names) ? names : [names]) {
      const standIn = STAND_INS[name];
      if (standIn === undefined) {
        others.push(name);
        continue;
      }
      const site = pyodide.runPython("import site; site.getsitepackages()[0]");
      pyodide.FS.mkdirTree(site + "/" + standIn[0]);
      pyodide.FS.writeFile(site + "/" + standIn[0] + "/__init__.py", standIn[1]);
    }
    if (others.length > 0) await original(others, opts);
  };
  return pyodide;
}
`;

/**
 * Prepares the checkout's server in a temporary folder and returns the command that runs it
 * over stdio. `imports` are this project's locked specifiers for the SDK, zod and Pyodide.
 */
export async function preparePeer(
  dir: string,
  imports: { sdk: string; zod: string; pyodideVersion: string },
): Promise<PeerCommand> {
  const work = await Deno.makeTempDir({ prefix: "codemode-peer-" });
  const src = join(work, "src");
  await Deno.mkdir(src);
  for (const entry of Deno.readDirSync(join(dir, "mcp_run_python/deno/src"))) {
    if (entry.isFile && entry.name.endsWith(".ts")) {
      await Deno.copyFile(join(dir, "mcp_run_python/deno/src", entry.name), join(src, entry.name));
    }
  }
  // What the peer's build/build.py does: the Python file as a template literal.
  const python = (await Deno.readTextFile(join(dir, "build/prepare_env.py"))).replaceAll(
    "\\",
    "\\\\",
  );
  await Deno.writeTextFile(
    join(src, "prepareEnvCode.ts"),
    `export const preparePythonCode = \`${python}\`\n`,
  );
  await Deno.writeTextFile(join(work, "parse_args.js"), PARSE_ARGS_SHIM);
  await Deno.writeTextFile(
    join(work, "pyodide.js"),
    PYODIDE_SHIM.replaceAll("PYODIDE_VERSION", imports.pyodideVersion),
  );
  await Deno.writeTextFile(
    join(work, "deno.json"),
    JSON.stringify({
      imports: {
        "@modelcontextprotocol/sdk/": `npm:/@modelcontextprotocol/sdk@${imports.sdk}/`,
        "@std/cli/parse-args": "./parse_args.js",
        pyodide: "./pyodide.js",
        zod: `npm:zod@${imports.zod}`,
      },
    }),
  );
  return {
    command: Deno.execPath(),
    args: [
      "run",
      "--no-prompt",
      "--allow-all",
      "--config",
      join(work, "deno.json"),
      join(src, "main.ts"),
      "stdio",
      "--return-mode",
      "json",
    ],
    cwd: work,
    cleanup: () => Deno.remove(work, { recursive: true }),
  };
}
