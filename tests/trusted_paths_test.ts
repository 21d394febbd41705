/**
 * No profile may grant a sandbox write access over what the host runs or trusts: a script under
 * such a profile could rewrite the worker (the next execution runs it), the memory watcher (it
 * runs with every permission), a profile, a skill or the audit log.
 */
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { loadConfig, PROJECT_ROOT } from "../src/config.ts";
import { locateRuntime, runtimeTrustedPaths } from "../src/sandbox/runtime.ts";
import { denoCacheDir } from "../src/policy/trusted_paths.ts";

Deno.test("loadConfig() refuses write access over anything the host runs or trusts", async (t) => {
  const root = Deno.realPathSync(await Deno.makeTempDir());
  const runtime = locateRuntime();
  for (const dir of ["permissions", "skills", "wheels", "logs", "servers"]) {
    await Deno.mkdir(join(root, dir));
  }
  await Deno.writeTextFile(join(root, "servers", "tool_server.ts"), "// an upstream server\n");
  const configPath = join(root, "mcp_servers.json");
  await Deno.writeTextFile(
    configPath,
    JSON.stringify({
      servers: {
        local: { command: "deno", args: ["run", "servers/tool_server.ts"], cwd: root },
      },
      settings: {
        permissions_dir: "permissions",
        skills_dir: "skills",
        wheels_dir: "wheels",
        audit_log: "logs/audit.jsonl",
      },
    }),
  );
  const attempt = async (host: string, mode = "rw") => {
    await Deno.writeTextFile(join(root, "permissions", "default.json"), "{}");
    await Deno.writeTextFile(
      join(root, "permissions", "grab.json"),
      JSON.stringify({ folders: [{ host, mount: "/grab", mode }] }),
    );
    return loadConfig({ path: configPath, runtimePaths: runtimeTrustedPaths(runtime) });
  };
  const refused: [string, string, RegExp][] = [
    ["the checkout", PROJECT_ROOT, /the server's own files/],
    ["the server's source", join(PROJECT_ROOT, "src"), /the server's own files/],
    ["the sandbox worker's folder", join(PROJECT_ROOT, "src", "sandbox"), /server's own files/],
    ["the folder of the config file", root, /the config file/],
    ["the permission profiles", join(root, "permissions"), /the permission profiles/],
    ["the skills folder", join(root, "skills"), /the skills folder/],
    ["the wheel folder", join(root, "wheels"), /the wheel folder/],
    ["the audit log's folder", join(root, "logs"), /the audit log/],
    ["a script an upstream server runs", join(root, "servers"), /a file an upstream server runs/],
    ["Pyodide's files", runtime.pyodideDir, /Pyodide's files|Deno's cache/],
    // (Deno's cache also holds symlinks that lead out of it, refused for that too.)
    [
      "Deno's cache",
      denoCacheDir((n) => Deno.env.get(n), Deno.build.os),
      /Deno's cache|symlink that leads outside/,
    ],
    [
      "Deno's npm packages",
      join(denoCacheDir((n) => Deno.env.get(n), Deno.build.os), "npm"),
      /Pyodide's files|Deno's cache/,
    ],
    ["the folder of the Deno binary", dirname(runtime.denoPath), /the Deno binary/],
  ];
  for (const [name, host, message] of refused) {
    await t.step(`${name} is refused`, async () => {
      await Deno.mkdir(runtime.cacheDir, { recursive: true });
      await assert.rejects(attempt(host), (error: Error) => {
        assert.ok(error instanceof TypeError);
        assert.match(error.message, /profile "grab", field "folders"\[0\]\.host: /);
        assert.match(error.message, message);
        return true;
      });
    });
  }
  await t.step("the snapshot cache is refused", async () => {
    await Deno.mkdir(runtime.cacheDir, { recursive: true });
    await assert.rejects(attempt(runtime.cacheDir), /the snapshot cache/);
  });
  await t.step(
    "the same folders read-only, and the shipped examples read-write, load",
    async () => {
      await attempt(join(PROJECT_ROOT, "src"), "ro");
      await attempt(join(PROJECT_ROOT, "examples", "workspace"));
    },
  );
  await Deno.remove(root, { recursive: true });
});
