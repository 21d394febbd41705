import assert from "node:assert/strict";
import { join } from "node:path";
import { silentLogger } from "../src/_util/log.ts";
import { clearSharedWriteModes, watchSharedModes } from "../src/execution/shared_write_modes.ts";
import { hostOwner } from "../src/_util/host_owner.ts";

const modeOf = (path: string) => Deno.statSync(path).mode! & 0o777;

Deno.test("clearSharedWriteModes() takes back what a run shared, and closes a folder it cannot walk", async (t) => {
  const root = await Deno.makeTempDir();
  Deno.chmodSync(root, 0o755); // as a person's folder may be
  const folders = [{ host: root, mount: "/w", mode: "rw" as const }];
  await t.step(
    "entries changed in the run lose group and world write; others keep theirs",
    async () => {
      Deno.writeTextFileSync(join(root, "theirs.txt"), "x");
      Deno.chmodSync(join(root, "theirs.txt"), 0o666);
      await new Promise((r) => setTimeout(r, 2100)); // changes in the second before count
      const since = new Date();
      Deno.mkdirSync(join(root, "sub"));
      Deno.writeTextFileSync(join(root, "sub", "mine.txt"), "x");
      Deno.chmodSync(join(root, "sub", "mine.txt"), 0o777);
      Deno.chmodSync(join(root, "sub"), 0o777);
      Deno.writeTextFileSync(join(root, "sub", "setuid"), "x");
      Deno.chmodSync(join(root, "sub", "setuid"), 0o6755);
      await clearSharedWriteModes({ folders }, since, silentLogger, { maxEntries: 100 });
      assert.equal(modeOf(join(root, "sub", "mine.txt")), 0o755);
      assert.equal(modeOf(join(root, "sub")), 0o755);
      assert.equal(Deno.statSync(join(root, "sub", "setuid")).mode! & 0o7777, 0o755, "setuid");
      assert.equal(modeOf(join(root, "theirs.txt")), 0o666);
      assert.equal(modeOf(root) & 0o077, 0o755 & 0o077, "the folder itself is left open");
    },
  );
  await t.step(
    "a folder with more entries than it looks at is closed to group and others",
    async () => {
      Deno.chmodSync(root, 0o755);
      const since = new Date();
      // Listed before what the attacker shared: the walk never reaches it.
      for (let i = 0; i < 20; i++) Deno.writeTextFileSync(join(root, `filler${i}`), "");
      Deno.writeTextFileSync(join(root, "zz_shared.txt"), "x");
      Deno.chmodSync(join(root, "zz_shared.txt"), 0o777);
      await clearSharedWriteModes({ folders }, since, silentLogger, { maxEntries: 10 });
      assert.equal(modeOf(root) & 0o077, 0, "nobody else can reach what was not checked");
    },
  );
  await t.step(
    "a folder with a subfolder it cannot list is closed to group and others, the rest cleared",
    async () => {
      Deno.chmodSync(root, 0o755);
      const since = new Date();
      // As a script can leave it (chmod 0o100): a server not running as root cannot list it.
      Deno.mkdirSync(join(root, "locked"));
      Deno.writeTextFileSync(join(root, "open.txt"), "x");
      Deno.chmodSync(join(root, "open.txt"), 0o666);
      const readDir = (path: string) => {
        if (path.endsWith("/locked")) throw new Deno.errors.PermissionDenied("readdir");
        return Deno.readDir(path);
      };
      await clearSharedWriteModes({ folders }, since, silentLogger, {
        fs: { lstat: Deno.lstat, readDir },
      });
      assert.equal(modeOf(root) & 0o077, 0, "what is in the locked folder stays unreachable");
      assert.equal(modeOf(join(root, "open.txt")), 0o644, "the walk went on past it");
    },
  );
  await t.step(
    "what a walk could not reach is checked by the next sweep of that folder, whatever run it follows",
    async () => {
      const root = Deno.makeTempDirSync();
      Deno.chmodSync(root, 0o755);
      const folders = [{ host: root, mount: "/w", mode: "rw" as const }];
      const state = { uncheckedSince: new Map<string, number>(), running: new Map() };
      const since = new Date();
      Deno.mkdirSync(join(root, "d"));
      Deno.writeTextFileSync(join(root, "d", "prog"), "#!/bin/sh\n");
      Deno.chmodSync(join(root, "d", "prog"), 0o6777);
      for (let i = 0; i < 20; i++) Deno.writeTextFileSync(join(root, "d", `f${i}`), "");
      await clearSharedWriteModes({ folders }, since, silentLogger, { maxEntries: 10, state });
      assert.equal(modeOf(root) & 0o077, 0, "closed, as it could not be walked");
      // A later run makes the folder walkable and opens it again.
      for (let i = 0; i < 20; i++) Deno.removeSync(join(root, "d", `f${i}`));
      Deno.chmodSync(root, 0o755);
      await new Promise((r) => setTimeout(r, 2100));
      await clearSharedWriteModes({ folders }, new Date(), silentLogger, {
        maxEntries: 10,
        state,
      });
      assert.equal(Deno.statSync(join(root, "d", "prog")).mode! & 0o7777, 0o755);
      assert.equal(state.uncheckedSince.size, 0, "walked to the end: nothing left to check");
      Deno.removeSync(root, { recursive: true });
    },
  );
  await t.step(
    "a run that ends while another runs in the folder leaves what changed to the last one's sweep",
    async () => {
      const root = Deno.makeTempDirSync();
      Deno.chmodSync(root, 0o755);
      const profile = { folders: [{ host: root, mount: "/w", mode: "rw" as const }] };
      const state = { uncheckedSince: new Map<string, number>(), running: new Map() };
      // The second run moves d away just as the first one's walk would reach it.
      const lstat = (path: string) =>
        path.endsWith("/d") ? Promise.reject(new Deno.errors.NotFound(path)) : Deno.lstat(path);
      const first = watchSharedModes(profile, { state, fs: { lstat, readDir: Deno.readDir } });
      Deno.mkdirSync(join(root, "d"));
      Deno.writeTextFileSync(join(root, "d", "prog"), "#!/bin/sh\n");
      Deno.chmodSync(join(root, "d", "prog"), 0o6777);
      await new Promise((r) => setTimeout(r, 2100));
      const second = watchSharedModes(profile, { state });
      await first.sweep(silentLogger);
      assert.equal(Deno.statSync(join(root, "d", "prog")).mode! & 0o7777, 0o6777, "not reached");
      await second.sweep(silentLogger);
      assert.equal(Deno.statSync(join(root, "d", "prog")).mode! & 0o7777, 0o755);
      assert.equal(state.running.size, 0);
      Deno.removeSync(root, { recursive: true });
    },
  );
  await Deno.remove(root, { recursive: true });
});

