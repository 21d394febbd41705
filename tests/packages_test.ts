/**
 * Python packages from a local wheel folder. The wheel is built by the test itself (inside a
 * sandbox, with Python's zipfile); nothing reaches the network.
 */
import assert from "node:assert/strict";
import { normalizeName, parseWheelName, scriptDependencies } from "../src/packages/wheels.ts";
import { delay, ROOT, startServer, writeConfig } from "./_helpers.ts";
import { defaultCacheDir } from "../src/sandbox/runtime.ts";
import { download } from "../src/packages/capped_download.ts";
import {
  OFFICIAL_DISTRIBUTION,
  PyodideDistribution,
} from "../src/packages/pyodide_distribution.ts";

Deno.test("wheel names and PEP 723 blocks are read correctly", () => {
  assert.equal(normalizeName("Tiny_Math.Utils"), "tiny-math-utils");
  assert.deepEqual(parseWheelName("tiny_math-1.2.0-py3-none-any.whl"), {
    distribution: "tiny-math",
    version: "1.2.0",
    file: "tiny_math-1.2.0-py3-none-any.whl",
    python: "py3",
    abi: "none",
    platform: "any",
  });
  assert.equal(
    parseWheelName("numpy-2.0.0-cp312-cp312-manylinux_x86_64.whl")?.platform,
    "manylinux_x86_64",
  );
  assert.equal(parseWheelName("not-a-wheel.tar.gz"), null);
  assert.deepEqual(
    scriptDependencies(
      '# /// script\n# dependencies = [\n#   "tinymath>=1",\n#   "other[extra]",\n# ]\n# ///\nprint(1)',
    ),
    ["tinymath", "other"],
  );
  assert.deepEqual(scriptDependencies("print('no block')"), []);
  // U+2028 ends no line for Python: a block spelt with it inside a string is no block.
  assert.deepEqual(
    scriptDependencies(
      "x = '\u2028# /// script\u2028# dependencies = [\"evil\"]\u2028# ///\u2028'",
    ),
    [],
  );
  assert.deepEqual(
    scriptDependencies('# /// script\r\n# dependencies = ["crlf"]\r\n# ///\r\n'),
    ["crlf"],
  );
});

const BUILD_WHEEL = `
import zipfile
with zipfile.ZipFile("outputs/tinymath-1.0.0-py3-none-any.whl", "w") as whl:
    whl.writestr("tinymath/__init__.py", "def double(x):\\n    return 2 * x\\n")
    whl.writestr("tinymath-1.0.0.dist-info/METADATA", "Metadata-Version: 2.1\\nName: tinymath\\nVersion: 1.0.0\\n")
    whl.writestr("tinymath-1.0.0.dist-info/WHEEL", "Wheel-Version: 1.0\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
    whl.writestr("tinymath-1.0.0.dist-info/RECORD", "")
"built"
`;

