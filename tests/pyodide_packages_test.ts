/**
 * Pyodide's package set as a package source, with dependencies: a loopback HTTP mirror and a
 * local mirror folder, each holding a lock in Pyodide's format and wheels made by the test.
 * Nothing reaches beyond loopback.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startServer, writeConfig } from "./_helpers.ts";
import { buildWheel, lockText, pinnedLockInfo, writeDistribution } from "./_wheels.ts";
import { readWheelMetadata, requiredNames, requiresDist } from "../src/packages/wheel_metadata.ts";
import { indexLinks } from "../src/packages/index_links.ts";
import {
  parseWheelName,
  type PyodidePlatform,
  wheelIncompatibility,
} from "../src/packages/wheels.ts";
import { parseLock } from "../src/packages/pyodide_lock.ts";
import { PyodideDistribution } from "../src/packages/pyodide_distribution.ts";
import { PackageSources } from "../src/packages/package_sources.ts";
import { preloadRefusal } from "../src/packages/preload_check.ts";
import { sha256Hex } from "../src/_util/digest.ts";

const PLATFORM = pinnedLockInfo() as unknown as PyodidePlatform;

/** Sources with only a folder of wheels: no mirror, no index. */
const folderSources = (wheelsDir: string) =>
  new PackageSources({ wheelsDir, distribution: null, index: null, platform: PLATFORM });

Deno.test("wheel tags: pure Python and this Pyodide's builds run, others are refused by tag", () => {
  const check = (file: string) => wheelIncompatibility(parseWheelName(file)!, PLATFORM);
  const [major, minor] = PLATFORM.python.split(".");
  const cp = `cp${major}${minor}`;
  assert.equal(check("a-1-py3-none-any.whl"), null);
  assert.equal(check("a-1-py2.py3-none-any.whl"), null);
  assert.equal(check(`a-1-${cp}-${cp}-pyemscripten_${PLATFORM.abi_version}_wasm32.whl`), null);
  assert.equal(check(`a-1-cp38-abi3-pyemscripten_${PLATFORM.abi_version}_wasm32.whl`), null);
  assert.match(
    check(`numpy-2.0.0-${cp}-${cp}-manylinux_2_17_x86_64.whl`)!,
    /built for the platform manylinux_2_17_x86_64, which this Pyodide cannot run/,
  );
  assert.match(
    check("numpy-2.0.0-cp312-cp312-pyemscripten_2024_0_wasm32.whl")!,
    /platform pyemscripten_2024_0_wasm32/,
  );
  assert.match(check(`a-1-cp312-cp312-pyemscripten_${PLATFORM.abi_version}_wasm32.whl`)!, /cp312/);
  assert.match(check("a-1-py2-none-any.whl")!, /Python tag py2/);
});

Deno.test("Requires-Dist is read from a wheel, with markers evaluated for Pyodide", async () => {
  const wheel = await buildWheel({
    name: "needs-things",
    value: 1,
    requires: [
      "plain-dep",
      "Versioned_Dep (>=1.0)",
      'windows-only ; sys_platform == "win32"',
      'browser-only ; sys_platform == "emscripten" and python_version >= "3.8"',
      'old-python-only ; python_version < "3.8"',
      'extra-only ; extra == "speed"',
      'either ; os_name == "nt" or (platform_machine == "wasm32")',
    ],
  });
  const metadata = await readWheelMetadata(wheel.bytes);
  assert.ok(metadata?.includes("Name: needs-things"));
  assert.deepEqual(requiredNames(metadata!, PLATFORM), [
    "plain-dep",
    "versioned-dep",
    "browser-only",
    "either",
  ]);
});

Deno.test("attack: a wheel whose dist-info names another package is refused on the host", async () => {
  // Pyodide's installer refuses it inside the sandbox, which read as SANDBOX_CRASHED (attacker
  // 56): the host says which package and why instead.
  const honest = await buildWheel({ name: "Honest_Pkg", value: 1 });
  assert.ok((await readWheelMetadata(honest.bytes, "honest-pkg"))?.includes("Name: Honest_Pkg"));
  const liar = await buildWheel({ name: "requests", value: 1 });
  await assert.rejects(
    readWheelMetadata(liar.bytes, "liar"),
    /its \.dist-info folders name requests, not liar/,
  );
  const two = await buildWheel({
    name: "two",
    value: 1,
    archiveFiles: { "other-1.0.dist-info/METADATA": "Name: other\n" },
  });
  await assert.rejects(readWheelMetadata(two.bytes, "two"), /name other, two, not two/);
  // Through a wheel folder, as an execution asks for it.
  const dir = await Deno.makeTempDir();
  await Deno.writeFile(join(dir, "liar-1.0.0-py3-none-any.whl"), liar.bytes);
  const sources = folderSources(dir);
  const found = await sources.resolve(["liar"], []);
  assert.match(
    found.problems.join(),
    /liar-1\.0\.0-py3-none-any\.whl: its \.dist-info folders name requests/,
  );
  await Deno.remove(dir, { recursive: true });
});

