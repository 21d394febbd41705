/** The cache folder must be one no other local user can write, move or replace. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { lchown } from "node:fs/promises";
import { foldersAboveProblem, privateFolderProblem } from "../src/sandbox/private_folder.ts";
import { ensureSnapshot } from "../src/sandbox/snapshot.ts";
import { locateRuntime } from "../src/sandbox/runtime.ts";
import { silentLogger } from "../src/_util/log.ts";
import { childEnv, MAIN, ROOT, SERVE_FLAGS } from "./_helpers.ts";

Deno.test("attack: privateFolderProblem() refuses a folder others could write, move or replace", async (t) => {
  const base = await Deno.makeTempDir(); // 0700, in sticky /tmp
  const me = (await Deno.lstat(base)).uid!;
  const folder = join(base, "cache");
  await Deno.mkdir(folder);
  await Deno.chmod(folder, 0o755);

  await t.step("the user's own folder, closed to writes by others, is fine", async () => {
    assert.equal(await privateFolderProblem(folder, me), null);
  });
  await t.step("one that others can write is refused", async () => {
    await Deno.chmod(folder, 0o777);
    assert.match(
      (await privateFolderProblem(folder, me))!,
      /other users can write .* \(mode 777\)/,
    );
    await Deno.chmod(folder, 0o775);
    assert.match((await privateFolderProblem(folder, me))!, /other users can write/);
    await Deno.chmod(folder, 0o755);
  });
  await t.step("another user's folder is refused", async () => {
    assert.match((await privateFolderProblem(folder, me + 1))!, /belongs to another user/);
  });
  await t.step("a folder above it that others can write, not sticky, is refused", async () => {
    await Deno.chmod(base, 0o777);
    assert.match((await privateFolderProblem(folder, me))!, /another user can move/);
    await Deno.chmod(base, 0o1777); // sticky, like /tmp: no one moves another's entries
    assert.equal(await privateFolderProblem(folder, me), null);
    await Deno.chmod(base, 0o700);
  });
  await t.step(
    "a folder above it that another user owns is refused, whatever its mode",
    async () => {
      // Its owner may rename the cache folder away and put their own in its place. As root, the
      // folder above is given to nobody; otherwise the server is said to be another user.
      const root = me === 0;
      if (root) await Deno.chown(base, 65534, null);
      await Deno.chmod(base, 0o755);
      const server = root ? me : me + 1;
      const above = (await privateFolderProblem(folder, root ? me : undefined)) ??
        (await foldersAboveProblem(folder, server));
      assert.match(above!, /another user \(uid \d+\) can move .* is theirs/);
      if (root) await Deno.chown(base, 0, null);
      assert.equal(await privateFolderProblem(folder, me), null);
      await Deno.chmod(base, 0o700);
    },
  );
  await t.step(
    "a folder above it not made yet, where others could make it first, is refused",
    async () => {
      // In a sticky folder anyone may make `team`, as theirs, before the server makes it.
      const sticky = join(base, "sticky");
      await Deno.mkdir(sticky, { mode: 0o1777 });
      await Deno.chmod(sticky, 0o1777);
      assert.match(
        (await foldersAboveProblem(join(sticky, "team", "cache"), me))!,
        /another user could make .*\/sticky\/team first, as theirs, in .*\/sticky \(mode 1777\)/,
      );
      // The cache folder itself may be made there: one someone else made is theirs, and refused.
      assert.equal(await foldersAboveProblem(join(sticky, "cache"), me), null);
      await Deno.chmod(sticky, 0o755);
      assert.equal(await foldersAboveProblem(join(sticky, "team", "cache"), me), null);
      await Deno.remove(sticky);
    },
  );
  await t.step("the server will not boot sandboxes from such a cache folder", async () => {
    await Deno.chmod(folder, 0o777);
    await assert.rejects(
      ensureSnapshot(locateRuntime(folder), silentLogger),
      /Cannot use the cache folder: other users can write .*CODEMODE_CACHE_DIR/,
    );
    assert.deepEqual([...Deno.readDirSync(folder)], [], "nothing was built or read there");
  });
  await Deno.remove(base, { recursive: true });
});

Deno.test("attack: serve refuses a cache folder under one others can rename things in", async () => {
  const base = await Deno.makeTempDir();
  await Deno.chmod(base, 0o777); // not sticky: anyone may move the cache folder away
  const cache = join(base, "cache");
  await serveRefuses(cache, /Cannot use the cache folder: another user can move .* \(mode 777\)/);
  // A folder above the cache not made yet, in a sticky one: another user could make it first.
  await Deno.chmod(base, 0o1777);
  await serveRefuses(join(base, "team", "cache"), /another user could make .*\/team first/);
  if (Deno.uid() === 0) {
    // Another user's folder: its owner may rename what is in it, whatever its mode; told so
    // when the client starts the server without PATH too.
    await Deno.chmod(base, 0o755);
    await Deno.chown(base, 65534, null);
    await serveRefuses(cache, /Cannot use the cache folder: another user \(uid 65534\)/);
    await serveRefuses(cache, /Cannot use the cache folder: another user \(uid 65534\)/, {
      PATH: "",
    });
  }
  await Deno.remove(base, { recursive: true });
});

Deno.test("attack: a cache folder the server cannot write is refused, and one another user made first is refused before the host starts", async () => {
  if (Deno.uid() !== 0) return; // an immutable folder and another user's take root
  const base = await Deno.makeTempDir();
  const cache = join(base, "cache");
  await Deno.mkdir(cache, { mode: 0o700 });
  const immutable = (on: boolean) =>
    new Deno.Command("chattr", { args: [on ? "+i" : "-i", cache] }).output();
  if (!(await immutable(true)).success) return; // a file system without the attribute
  try {
    // The server's user is told by a file it makes there: it cannot, so it is not its folder.
    await assert.rejects(
      ensureSnapshot(locateRuntime(cache), silentLogger),
      /Cannot use the cache folder: this server's user cannot write .*cache/,
    );
    // Another user's folder (made first in a shared one): the launcher refuses it, by its owner,
    // before the host (which could only say it cannot write there) starts.
    await immutable(false);
    await Deno.chown(cache, 65534, null);
    await Deno.chmod(cache, 0o755);
    await immutable(true);
    await serveRefuses(
      cache,
      /Cannot use the cache folder: .*cache belongs to another user \(uid 65534\)/,
    );
  } finally {
    await immutable(false);
    await Deno.remove(base, { recursive: true });
  }
});

Deno.test("attack: serve refuses a relative cache folder (sandboxes run in /, where it names another)", async () => {
  await serveRefuses(
    "tmp/codemode-cache",
    /Cannot use the cache folder: CODEMODE_CACHE_DIR is "tmp\/codemode-cache", not an absolute path/,
  );
});

Deno.test("attack: a symlink above the cache folder counts as its owner's, and leads to folders that count too", async () => {
  if (Deno.uid() !== 0) return; // giving a symlink to another user takes root
  const base = await Deno.makeTempDir(); // root's, 0700
  const sticky = join(base, "sticky");
  await Deno.mkdir(sticky, { mode: 0o1777 });
  await Deno.chmod(sticky, 0o1777); // like /tmp
  const rootReal = join(base, "root_real");
  await Deno.mkdir(join(rootReal, "cache"), { recursive: true });
  // nobody's symlink in the sticky folder, to a root folder: nobody may swap it for a folder.
  await Deno.symlink(rootReal, join(sticky, "link"));
  await lchown(join(sticky, "link"), 65534, 0);
  assert.match(
    (await privateFolderProblem(join(sticky, "link", "cache"), 0))!,
    /another user \(uid 65534\) can move .*\/link is theirs/,
  );
  // root's symlink to a folder inside nobody's: the real path's folders are walked too.
  const nobodys = join(base, "nobodys");
  await Deno.mkdir(join(nobodys, "real", "cache"), { recursive: true });
  await Deno.chown(nobodys, 65534, null);
  await Deno.symlink(join(nobodys, "real"), join(base, "rootlink"));
  assert.match(
    (await privateFolderProblem(join(base, "rootlink", "cache"), 0))!,
    /another user \(uid 65534\) can move .*\/nobodys is theirs/,
  );
  // A symlink reached through another's target: nobody's, in the sticky folder.
  await Deno.mkdir(join(base, "rootdir"));
  await Deno.symlink(join(sticky, "l2"), join(base, "rootdir", "l1"));
  await Deno.symlink(rootReal, join(sticky, "l2"));
  await lchown(join(sticky, "l2"), 65534, 0);
  assert.match(
    (await foldersAboveProblem(join(base, "rootdir", "l1", "cache"), 0))!,
    /another user \(uid 65534\) can move .*\/l2 is theirs/,
  );
  // And a cache folder not made yet, below that symlink.
  assert.match(
    (await foldersAboveProblem(join(base, "rootlink", "new", "cache"), 0))!,
    /nobodys is theirs/,
  );
  await Deno.remove(base, { recursive: true });
});

async function serveRefuses(
  cache: string,
  refusal: RegExp,
  env: Record<string, string> = {},
): Promise<void> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...SERVE_FLAGS,
      MAIN,
      "serve",
      "--config",
      `${ROOT}tests/fixtures/no_servers.json`,
    ],
    env: { ...childEnv(), CODEMODE_CACHE_DIR: cache, ...env },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 1, stderr);
  assert.match(stderr, refusal);
  assert.equal(out.stdout.length, 0, "nothing on the protocol channel");
}
