/**
 * No profile may grant a sandbox write access over what the host runs or trusts: a script under
 * such a profile could rewrite the worker (the next execution runs it), the memory watcher (it
 * runs with every permission), a profile, a skill or the audit log.
 */
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { loadConfig, PROJECT_ROOT } from "../src/config/config.ts";
import { locateRuntime, runtimeTrustedPaths } from "../src/sandbox/runtime.ts";
import { denoCacheDir } from "../src/policy/trusted_paths.ts";

Deno.test("loadConfig() refuses write access over anything the host runs or trusts", async (t) => {
  const root = Deno.realPathSync(await Deno.makeTempDir());
  const runtime = locateRuntime();
  const dirs = [
    "permissions",
    "skills",
    "wheels",
    "logs",
    "servers/lib",
    "tsx/lib",
    "anylang/lib",
    "taskdir/sub",
    "py/pkg",
    "home",
    "cfgdir",
    "hook",
    "venv/bin",
    "userhome/.npm/_npx",
    "userhome/.node_modules",
    "userhome/mcp/lib",
    "nodepath",
    "pylib",
    "venv/lib/site-packages",
    "node_modules",
    "userhome/bin",
    "userhome/work",
  ];
  for (const dir of dirs) await Deno.mkdir(join(root, dir), { recursive: true });
  await Deno.writeTextFile(join(root, "venv", "bin", "mysrv"), "#!/bin/sh\n");
  // A personal bin/ in the home folder, first on PATH, with a deno of its own in it.
  for (const name of ["mytool", "deno"]) {
    await Deno.writeTextFile(join(root, "userhome", "bin", name), "#!/bin/sh\n");
    await Deno.chmod(join(root, "userhome", "bin", name), 0o755);
  }
  await Deno.writeTextFile(join(root, "userhome", "mcp", "server.ts"), "import './lib/a.ts';\n");
  await Deno.writeTextFile(join(root, "servers", "tool_server.ts"), "import './lib/helper.ts';\n");
  await Deno.writeTextFile(join(root, "servers", "lib", "helper.ts"), "export {};\n");
  // An attacker's corpus: a script whose extension the host does not list still has modules.
  await Deno.writeTextFile(join(root, "tsx", "main.tsx"), "import './lib/tools.ts';\n");
  await Deno.writeTextFile(join(root, "anylang", "entry.prog"), "load lib/tools\n");
  await Deno.writeTextFile(join(root, "taskdir", "deno.json"), '{"tasks": {"mcp": "true"}}');
  const configPath = join(root, "mcp_servers.json");
  await Deno.writeTextFile(
    configPath,
    JSON.stringify({
      servers: {
        local: { command: "deno", args: ["run", "../servers/tool_server.ts"], cwd: "home" },
        tasked: { command: "deno", args: ["task", "mcp"], cwd: join(root, "taskdir") },
        python: { command: "python3", args: ["-m", "pkg.server"], cwd: join(root, "py") },
        flagged: {
          command: "deno",
          args: ["run", `--config=${root}/cfgdir/deno.json`, "npm:some-server"],
          cwd: "home",
        },
        noded: {
          command: "node",
          args: ["server.mjs"],
          env: { NODE_OPTIONS: `--require ${root}/hook/h.cjs` },
          cwd: "home",
        },
        bare: { command: "mysrv", cwd: "home" },
        personal: { command: "mytool", cwd: "home" },
        fetched: { command: "npx", args: ["-y", "some-mcp-server"], cwd: "home" },
        noded_too: { command: "node", args: ["server.js"], cwd: "home" },
        shelled: { command: "bash", args: ["-c", "exec deno run ~/mcp/server.ts"], cwd: "home" },
        assigned: {
          command: "sh",
          args: ["-c", `NODE_PATH=${root}/nodepath node x.js`],
          cwd: "home",
        },
        inline: {
          command: "python3",
          args: ["-c", `import sys; sys.path.insert(0,'${root}/pylib'); import srv`],
          cwd: "home",
        },
        tsx: { command: "deno", args: ["run", "-A", "../tsx/main.tsx"], cwd: "home" },
        anylang: { command: "interp", args: [`${root}/anylang/entry.prog`], cwd: "home" },
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
    return loadConfig({
      path: configPath,
      runtimePaths: runtimeTrustedPaths(runtime),
      // `mysrv` is found on PATH, in root/venv/bin.
      // npx's packages are kept under HOME.
      env: (name) =>
        name === "PATH"
          ? `${root}/userhome/bin:${root}/venv/bin:${Deno.env.get("PATH")}`
          : name === "HOME"
          ? join(root, "userhome")
          : Deno.env.get(name),
    });
  };
  /** Why the profile "grab" is unavailable: the config loads, but without it. */
  const unavailable = async (host: string) => {
    const config = await attempt(host);
    assert.ok(!config.profiles.has("grab"));
    return config.unavailableProfiles.get("grab") ?? "(available)";
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
    ["a script an upstream server runs", join(root, "servers"), /files an upstream server runs/],
    ["modules beside that script", join(root, "servers", "lib"), /files an upstream server runs/],
    ["modules beside a .tsx script", join(root, "tsx", "lib"), /files an upstream server runs/],
    [
      "modules beside a file of any kind a server is given",
      join(root, "anylang", "lib"),
      /files an upstream server runs/,
    ],
    [
      "a server's working folder (deno task), saying what to do",
      join(root, "taskdir"),
      /working folder \(.*taskdir\): give that server a "cwd" of its own, or grant a folder/,
    ],
    ["a folder below a server's working folder", join(root, "taskdir", "sub"), /working folder/],
    ["a package a server runs with -m", join(root, "py", "pkg"), /working folder/],
    ["a path given as --flag=value", join(root, "cfgdir"), /files an upstream server runs/],
    ["a path in a server's NODE_OPTIONS", join(root, "hook"), /files an upstream server runs/],
    ["the folder of a command found on PATH", join(root, "venv", "bin"), /server's command/],
    [
      "modules beside a script named ~/... in a shell command",
      join(root, "userhome", "mcp", "lib"),
      /files an upstream server runs/,
    ],
    ["a folder in a NAME=value of a shell command", join(root, "nodepath"), /server runs/],
    ["a folder named in code given with -c", join(root, "pylib"), /server runs/],
    [
      "the modules node loads from the home folder",
      join(root, "userhome", ".node_modules"),
      /the packages an upstream server's launcher keeps/,
    ],
    [
      "the package cache of a launcher (npx)",
      join(root, "userhome", ".npm", "_npx"),
      /the packages an upstream server's launcher keeps/,
    ],
    [
      "the installation above a command's bin/ (a venv's packages)",
      join(root, "venv", "lib", "site-packages"),
      /the installation of an upstream server's command/,
    ],
    [
      "node_modules above a server's script, where Node looks for its packages",
      join(root, "node_modules"),
      /where an upstream server finds its packages/,
    ],
    ["Pyodide's files", runtime.pyodideDir, /Pyodide's files|Deno's cache/],
    // (Deno's cache also holds Pyodide's files, named first.)
    [
      "Deno's cache",
      denoCacheDir((n) => Deno.env.get(n), Deno.build.os),
      /Deno's cache|Pyodide's files/,
    ],
    [
      "Deno's npm packages",
      join(denoCacheDir((n) => Deno.env.get(n), Deno.build.os), "npm"),
      /Pyodide's files|Deno's cache/,
    ],
    [
      "the folder of the Deno binary",
      dirname(runtime.denoPath),
      /the Deno binary|link that may lead outside/, // npm installs it with two hard links
    ],
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
  const elsewhere = Deno.realPathSync(await Deno.makeTempDir());
  await t.step("a folder holding a hard link to a trusted file is unavailable", async () => {
    await Deno.mkdir(join(elsewhere, "linked"));
    await Deno.writeTextFile(join(root, "permissions", "default.json"), "{}");
    await Deno.link(join(root, "permissions", "default.json"), join(elsewhere, "linked", "x"));
    assert.match(await unavailable(join(elsewhere, "linked")), /x, a link that may lead outside/);
  });
  await t.step(
    "a folder whose files are hard-linked only to each other loads (a sandbox can do that)",
    async () => {
      const inside = join(elsewhere, "inside");
      await Deno.mkdir(join(inside, "sub"), { recursive: true });
      await Deno.writeTextFile(join(inside, "a.txt"), "x");
      await Deno.link(join(inside, "a.txt"), join(inside, "sub", "b.txt"));
      await Deno.link(join(inside, "a.txt"), join(inside, "c.txt"));
      assert.equal((await attempt(inside)).unavailableProfiles.size, 0);
      // One more name, outside: the folder is refused again.
      await Deno.link(join(inside, "a.txt"), join(elsewhere, "d.txt"));
      assert.match(await unavailable(inside), /a link that may lead outside/);
    },
  );
  await t.step("a folder too large to check for links is unavailable", async () => {
    const pad = join(elsewhere, "pad");
    await Deno.mkdir(pad);
    for (let i = 0; i <= 20_000; i++) Deno.writeFileSync(join(pad, `f${i}`), new Uint8Array());
    assert.match(await unavailable(pad), /more than 20000 entries, too many to check for links/);
  });
  await t.step(
    "a personal bin/ is protected, not the whole home folder; deno is the server's own",
    async () => {
      await attempt(join(root, "userhome", "work"));
      await assert.rejects(attempt(join(root, "userhome", "bin")), /server's command/);
    },
  );
  await t.step("a folder that is neither trusted nor linked out loads", async () => {
    await Deno.mkdir(join(elsewhere, "fine"));
    await attempt(join(elsewhere, "fine"));
  });
  await t.step(
    "the same folders read-only, and the shipped examples read-write, load",
    async () => {
      await attempt(join(PROJECT_ROOT, "src"), "ro");
      await attempt(join(PROJECT_ROOT, "examples", "workspace"));
    },
  );
  await Deno.remove(root, { recursive: true });
  await Deno.remove(elsewhere, { recursive: true });
});