Deno.test("clearSharedWriteModes() takes back what a run gave another user, and the links they made", async () => {
  const root = Deno.realPathSync(await Deno.makeTempDir());
  const outside = await Deno.makeTempDir();
  const folders = [{ host: root, mount: "/w", mode: "rw" as const }];
  const owner = hostOwner(root);
  assert.ok(owner, "the server's ids are read from a file it makes");
  assert.deepEqual([...Deno.readDirSync(root)], [], "and the file is gone");
  const firstStart = hostOwner(join(outside, "cache-not-made-yet"));
  assert.deepEqual(firstStart, owner, "known on a first start too, before the cache exists");
  Deno.symlinkSync(outside, join(root, "theirs_before"));
  await new Promise((r) => setTimeout(r, 2100)); // changes in the second before count
  const since = new Date();
  Deno.mkdirSync(join(root, "given"));
  // As another user would, in a folder given to them: links out, and one inside; and a link
  // whose text stays inside but climbs out through another link (to the folder itself).
  Deno.symlinkSync(outside, join(root, "given", "out"));
  Deno.symlinkSync("../given", join(root, "given", "in"));
  Deno.mkdirSync(join(root, "given", "a1", "a2"), { recursive: true });
  Deno.symlinkSync(root, join(root, "given", "a1", "a2", "t"));
  const depth = root.split("/").filter(Boolean).length; // t/.. climbs above the folder
  const climbs = "a1/a2/t/" + "../".repeat(depth) + outside.split("/").filter(Boolean).join("/");
  Deno.symlinkSync(climbs, join(root, "given", "climbs"));
  assert.equal(Deno.realPathSync(join(root, "given", "climbs")), outside, "it does lead out");
  // Through a link another user holds, back inside when the sweep looks: they could point it
  // at the server's own files afterwards, for every later sandbox (attacker round 46).
  Deno.writeTextFileSync(join(root, "given", "file"), "x");
  Deno.symlinkSync(join(root, "given", "file"), join(outside, "relay"));
  Deno.symlinkSync(join(outside, "relay"), join(root, "given", "via"));
  assert.equal(Deno.realPathSync(join(root, "given", "via")), join(root, "given", "file"));
  // Only root may give a file away (as the script of a server running as root could).
  if (Deno.uid() === 0) Deno.chownSync(join(root, "given"), 65534, 65534);
  await clearSharedWriteModes({ folders }, since, silentLogger, { maxEntries: 100, owner });
  assert.equal(Deno.lstatSync(join(root, "given")).uid, owner!.uid, "given back");
  assert.throws(() => Deno.lstatSync(join(root, "given", "out")), Deno.errors.NotFound);
  assert.throws(() => Deno.lstatSync(join(root, "given", "climbs")), Deno.errors.NotFound);
  assert.throws(() => Deno.lstatSync(join(root, "given", "via")), Deno.errors.NotFound);
  assert.ok(Deno.lstatSync(join(root, "given", "in")).isSymlink, "a link inside stays");
  assert.ok(Deno.lstatSync(join(root, "theirs_before")).isSymlink, "one made before the run stays");
  await Deno.remove(root, { recursive: true });
  await Deno.remove(outside, { recursive: true });
});