Deno.test("requiresDist() reads a header line's name and marker", () => {
  const table: [string, ReturnType<typeof requiresDist>][] = [
    ["Requires-Dist: plain-dep", { name: "plain-dep" }],
    ["requires-dist:Versioned_Dep (>=1.0)", { name: "versioned-dep" }],
    ['Requires-Dist: a ; sys_platform == "win32"', {
      name: "a",
      marker: ' sys_platform == "win32"',
    }],
    ["Requires-Dist:", null],
    ["Requires-Dist: (>=1)", null],
    ["Requires-Python: >=3.8", null],
    ["X-Requires-Dist: a", null],
  ];
  for (const [line, expected] of table) assert.deepEqual(requiresDist(line), expected, line);
});

Deno.test("indexLinks() reads a simple index page's links", () => {
  const page = [
    '<html><body><a href="/f/a-1-py3-none-any.whl#sha256=00" data-requires-python="&gt;=3">',
    "a-1-py3-none-any.whl</a><br/>",
    '<A HREF="b.whl">b-2-py3-none-any.whl</A>',
    "<a name=x>no href</a>",
    '<a href="">empty</a><a href="c.whl">c</b>',
    '<a\nclass="x" href="d.whl">d-1-py3-none-any.whl</a>',
    '<a href="never-closed.whl">never closed',
  ].join("\n");
  assert.deepEqual(indexLinks(page), [
    { href: "/f/a-1-py3-none-any.whl#sha256=00", text: "\na-1-py3-none-any.whl" },
    { href: "b.whl", text: "b-2-py3-none-any.whl" },
    { href: "d.whl", text: "d-1-py3-none-any.whl" },
  ]);
});

Deno.test("attack: a METADATA line or an index page that a regular expression would backtrack over is read in one pass", async (t) => {
  // Each took the host's thread minutes to hours at these sizes (quadratic and cubic
  // backtracking): 150,000 characters of the first, 44 s; 24 KB of the second, 43 s.
  await t.step("a 1 MiB Requires-Dist line that ends in ;\\r", () => {
    const started = performance.now();
    const line = "Requires-Dist: " + "a".repeat(1 << 20) + ";\rx";
    assert.equal(requiresDist(line)?.marker, "\rx");
    const metadata = `Metadata-Version: 2.1\nName: evil\nVersion: 1\n${line}\n\n`;
    assert.deepEqual(requiredNames(metadata, PLATFORM), ["a".repeat(1 << 20)]);
    assert.ok(performance.now() - started < 5000, `${performance.now() - started} ms`);
  });
  await t.step("16 MiB of pages that never close a tag, or a link", () => {
    const started = performance.now();
    for (const unit of ['<a href="x" ', "<a <a ", '<a href="x">y', '<a href="'] as const) {
      assert.deepEqual(indexLinks(unit.repeat(Math.floor((4 << 20) / unit.length))), [], unit);
    }
    assert.ok(performance.now() - started < 5000, `${performance.now() - started} ms`);
  });
  await t.step("through the package index, the package is refused, at once", async () => {
    const page = '<a href="x" '.repeat(200_000); // 2.4 MB
    await using index = await hostileSources((path) =>
      path === "/simple/evil/" ? new Response(page) : notFound()
    );
    const started = performance.now();
    const result = await index.resolve(["evil"]);
    assert.match(result.problems.join(), /evil: .*no wheel on the package index/);
    assert.ok(performance.now() - started < 10_000, `${performance.now() - started} ms`);
  });
});

Deno.test("a lock with a file name that is a path, or a sha256 that is none, is refused", () => {
  const lock = (entry: Record<string, unknown>) =>
    JSON.stringify({ info: PLATFORM, packages: { a: { name: "a", version: "1", ...entry } } });
  const sha = "0".repeat(64);
  assert.throws(() => parseLock(lock({ file_name: "../../etc/passwd", sha256: sha })), /plain/);
  assert.throws(() => parseLock(lock({ file_name: "http://x/a.whl", sha256: sha })), /plain/);
  assert.throws(() => parseLock(lock({ file_name: "a.whl", sha256: "abc" })), /sha256/);
  assert.equal(parseLock(lock({ file_name: "a.whl", sha256: sha })).packages.get("a")?.sha256, sha);
});

Deno.test("failures of a source are told, not thrown: unreachable, another Pyodide's lock", async () => {
  const dir = await Deno.makeTempDir();
  const pinnedLock = parseLock(JSON.stringify({ info: PLATFORM, packages: {} }));
  const sources = (source: string, fetcher?: typeof fetch) =>
    new PackageSources({
      wheelsDir: "",
      distribution: new PyodideDistribution({ source, pinnedLock, cacheDir: dir, fetch: fetcher }),
      index: null,
      platform: PLATFORM,
    });
  const unreachable = await sources(
    "http://127.0.0.1:9/dist/",
    () => Promise.reject(new TypeError("connection refused")),
  ).resolve(["pkg"], ["127.0.0.1:9"]);
  assert.match(unreachable.problems.join(), /pkg: .*127\.0\.0\.1:9.*cannot be reached/);

  const other = await buildWheel({ name: "pkg", value: 1 });
  await writeDistribution(
    join(dir, "old"),
    await lockText([{ wheel: other }], { ...PLATFORM, abi_version: "2024_0" } as never),
    [other],
  );
  const old = await sources(join(dir, "old")).resolve(["pkg"], []);
  assert.match(old.problems.join(), /pkg: .*not for Pyodide .*abi_version "2024_0"/);

  const missing = await sources(join(dir, "nothing-here")).resolve(["pkg"], []);
  assert.match(missing.problems.join(), /pkg: .*pyodide-lock\.json cannot be read/);
  await Deno.remove(dir, { recursive: true });
});

