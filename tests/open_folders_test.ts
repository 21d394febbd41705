/**
 * A read-write folder other local users can reach is named at start: a script can open it to
 * them for a run, and what they do then can outlast the run (attacker round 47).
 */
import assert from "node:assert/strict";
import { closedAbove } from "../src/sandbox/open_folders.ts";
import { startServer, writeConfig } from "./_helpers.ts";

Deno.test("closedAbove() finds a folder above that the group and others cannot enter", () => {
  const modes: Record<string, { mode: number; uid: number }> = {
    "/": { mode: 0o40755, uid: 0 },
    "/home": { mode: 0o40755, uid: 0 },
    "/home/me": { mode: 0o40700, uid: 1000 },
    "/home/me/ws": { mode: 0o40777, uid: 1000 },
    "/srv": { mode: 0o40710, uid: 0 },
    "/srv/ws": { mode: 0o40700, uid: 1000 },
    "/tmp": { mode: 0o41777, uid: 0 },
    "/tmp/ws": { mode: 0o40700, uid: 1000 },
    "/other": { mode: 0o40700, uid: 2000 },
  };
  const lstat = (path: string) => {
    const found = modes[path];
    if (!found) throw new Deno.errors.NotFound(path);
    return found;
  };
  assert.equal(closedAbove("/home/me/ws", 1000, lstat), true, "the home folder is closed");
  assert.equal(closedAbove("/srv/ws", 1000, lstat), false, "the group may enter /srv");
  assert.equal(closedAbove("/tmp/ws", 1000, lstat), false, "its own mode is the script's");
  assert.equal(closedAbove("/other/ws", 1000, lstat), false, "another user's folder");
  assert.equal(closedAbove("/missing/ws", 1000, lstat), false, "unknown: not closed");
  // Closed, but in another profile's read-write folder: a script of that profile can open it.
  assert.equal(closedAbove("/home/me/ws", 1000, lstat, ["/home/me"]), false);
  assert.equal(closedAbove("/home/me/ws", 1000, lstat, ["/home/other"]), true);
});

Deno.test("a read-write folder other users can reach is named at start, a closed one not", async () => {
  const closed = Deno.realPathSync(await Deno.makeTempDir()); // 0700
  const open = Deno.realPathSync(await Deno.makeTempDir());
  await Deno.chmod(open, 0o755); // and /tmp above it is open to all
  for (const root of [closed, open]) await Deno.mkdir(`${root}/ws`);
  await Deno.mkdir(`${closed}/permissions`);
  await Deno.writeTextFile(`${closed}/permissions/default.json`, "{}");
  for (const [name, root] of [["inside", closed], ["outside", open]]) {
    await Deno.writeTextFile(
      `${closed}/permissions/${name}.json`,
      JSON.stringify({ folders: [{ host: `${root}/ws`, mount: "/ws", mode: "rw" }] }),
    );
  }
  const config = await writeConfig(closed, {
    settings: { pool_size: 0, permissions_dir: `${closed}/permissions` },
  });
  {
    await using server = await startServer({ args: ["--config", config] });
    await server.client.listTools();
    const warned = server.stderr().split("\n").filter((line) =>
      line.includes("a read-write folder other local users can reach")
    );
    assert.equal(warned.length, 1, server.stderr());
    assert.ok(warned[0]!.includes(`${open}/ws`), warned[0]);
    assert.ok(warned[0]!.includes('profile "outside"'), warned[0]);
  }
  await Deno.remove(closed, { recursive: true });
  await Deno.remove(open, { recursive: true });
});