Deno.test("attack: a download error names no token written in the index URL's user info or query", async () => {
  const fetches: string[] = [];
  for (
    const answer of [
      () => Promise.reject(new TypeError("fetch failed")),
      () => Promise.resolve(new Response("no", { status: 403 })),
    ]
  ) {
    const failed = await download(
      new URL("https://__token__:pypi-TopSecret1@index.example/simple/pkg/?key=TopSecret2"),
      1000,
      { fetch: (url) => (fetches.push(String(url)), answer()) },
    ).then(() => "", (error) => (error as Error).message);
    assert.match(
      failed,
      /^https:\/\/index\.example\/simple\/pkg\/\?… (cannot be reached|answered 403)/,
    );
    assert.doesNotMatch(failed, /TopSecret/);
  }
  // The request itself still carries them.
  assert.match(fetches[0]!, /__token__:pypi-TopSecret1@.*key=TopSecret2/);
  // A token as a path segment (an index's documented form), and a Pyodide mirror's user info.
  const inPath = await download(
    new URL("https://pypi.example/1a2B3c4D5e6F7g8H9i0JkLmN/acme/pkg/"),
    1000,
    { fetch: () => Promise.resolve(new Response("no", { status: 503 })) },
  ).then(() => "", (error) => (error as Error).message);
  assert.equal(inPath, "https://pypi.example/…/acme/pkg/ answered 503");
  const mirror = new PyodideDistribution({
    source: "https://deploy:S3cretMirrorPw@mirror.example/pyodide/",
    pinnedLock: { info: {}, packages: {} } as never,
    cacheDir: "/nonexistent",
  });
  assert.equal(mirror.where, "Pyodide's packages at https://mirror.example/pyodide/");
  // Pyodide's own list is the lock it ships: a message does not read as if looked up online.
  const official = new PyodideDistribution({
    source: OFFICIAL_DISTRIBUTION,
    pinnedLock: { info: {}, packages: {} } as never,
    cacheDir: "/nonexistent",
  });
  assert.match(official.where, /^Pyodide [\d.]+'s own package set \(files from https:/);
});

Deno.test("scripts install pure-Python wheels from the local folder", async (t) => {
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(`${dir}/wheels`);
  const config = await writeConfig(dir, {
    settings: { pool_size: 1, wheels_dir: "wheels", permissions_dir: `${ROOT}permissions` },
  });
  await using server = await startServer({ args: ["--config", config] });

  await t.step("a wheel built in a sandbox lands in the wheel folder", async () => {
    const reply = await server.client.callTool({
      name: "execute_code",
      arguments: { code: BUILD_WHEEL },
    });
    const image = (reply.content as { type: string; resource?: { blob?: string; uri: string } }[])
      .find((c) => c.resource?.uri.endsWith(".whl"));
    assert.ok(image?.resource?.blob, JSON.stringify(reply).slice(0, 400));
    await Deno.writeFile(
      `${dir}/wheels/tinymath-1.0.0-py3-none-any.whl`,
      Uint8Array.from(atob(image.resource.blob), (c) => c.charCodeAt(0)),
    );
  });

  await t.step("packages installs it before the script runs", async () => {
    const r = await server.execute(
      { code: "import tinymath\ntinymath.double(21)", packages: ["TinyMath"] } as never,
    );
    assert.equal(r.success, true, r.text);
    assert.equal(r.result, 42);
  });

  await t.step("a name with a version constraint or extras is taken as its name", async () => {
    for (const name of ["tinymath>=0.5", "TinyMath[fast] ==1.0"]) {
      const r = await server.execute(
        { code: "import tinymath\ntinymath.double(2)", packages: [name] } as never,
      );
      assert.equal(r.result, 4, `${name}: ${r.text}`);
    }
  });

  await t.step("so does a PEP 723 block", async () => {
    const r = await server.execute({
      code:
        '# /// script\n# dependencies = ["tinymath"]\n# ///\nfrom tinymath import double\ndouble(5)',
    });
    assert.equal(r.result, 10, r.text);
  });

  await t.step("without it, the package is not there", async () => {
    const r = await server.execute({ code: "import tinymath" });
    assert.equal(r.diagnostics?.error_type, "ModuleNotFoundError");
  });

  await t.step("a missing package is a clear error before anything runs", async () => {
    const r = await server.execute(
      { code: "print('ran')", packages: ["no-such-package"] } as never,
    );
    assert.equal(r.diagnostics?.error_type, "PACKAGE_UNAVAILABLE");
    assert.match(
      r.diagnostics!.message,
      /no-such-package: not in the local wheel folder .*no package index is configured/,
    );
    assert.equal(r.stdout, "");
  });
  await Deno.remove(dir, { recursive: true });
});

/** A wheel of a package named `name` (built in a sandbox with Python's zipfile). */
async function buildWheel(server: Awaited<ReturnType<typeof startServer>>, name: string) {
  const file = `${name}-1.0.0-py3-none-any.whl`;
  const code = BUILD_WHEEL.replaceAll("tinymath", name);
  const reply = await server.client.callTool({ name: "execute_code", arguments: { code } });
  const resource = (reply.content as { resource?: { blob?: string; uri: string } }[])
    .find((c) => c.resource?.uri.endsWith(".whl"))!.resource!;
  return {
    file,
    bytes: Uint8Array.from(atob(resource.blob!), (c) => c.charCodeAt(0)) as Uint8Array<ArrayBuffer>,
  };
}

Deno.test("packages come from a package index only for profiles that allow its host", async (t) => {
  const name = `idxpkg_${crypto.randomUUID().slice(0, 8)}`;
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(`${dir}/permissions`);
  await Deno.writeTextFile(`${dir}/permissions/default.json`, "{}");
  let wheel: { file: string; bytes: Uint8Array<ArrayBuffer> } | null = null;
  let downloads = 0;
  const requests: string[] = [];
  const givenUp: string[] = [];
  await using index = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      const path = new URL(request.url).pathname;
      requests.push(path);
      if (wheel && path === `/simple/${name.replaceAll("_", "-")}/`) {
        const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", wheel.bytes));
        const sha = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
        return new Response(
          `<html><body><a href="/files/${wheel.file}#sha256=${sha}">${wheel.file}</a></body></html>`,
        );
      }
      if (wheel && path === `/files/${wheel.file}`) {
        downloads++;
        return new Response(wheel.bytes);
      }
      if (path.startsWith("/simple/hang-")) {
        // Never answers: waits until the host gives up on the request.
        await new Promise((given) => request.signal.addEventListener("abort", given));
        givenUp.push(path);
        return new Response("gone", { status: 500 });
      }
      return new Response("not found", { status: 404 });
    },
  );
  const port = index.addr.port;
  await Deno.writeTextFile(
    `${dir}/permissions/indexed.json`,
    JSON.stringify({ net: [`127.0.0.1:${port}`] }),
  );
  const config = await writeConfig(dir, {
    settings: {
      pool_size: 1,
      permissions_dir: "permissions",
      package_index: `http://127.0.0.1:${port}/simple/`,
    },
  });
  await using server = await startServer({ args: ["--config", config] });
  wheel = await buildWheel(server, name);
  const use = (profile?: string) =>
    server.execute(
      { code: `import ${name}\n${name}.double(4)`, packages: [name], profile } as never,
    );

  await t.step("a profile without the index host gets a clear refusal", async () => {
    const r = await use();
    assert.equal(r.diagnostics?.error_type, "PACKAGE_UNAVAILABLE");
    assert.match(
      r.diagnostics!.message,
      /the profile does not allow the package index host 127\.0\.0\.1:\d+.*"net" list, in permissions\/default\.json/,
    );
    assert.equal(downloads, 0);
  });
  await t.step(
    "a profile that allows it installs from the index, checked against its sha256",
    async () => {
      const r = await use("indexed");
      assert.equal(r.result, 8, r.text);
      assert.equal(downloads, 1);
    },
  );
  await t.step("the second run uses the host's cache", async () => {
    const r = await use("indexed");
    assert.equal(r.result, 8, r.text);
    assert.equal(downloads, 1);
  });
  await t.step("the cache does not open the index to a profile without its host", async () => {
    const r = await use();
    assert.equal(r.diagnostics?.error_type, "PACKAGE_UNAVAILABLE", r.text);
    assert.match(r.diagnostics!.message, /does not allow the package index host/);
  });
  await t.step("a package name that is not a name sends the host nowhere", async () => {
    const seen = requests.length;
    for (
      const bad of [
        `//127.0.0.1:${port}/steal`,
        `//2130706433:${port}/steal`,
        "../../../etc/passwd",
        "name with spaces",
        "-leading-dash",
      ]
    ) {
      // Beside a good name: nothing of the request is fetched, not even the good one.
      const names = [bad, "good-name"];
      for (const request of [{ packages: names }, { pep723: bad }]) {
        const code = "pep723" in request
          ? `# /// script\n# dependencies = ${JSON.stringify(names)}\n# ///\nprint(1)`
          : "print(1)";
        const r = await server.execute(
          {
            code,
            packages: "packages" in request ? request.packages : undefined,
            profile: "indexed",
          } as never,
        );
        assert.equal(r.diagnostics?.error_type, "PACKAGE_UNAVAILABLE", `${bad}: ${r.text}`);
        assert.match(r.diagnostics!.message, /not a valid package name/);
      }
    }
    assert.deepEqual(requests.slice(seen), []);
  });
  await t.step(
    "attack: a call cancelled while its packages resolve stops fetching them at once",
    async () => {
      // Each index page may take 30 s; a cancelled call went on fetching its packages' pages,
      // holding its turn, for up to the resolution's 180 s (attacker 55).
      const cancel = new AbortController();
      const call = server.client.callTool(
        {
          name: "execute_code",
          arguments: { code: "1", packages: ["hang-one", "hang-two"], profile: "indexed" },
        },
        undefined,
        { signal: cancel.signal, timeout: 120_000 },
      );
      while (!requests.includes("/simple/hang-one/")) await delay(50);
      cancel.abort();
      await assert.rejects(call);
      // Well under the 30 s a page may take, after which the host would give up on its own.
      for (let i = 0; i < 400 && givenUp.length === 0; i++) await delay(50);
      assert.deepEqual(givenUp, ["/simple/hang-one/"], "the page's request was given up on");
      const after = await server.execute({ code: "2" });
      assert.equal(after.result, 2, after.text);
      assert.ok(!requests.includes("/simple/hang-two/"), "nothing more was fetched");
    },
  );
  await Deno.remove(`${defaultCacheDir()}/wheels/${wheel.file}`).catch(() => {});
  await Deno.remove(`${defaultCacheDir()}/wheels/${wheel.file}.origin`).catch(() => {});
  await Deno.remove(dir, { recursive: true });
});