/** A dependency chain top → middle → bottom, a package whose lock sha256 is wrong, an orphan. */
async function distribution(tag: string) {
  const bottom = await buildWheel({ name: `bottom-${tag}`, value: 1 });
  const middle = await buildWheel({
    name: `middle-${tag}`,
    value: 10,
    imports: [`bottom_${tag}`],
  });
  const top = await buildWheel({ name: `top-${tag}`, value: 100, imports: [`middle_${tag}`] });
  const tampered = await buildWheel({ name: `tampered-${tag}`, value: 5 });
  const orphan = await buildWheel({ name: `orphan-${tag}`, value: 7 });
  const lock = await lockText([
    { wheel: bottom },
    { wheel: middle, depends: [`bottom-${tag}`] },
    { wheel: top, depends: [`middle_${tag}`] },
    { wheel: tampered, sha256: "1".repeat(64) },
    { wheel: orphan, depends: [`ghost-${tag}`] },
  ]);
  return { lock, wheels: [bottom, middle, top, tampered, orphan] };
}

const RUN_TOP = (tag: string) => `import top_${tag}\ntop_${tag}.value()`;

Deno.test("Pyodide packages from a loopback mirror: the chain, the cache, the gate, the failures", async (t) => {
  const tag = `m${crypto.randomUUID().slice(0, 6)}`;
  const { lock, wheels } = await distribution(tag);
  const requests: string[] = [];
  await using mirror = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const file = new URL(request.url).pathname.replace(/^\/dist\//, "");
    requests.push(file);
    if (file === "pyodide-lock.json") return new Response(lock);
    const wheel = wheels.find((w) => w.file === file);
    return wheel ? new Response(wheel.bytes) : new Response("not found", { status: 404 });
  });
  const port = mirror.addr.port;
  const dir = await Deno.makeTempDir();
  const cache = join(dir, "cache");
  await Deno.mkdir(join(dir, "permissions"));
  await Deno.writeTextFile(join(dir, "permissions", "default.json"), "{}");
  await Deno.writeTextFile(
    join(dir, "permissions", "mirrored.json"),
    JSON.stringify({ net: [`127.0.0.1:${port}`] }),
  );
  // A wheel in the local folder that needs a package of the mirror: sources are crossed.
  await Deno.mkdir(join(dir, "wheels"));
  const local = await buildWheel({
    name: `local-${tag}`,
    value: 1000,
    imports: [`bottom_${tag}`],
    requires: [`bottom-${tag} (>=1)`, 'nothing-on-windows ; sys_platform == "win32"'],
  });
  await Deno.writeFile(join(dir, "wheels", local.file), local.bytes);
  // Data files (`.data/data/`) go to sys.prefix, "/", where read-write folders are mounted.
  const planting = await buildWheel({
    name: `planting-${tag}`,
    value: 7,
    archiveFiles: { [`planting_${tag}-1.0.0.data/data/planted-${tag}.txt`]: "here" },
  });
  await Deno.writeFile(join(dir, "wheels", planting.file), planting.bytes);
  const linux = await buildWheel({
    name: `native-${tag}`,
    value: 1,
    tag: "cp314-cp314-manylinux_2_17_x86_64",
  });
  await Deno.writeFile(join(dir, "wheels", linux.file), linux.bytes);
  const config = await writeConfig(dir, {
    settings: {
      pool_size: 1,
      permissions_dir: "permissions",
      wheels_dir: "wheels",
      pyodide_packages: `http://127.0.0.1:${port}/dist`,
    },
  });
  await using server = await startServer({
    args: ["--config", config],
    env: { CODEMODE_CACHE_DIR: cache },
  });
  const run = (code: string, packages: string[], profile?: string) =>
    server.execute({ code, packages, profile } as never);
  const fileRequests = () => requests.filter((r) => r.endsWith(".whl"));

  await t.step("a profile without the mirror's host is refused before anything runs", async () => {
    const r = await run(`print('ran')\n${RUN_TOP(tag)}`, [`top-${tag}`]);
    assert.equal(r.diagnostics?.error_type, "PACKAGE_UNAVAILABLE", r.text);
    assert.match(r.diagnostics!.message, /does not allow the host 127\.0\.0\.1:\d+/);
    assert.equal(r.stdout, "");
    assert.deepEqual(requests, []);
  });

  await t.step("the chain is installed whole, each file checked", async () => {
    const r = await run(RUN_TOP(tag), [`top-${tag}`], "mirrored");
    assert.equal(r.result, 111, r.text);
    assert.deepEqual(fileRequests().sort(), wheels.slice(0, 3).map((w) => w.file).sort());
  });

  await t.step("a second run takes the files from the cache", async () => {
    const r = await run(RUN_TOP(tag), [`TOP_${tag}`], "mirrored");
    assert.equal(r.result, 111, r.text);
    assert.equal(fileRequests().length, 3);
  });

  await t.step(
    "packages refused for the same reason are named together, the reason once",
    async () => {
      const r = await run("print('ran')", [`top-${tag}`, `nowhere-${tag}`]);
      assert.equal(r.diagnostics?.error_type, "PACKAGE_UNAVAILABLE", r.text);
      const message = r.diagnostics!.message;
      assert.match(
        message,
        new RegExp(`top-${tag}, nowhere-${tag}: not in the local wheel folder`),
      );
      assert.equal(message.match(/does not allow the host/g)?.length, 1, message);
    },
  );

  await t.step("attack: a wheel's data files are not installed outside site-packages", async () => {
    // Pyodide's installer copies them to "/": into a profile's read-write folder mounted there,
    // on the host, before the script ran (attacker 56).
    const r = await run(
      `import os, planting_${tag}\n[planting_${tag}.value(), os.path.exists('/planted-${tag}.txt')]`,
      [`planting-${tag}`],
    );
    assert.deepEqual(r.result, [7, false], r.text);
  });

  await t.step("a local wheel's Requires-Dist is resolved from the mirror", async () => {
    const r = await run(`import local_${tag}\nlocal_${tag}.value()`, [`local-${tag}`], "mirrored");
    assert.equal(r.result, 1001, r.text);
  });

  const refused = async (packages: string[], pattern: RegExp) => {
    const r = await run("print('ran')", packages, "mirrored");
    assert.equal(r.diagnostics?.error_type, "PACKAGE_UNAVAILABLE", r.text);
    assert.match(r.diagnostics!.message, pattern);
    assert.equal(r.stdout, "");
  };
  await t.step("a checksum mismatch is refused, and nothing is cached", async () => {
    await refused([`tampered-${tag}`], /tampered-.*: .*checksum mismatch/);
    await assert.rejects(Deno.stat(join(cache, "pyodide-packages", wheels[3]!.file)));
  });
  await t.step("an unknown package and a missing dependency are named", async () => {
    await refused([`nowhere-${tag}`], new RegExp(`nowhere-${tag}: not in the local wheel folder`));
    await refused([`orphan-${tag}`], new RegExp(`ghost-${tag} \\(needed by orphan-${tag}\\)`));
  });
  await t.step("a wheel built for another platform is refused by its tag", async () => {
    await refused([`native-${tag}`], /manylinux_2_17_x86_64, which this Pyodide cannot run/);
  });
  await Deno.remove(dir, { recursive: true });
});

