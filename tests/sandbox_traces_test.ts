/**
 * A sandbox leaves nothing behind on the host and learns no host path. Deno keeps
 * `localStorage`, the Cache API and V8's code cache under its cache folder, keyed by the main
 * module, with no write permission needed: a sandbox must not reach that folder at all.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { denoDir, ROOT, startServer } from "./_helpers.ts";

/** Pyodide's package.json in Deno's npm cache (under the folder of whichever registry it came from). */
async function pyodidePackageJson(): Promise<string> {
  const npm = join(await denoDir(), "npm");
  for await (const registry of Deno.readDir(npm)) {
    const path = join(npm, registry.name, "pyodide", "314.0.7", "package.json");
    if (await Deno.stat(path).then(() => true, () => false)) return path;
  }
  throw new Error(`no pyodide 314.0.7 under ${npm}`);
}

/** Files under `folder` changed since `since` (ms), with their sizes. */
async function changedSince(folder: string, since: number): Promise<string[]> {
  const changed: string[] = [];
  const walk = async (dir: string) => {
    let entries: Deno.DirEntry[];
    try {
      entries = await Array.fromAsync(Deno.readDir(dir));
    } catch {
      return; // not there: nothing written
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory) await walk(path);
      else if (((await Deno.stat(path)).mtime?.getTime() ?? 0) >= since) changed.push(path);
    }
  };
  await walk(folder);
  return changed;
}

const PLANT = `
import js
from pyodide.ffi import run_sync
from pyodide.code import run_js
planted = []
def attempt(name, action):
    try:
        action()
        planted.append(name)
    except Exception as error:
        print(name, "refused:", type(error).__name__)
attempt("localStorage", lambda: js.localStorage.setItem("codemode-leak", "x" * 100000))
attempt("caches", lambda: run_sync(run_js(
    "caches.open('codemode-leak').then(c => c.put('https://leak.test/', new Response('x'.repeat(100000))))")))
for i in range(20):
    attempt(f"data module {i}", lambda: run_sync(run_js(
        f"import('data:text/javascript,export const v{i} = {i} + Math.random();')")))
planted
`;

const READ_BACK = `
import js
from pyodide.ffi import run_sync
from pyodide.code import run_js
found = []
try:
    if js.localStorage.getItem("codemode-leak") is not None: found.append("localStorage")
except Exception:
    pass
try:
    if run_sync(run_js("caches.has('codemode-leak')")): found.append("caches")
except Exception:
    pass
found
`;

Deno.test("nothing a sandbox stores survives its process, nor reaches the host's disk", async (t) => {
  const started = Date.now() - 1000;
  const locationData = join(await denoDir(), "location_data");
  {
    await using server = await startServer();
    await t.step("storage APIs keep nothing for the next execution", async () => {
      const plant = await server.execute({ code: PLANT });
      assert.equal(plant.success, true, plant.text);
      const later = await server.execute({ code: READ_BACK });
      assert.equal(later.success, true, later.text);
      assert.deepEqual(later.result, []);
    });
  }
  await t.step("nor for a server started later", async () => {
    await using server = await startServer({ args: ["--log-level", "error"] });
    const later = await server.execute({ code: READ_BACK });
    assert.deepEqual(later.result, []);
  });
  await t.step("Deno's location data on the host is untouched", async () => {
    assert.deepEqual(await changedSince(locationData, started), []);
  });
});

Deno.test("a sandbox learns no host path beyond its profile's mounts", async (t) => {
  await using server = await startServer();
  const probe = `
import js, json
from pyodide.ffi import run_sync
from pyodide.code import run_js
facts = {}
def learn(name, get):
    try:
        facts[name] = get()
    except Exception as error:
        facts[name] = "refused: " + type(error).__name__
learn("cwd", lambda: js.Deno.cwd())
learn("args", lambda: list(js.Deno.args))
learn("execPath", lambda: js.Deno.execPath())
learn("mainModule", lambda: js.Deno.mainModule)
import sys, os
learn("python", lambda: [sys.executable, sys._base_executable, sys.orig_argv, sys.argv, dict(os.environ)])
learn("process", lambda: run_sync(run_js(
    "import('node:process').then(p => JSON.stringify([p.default.execPath, p.default.argv, p.default.argv0, p.default.cwd()]))")))
learn("npm cache", lambda: run_sync(run_js(
    "import('file://${await pyodidePackageJson()}', {with: {type: 'json'}}).then(m => m.default.name)")))
json.dumps(facts)
`;
  for (const profile of ["default", "data"]) {
    await t.step(`under the ${profile} profile`, async () => {
      const r = await server.execute({ code: probe, profile });
      assert.equal(r.success, true, r.text);
      const facts = JSON.parse(r.result as string);
      assert.equal(facts.cwd, "/");
      assert.deepEqual(facts.args, ["serve"]);
      assert.equal(facts.execPath, "refused: JsException");
      assert.match(facts["npm cache"], /^refused/);
      const seen = JSON.stringify(facts);
      // The Deno binary's path stays visible (process.argv0, stack traces): see the README.
      for (const hostPath of [ROOT.replace(/\/$/, ""), await denoDir()]) {
        assert.ok(!seen.includes(hostPath), `${hostPath} leaked: ${seen}`);
      }
      if (Deno.env.get("HOME")) assert.ok(!seen.includes(Deno.env.get("HOME")!), seen);
    });
  }
});