Deno.test("Pyodide packages from a local mirror folder, sha256 checked", async (t) => {
  const tag = `f${crypto.randomUUID().slice(0, 6)}`;
  const { lock, wheels } = await distribution(tag);
  const dir = await Deno.makeTempDir();
  await writeDistribution(join(dir, "pyodide"), lock, wheels);
  const config = await writeConfig(dir, {
    settings: { pool_size: 1, pyodide_packages: "pyodide" },
  });
  await using server = await startServer({
    args: ["--config", config],
    env: { CODEMODE_CACHE_DIR: join(dir, "cache") },
  });

  await t.step("the chain is installed (a folder needs no net)", async () => {
    const r = await server.execute({
      code: `# /// script\n# dependencies = ["top-${tag}"]\n# ///\n${RUN_TOP(tag)}`,
    });
    assert.equal(r.result, 111, r.text);
  });
  await t.step("a file changed after the lock was written is refused", async () => {
    const bottom = join(dir, "pyodide", wheels[0]!.file);
    const bytes = await Deno.readFile(bottom);
    bytes[bytes.length - 30] = bytes[bytes.length - 30]! ^ 0xff;
    await Deno.writeFile(bottom, bytes);
    const r = await server.execute({ code: RUN_TOP(tag), packages: [`top-${tag}`] } as never);
    assert.equal(r.diagnostics?.error_type, "PACKAGE_UNAVAILABLE", r.text);
    assert.match(r.diagnostics!.message, /bottom-.* \(needed by middle-.*checksum mismatch/);
  });
  await Deno.remove(dir, { recursive: true });
});

Deno.test("preloadRefusal() refuses compiled files, which a memory snapshot cannot keep", () => {
  const file = (name: string, fileName: string, install_dir: "site" | "dynlib" = "site") => ({
    name,
    file: fileName,
    data: "",
    install_dir,
  });
  assert.equal(preloadRefusal([file("a", "a-1-py3-none-any.whl")]), null);
  assert.match(
    preloadRefusal([
      file("a", "a-1-py3-none-any.whl"),
      file("numpy", "numpy-2-cp314-cp314-pyemscripten_2026_0_wasm32.whl"),
      file("libopenblas", "libopenblas-0.3.zip", "dynlib"),
    ])!,
    /^numpy \(numpy-2-.*\), libopenblas \(libopenblas-0\.3\.zip\) hold compiled code/,
  );
});

Deno.test("a profile's preloaded packages are in its snapshot, read-only, rebuilt when a file changes", async (t) => {
  const tag = `p${crypto.randomUUID().slice(0, 6)}`;
  const dir = await Deno.makeTempDir();
  const cache = join(dir, "cache");
  const write = async (bottomValue: number) => {
    const bottom = await buildWheel({ name: `bottom-${tag}`, value: bottomValue });
    const top = await buildWheel({
      name: `top-${tag}`,
      value: 100,
      imports: [`bottom_${tag}`],
      extraFiles: { "later.py": "WORD = 'lazy'\n" },
      // Its code runs where the snapshot is built: an attempt to leave data on the host's disk.
      initSuffix: "import js\ntry:\n" +
        `    js.localStorage.setItem('planted', 'planted-${tag}')\n` +
        "except Exception:\n    pass\n" +
        // And to leave its files open to every local user, a program setuid.
        "import os\n_here = os.path.dirname(__file__)\ntry:\n" +
        "    os.chmod(os.path.join(_here, 'later.py'), 0o4777)\n" +
        "    os.makedirs(os.path.join(_here, 'open'), exist_ok=True)\n" +
        "    os.chmod(os.path.join(_here, 'open'), 0o777)\n" +
        "except OSError:\n    pass\n",
    });
    await Deno.remove(join(dir, "pyodide"), { recursive: true }).catch(() => {});
    await writeDistribution(
      join(dir, "pyodide"),
      await lockText([{ wheel: bottom }, { wheel: top, depends: [`bottom-${tag}`] }]),
      [bottom, top],
    );
  };
  await write(1);
  await Deno.mkdir(join(dir, "permissions"));
  await Deno.writeTextFile(join(dir, "permissions", "default.json"), "{}");
  await Deno.writeTextFile(
    join(dir, "permissions", "data.json"),
    JSON.stringify({ preload: [`top-${tag}`] }),
  );
  const config = await writeConfig(dir, {
    settings: {
      pool_size: 1,
      permissions_dir: "permissions",
      allowed_profiles: ["default", "data"],
      pyodide_packages: "pyodide",
    },
  });
  const start = () =>
    startServer({ args: ["--config", config], env: { CODEMODE_CACHE_DIR: cache } });
  const preloads = async () =>
    (await Array.fromAsync(Deno.readDir(cache))).filter((e) =>
      e.isDirectory && /^preload-/.test(e.name)
    )
      .length;
  const probe = `import sys\nloaded = 'top_${tag}' in sys.modules\nimport top_${tag}\n` +
    `from top_${tag} import later\n[loaded, top_${tag}.value(), later.WORD]`;

  {
    await using server = await start();
    await t.step("a fresh sandbox of the profile starts with them imported", async () => {
      const r = await server.execute({ code: probe, profile: "data" });
      assert.deepEqual(r.result, [true, 101, "lazy"], r.text);
    });
    await t.step("the packages' code stored nothing in the host's Deno folder", async () => {
      const denoDir = Deno.env.get("DENO_DIR") ??
        join(Deno.env.get("XDG_CACHE_HOME") ?? join(Deno.env.get("HOME")!, ".cache"), "deno");
      const found: string[] = [];
      const look = async (path: string) => {
        const entries = await Array.fromAsync(Deno.readDir(path)).catch(() => []);
        for (const entry of entries) {
          const child = join(path, entry.name);
          if (entry.isDirectory) await look(child);
          else if (
            new TextDecoder().decode(await Deno.readFile(child)).includes(`planted-${tag}`)
          ) {
            found.push(child);
          }
        }
      };
      await look(join(denoDir, "location_data"));
      assert.deepEqual(found, []);
    });
    await t.step("nothing of the preloaded files is open to other local users", async () => {
      const open: string[] = [];
      const look = async (path: string) => {
        const info = await Deno.lstat(path);
        if ((info.mode! & 0o7022) !== 0 || info.isSymlink) {
          open.push(`${path} ${info.mode!.toString(8)}`);
        }
        if (info.isDirectory) {
          for await (const entry of Deno.readDir(path)) await look(join(path, entry.name));
        }
      };
      const folders = (await Array.fromAsync(Deno.readDir(cache))).filter((e) =>
        e.isDirectory && /^preload-/.test(e.name)
      );
      assert.equal(folders.length, 1);
      await look(join(cache, folders[0]!.name));
      assert.deepEqual(open, []);
      const root = await Deno.lstat(join(cache, folders[0]!.name));
      assert.equal(root.mode! & 0o077, 0, "no one else can enter the folder");
    });
    await t.step("a profile without the list keeps the shared snapshot", async () => {
      const r = await server.execute({ code: `import sys\n'top_${tag}' in sys.modules` });
      assert.equal(r.result, false, r.text);
    });
    await t.step("a script cannot change the preloaded files for the next sandbox", async () => {
      const r = await server.execute({
        code:
          `import top_${tag}, os\npath = os.path.join(os.path.dirname(top_${tag}.__file__), "later.py")\n` +
          `open(path, "w").write("WORD = 'poisoned'")`,
        profile: "data",
      });
      assert.equal(r.success, false, r.text);
      assert.match(r.diagnostics?.error_type ?? "", /PermissionError|OSError/);
      const again = await server.execute({ code: probe, profile: "data" });
      assert.deepEqual(again.result, [true, 101, "lazy"], again.text);
    });
  }
  assert.equal(await preloads(), 1);

  // As a folder left by an older version, or changed since: one file open to others.
  const [folder] = (await Array.fromAsync(Deno.readDir(cache))).filter((e) =>
    e.isDirectory && /^preload-[0-9a-f]+$/.test(e.name)
  );
  const later = join(cache, folder!.name, `top_${tag}`, "later.py");
  await Deno.chmod(later, 0o666);
  {
    await using server = await start();
    await t.step("a folder found open to others at a start is built again", async () => {
      const r = await server.execute({ code: probe, profile: "data" });
      assert.deepEqual(r.result, [true, 101, "lazy"], r.text);
      assert.equal((await Deno.lstat(later)).mode! & 0o7022, 0, "closed again");
    });
  }

  await write(2);
  {
    await using server = await start();
    await t.step("a changed file builds a new snapshot", async () => {
      const r = await server.execute({ code: probe, profile: "data" });
      assert.deepEqual(r.result, [true, 102, "lazy"], r.text);
      assert.equal(await preloads(), 2);
    });
  }
  await Deno.remove(dir, { recursive: true });
});

/** Package sources over a hostile loopback server, with a temporary cache. */
async function hostileSources(
  handler: (path: string) => Response | Promise<Response>,
  options: { lockDir?: string; deadlineMs?: number } = {},
) {
  const dir = await Deno.makeTempDir();
  const seen: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const path = new URL(request.url).pathname;
    seen.push(path);
    return handler(path);
  });
  const base = `http://127.0.0.1:${server.addr.port}`;
  const pinnedLock = parseLock(JSON.stringify({ info: PLATFORM, packages: {} }));
  const sources = new PackageSources({
    wheelsDir: "",
    distribution: new PyodideDistribution({
      source: options.lockDir ?? `${base}/dist/`,
      pinnedLock,
      cacheDir: join(dir, "cache", "pyodide-packages"),
    }),
    index: { url: `${base}/simple/`, cacheDir: join(dir, "cache", "wheels") },
    platform: PLATFORM,
    deadlineMs: options.deadlineMs,
  });
  const hosts = [`127.0.0.1:${server.addr.port}`];
  return {
    dir,
    base,
    seen,
    port: server.addr.port,
    resolve: (names: string[], allowed = hosts) => sources.resolve(names, allowed),
    async [Symbol.asyncDispose]() {
      await server.shutdown();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

const notFound = () => new Response("no", { status: 404 });

Deno.test("attack: one package cannot pull in more than an execution may install", async (t) => {
  const dir = await Deno.makeTempDir();
  const deps = Array.from({ length: 150 }, (_, i) => `dep-${i}`);
  for (
    const wheel of await Promise.all([
      buildWheel({ name: "wide", value: 1, requires: deps }),
      ...deps.map((name) => buildWheel({ name, value: 1 })),
    ])
  ) {
    await Deno.writeFile(join(dir, wheel.file), wheel.bytes);
  }
  const sources = folderSources(dir);
  await t.step("past 100 packages with dependencies, resolution stops and says why", async () => {
    const found = await sources.resolve(["wide"], []);
    assert.match(
      found.problems.join(),
      /^wide: more than one execution may install \(100 packages/,
    );
    assert.ok(found.packages.length <= 101, `${found.packages.length} read`);
  });
  await t.step("past the bytes, it stops before reading the rest", async () => {
    const found = await sources.resolve(["wide"], [], { packages: 1000, bytes: 5000 });
    assert.match(found.problems.join(), /more than one execution may install/);
    assert.ok(found.packages.length < 20, `${found.packages.length} read`);
  });
  await t.step("one package past the bytes on its own is refused once read", async () => {
    const found = await sources.resolve(["dep-7"], [], { packages: 1000, bytes: 100 });
    assert.match(found.problems.join(), /^dep-7: more than one execution may install/);
    assert.match(found.problems.join(), /a profile's preload keeps large packages/);
  });
  await Deno.remove(dir, { recursive: true });
});

Deno.test("attack: an index link's text cannot steer where the host writes", async () => {
  const wheel = await buildWheel({ name: "foo", value: 1 });
  const sha = await sha256Hex(wheel.bytes);
  await using index = await hostileSources((path) =>
    path === "/simple/foo/"
      ? new Response(
        `<a href="/f/foo.whl#sha256=${sha}">foo-1/../../poison-9.0-py3-none-any.whl</a>`,
      )
      : path === "/f/foo.whl"
      ? new Response(wheel.bytes)
      : notFound()
  );
  const result = await index.resolve(["foo"]);
  assert.match(result.problems.join(), /foo: .*no wheel on the package index/);
  const written = await Array.fromAsync(Deno.readDir(index.dir));
  assert.ok(written.every((e) => e.name === "cache"), written.map((e) => e.name).join());
  await assert.rejects(Deno.stat(join(index.dir, "cache", "poison-9.0-py3-none-any.whl")));
  assert.ok(!index.seen.includes("/f/foo.whl"), "nothing downloaded");
});

Deno.test("attack: a lock's dependency names cannot send the host to other addresses", async () => {
  const dir = await Deno.makeTempDir();
  const bar = await buildWheel({ name: "bar", value: 1 });
  let elsewhere = 0;
  await using other = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    elsewhere++;
    return new Response("<a href='x'>x</a>");
  });
  const port = other.addr.port;
  await writeDistribution(
    dir,
    await lockText([{
      wheel: bar,
      depends: [`//127.0.0.1:${port}/ssrf`, `http://localhost:${port}/x`],
    }]),
    [bar],
  );
  await using index = await hostileSources(() => notFound(), { lockDir: dir });
  const result = await index.resolve(["bar"]);
  assert.match(result.problems.join(), /\(needed by bar\): not a valid package name/);
  assert.equal(elsewhere, 0);
  assert.ok(index.seen.every((p) => p.startsWith("/simple/")), index.seen.join());
  await Deno.remove(dir, { recursive: true });
});

Deno.test("attack: a wheel cached from the host an index links to needs that host in net", async () => {
  const wheel = await buildWheel({ name: "linked", value: 1 });
  const sha = await sha256Hex(wheel.bytes);
  let port = 0;
  await using index = await hostileSources((path) =>
    path === "/simple/linked/"
      ? new Response(
        `<a href="http://localhost:${port}/f/${wheel.file}#sha256=${sha}">${wheel.file}</a>`,
      )
      : path === `/f/${wheel.file}`
      ? new Response(wheel.bytes)
      : notFound()
  );
  port = index.port;
  const both = [`127.0.0.1:${port}`, `localhost:${port}`];
  assert.deepEqual((await index.resolve(["linked"], both)).problems, []);
  const indexOnly = await index.resolve(["linked"], [`127.0.0.1:${port}`]);
  assert.equal(indexOnly.packages.length, 0, "installed from the cache");
  assert.match(indexOnly.problems.join(), /does not allow the host localhost:\d+ the index links/);
  // Cached without its origin (by an older version): downloaded again, which checks the host.
  await Deno.remove(join(index.dir, "cache", "wheels", `${wheel.file}.origin`));
  const again = await index.resolve(["linked"], [`127.0.0.1:${port}`]);
  assert.match(again.problems.join(), /does not allow the host localhost:\d+ the index links/);
});

Deno.test("attack: an index file without a sha256 is refused", async () => {
  const wheel = await buildWheel({ name: "nosha", value: 1 });
  await using index = await hostileSources((path) =>
    path === "/simple/nosha/"
      ? new Response(`<a href="/f/${wheel.file}">${wheel.file}</a>`)
      : path === `/f/${wheel.file}`
      ? new Response(wheel.bytes)
      : notFound()
  );
  const result = await index.resolve(["nosha"]);
  assert.match(result.problems.join(), /nosha: .*the package index gives no sha256/);
  assert.equal(result.packages.length, 0);
});

Deno.test("attack: a METADATA bomb is refused, not inflated", async () => {
  const dir = await Deno.makeTempDir();
  const bomb = await buildWheel({
    name: "bomb",
    value: 1,
    requires: Array.from({ length: 40_000 }, (_, i) => `x${i % 10}-padding-padding-padding`),
  });
  await Deno.writeFile(join(dir, bomb.file), bomb.bytes);
  const sources = folderSources(dir);
  const result = await sources.resolve(["bomb"], []);
  assert.match(
    result.problems.join(),
    /bomb: bomb-1\.0\.0-py3-none-any\.whl: its METADATA is larger than/,
  );
  await Deno.remove(dir, { recursive: true });
});

Deno.test("attack: giant and slow sources end in a clear refusal", async (t) => {
  await t.step("a lock larger than the cap", async () => {
    await using mirror = await hostileSources((path) =>
      path === "/dist/pyodide-lock.json"
        ? new Response(new Blob([new Uint8Array(17 * 1024 * 1024)]).stream())
        : notFound()
    );
    const result = await mirror.resolve(["anything"]);
    assert.match(result.problems.join(), /anything: .*pyodide-lock\.json is larger than \d+ bytes/);
  });
  await t.step("files that trickle past the resolution's deadline", async () => {
    const wheel = await buildWheel({ name: "slow", value: 1 });
    const lock = await lockText([{ wheel }]);
    await using mirror = await hostileSources(
      (path) =>
        path === "/dist/pyodide-lock.json"
          ? new Response(lock)
          : path === `/dist/${wheel.file}`
          ? new Response(
            new ReadableStream({
              async pull(controller) {
                await new Promise((resolve) => setTimeout(resolve, 400));
                controller.enqueue(new Uint8Array(1));
              },
            }),
          )
          : notFound(),
      { deadlineMs: 1000 },
    );
    const started = performance.now();
    const result = await mirror.resolve(["slow"]);
    assert.match(result.problems.join(), /slow: .*took too long/);
    assert.ok(performance.now() - started < 10_000);
  });
});

Deno.test("attack: a resolution whose caller gave up stops waiting for a mirror's lock", async () => {
  // The lock is one download for every caller, on its own 30 s timeout: a cancelled call (or
  // one the server's stop cancelled) waited it out, holding its turn, and a stopping server
  // closed unanswered (attacker 56).
  const asked = Promise.withResolvers<void>();
  const mirror: typeof fetch = (_input, init) => {
    asked.resolve();
    return new Promise((_, reject) =>
      init?.signal?.addEventListener("abort", () => reject(init.signal!.reason))
    );
  };
  const dir = await Deno.makeTempDir();
  const sources = new PackageSources({
    wheelsDir: "",
    distribution: new PyodideDistribution({
      source: "http://127.0.0.1:9/mirror/",
      pinnedLock: parseLock(JSON.stringify({ info: PLATFORM, packages: {} })),
      cacheDir: join(dir, "pyodide-packages"),
      fetch: mirror,
    }),
    index: null,
    platform: PLATFORM,
  });
  const cancel = new AbortController();
  const pending = sources.resolve(["anything"], ["127.0.0.1:9"], undefined, cancel.signal);
  await asked.promise;
  cancel.abort(new Error("the caller gave up"));
  const found = await pending;
  assert.match(found.problems.join(), /the caller gave up/, "not the lock's own timeout");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("attack: a mirror's package that is no wheel nor zip archive is refused on the host", async () => {
  // Pyodide's lock holds .whl and .zip files; one named .tar (or anything else) reached the
  // sandbox's unpacking, and the execution ended as SANDBOX_CRASHED.
  const dir = await Deno.makeTempDir();
  const wheel = await buildWheel({ name: "tarred", value: 1 });
  const tarred = { ...wheel, file: "tarred-1.0.0.tar" };
  await writeDistribution(join(dir, "mirror"), await lockText([{ wheel: tarred }]), [tarred]);
  const sources = new PackageSources({
    wheelsDir: "",
    distribution: new PyodideDistribution({
      source: join(dir, "mirror"),
      pinnedLock: parseLock(JSON.stringify({ info: PLATFORM, packages: {} })),
      cacheDir: join(dir, "cache"),
    }),
    index: null,
    platform: PLATFORM,
  });
  const found = await sources.resolve(["tarred"], []);
  assert.deepEqual(found.packages, []);
  assert.match(
    found.problems.join(),
    /tarred: .*tarred-1\.0\.0\.tar is not a wheel or a zip archive/,
  );
  // Nor one named as a wheel that is no zip (attacker 62: a tar named .whl still crashed).
  const disguised = { ...wheel, name: "disguised", file: "disguised-1.0.0-py3-none-any.whl" };
  disguised.bytes = new Uint8Array([0x1f, 0x8b, ...wheel.bytes.subarray(2)]);
  await writeDistribution(
    join(dir, "mirror"),
    await lockText([{ wheel: tarred }, { wheel: disguised }]),
    [
      disguised,
    ],
  );
  const named = await sources.resolve(["disguised"], []);
  assert.deepEqual(named.packages, []);
  assert.match(
    named.problems.join(),
    /disguised: .*disguised-1\.0\.0-py3-none-any\.whl is not a zip archive/,
  );
  await Deno.remove(dir, { recursive: true });
});

Deno.test("attack: a package file past 48 MiB in a folder is refused before it is read", async () => {
  // A 400 MiB wheel held the host's thread for 24 s, every client waiting, and took it past 1 GB
  // (attacker 60). Sparse files: their size is what counts, nothing is written.
  const dir = await Deno.makeTempDir();
  const sparse = async (path: string, size: number) => {
    using file = await Deno.open(path, { create: true, write: true });
    await file.truncate(size);
  };
  await Deno.mkdir(join(dir, "wheels"));
  await sparse(join(dir, "wheels", "big-1.0.0-py3-none-any.whl"), 400 * 1024 * 1024);
  const fromFolder = await folderSources(join(dir, "wheels")).resolve(["big"], []);
  assert.match(
    fromFolder.problems.join(),
    /big: big-1\.0\.0-py3-none-any\.whl is 400\.0 MiB, larger than the 48\.0 MiB a package file may be/,
  );
  // The same from a mirror folder, whose lock names it.
  const mirror = join(dir, "mirror");
  const honest = await buildWheel({ name: "huge", value: 1 });
  const sources = new PackageSources({
    wheelsDir: "",
    distribution: new PyodideDistribution({
      source: mirror,
      pinnedLock: parseLock(JSON.stringify({ info: PLATFORM, packages: {} })),
      cacheDir: join(dir, "cache"),
    }),
    index: null,
    platform: PLATFORM,
  });
  // Nor what is no regular file: a link to /dev/zero filled the host's memory (6 GB in 20 s),
  // a FIFO held the call past every deadline (attacker 62).
  const zero = await buildWheel({ name: "zero", value: 1 });
  const fifo = await buildWheel({ name: "fifo", value: 1 });
  await writeDistribution(
    mirror,
    await lockText([{ wheel: honest }, { wheel: zero }, { wheel: fifo }]),
    [],
  );
  await sparse(join(mirror, honest.file), 49 * 1024 * 1024);
  await Deno.symlink("/dev/zero", join(mirror, zero.file));
  const made = await new Deno.Command("mkfifo", { args: [join(mirror, fifo.file)] }).output();
  assert.equal(made.code, 0);
  const special = await sources.resolve(["zero", "fifo"], []);
  assert.match(
    special.problems.join("\n"),
    /zero: .*zero-1\.0\.0-py3-none-any\.whl is not read: it is a symlink/,
  );
  assert.match(
    special.problems.join("\n"),
    /fifo: .*fifo-1\.0\.0-py3-none-any\.whl is not read: it is not a regular file/,
  );
  const fromMirror = await sources.resolve(["huge"], []);
  // The mirror's lock too: a link to /dev/zero in its place is not read.
  const linked = join(dir, "linked");
  await Deno.mkdir(linked);
  await Deno.symlink("/dev/zero", join(linked, "pyodide-lock.json"));
  const linkedLock = await new PackageSources({
    wheelsDir: "",
    distribution: new PyodideDistribution({
      source: linked,
      pinnedLock: parseLock(JSON.stringify({ info: PLATFORM, packages: {} })),
      cacheDir: join(dir, "cache"),
    }),
    index: null,
    platform: PLATFORM,
  }).resolve(["anything"], []);
  assert.match(
    linkedLock.problems.join(),
    /its pyodide-lock\.json cannot be read \(.* is a symlink\)/,
  );
  assert.match(
    fromMirror.problems.join(),
    /huge: .*huge-1\.0\.0-py3-none-any\.whl is 49\.0 MiB, larger than/,
  );
  await Deno.remove(dir, { recursive: true });
});
