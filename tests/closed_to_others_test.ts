/** A folder built by untrusted code, closed to other local users before sandboxes mount it. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { closeToOthers, isClosedToOthers } from "../src/sandbox/closed_to_others.ts";

async function openTree(): Promise<string> {
  const root = await Deno.makeTempDir();
  await Deno.chmod(root, 0o755);
  await Deno.mkdir(join(root, "pkg", "open"), { recursive: true });
  await Deno.writeTextFile(join(root, "pkg", "mod.py"), "X = 1\n");
  await Deno.chmod(join(root, "pkg", "mod.py"), 0o666);
  await Deno.writeTextFile(join(root, "pkg", "tool"), "#!/bin/sh\n");
  await Deno.chmod(join(root, "pkg", "tool"), 0o4777);
  await Deno.chmod(join(root, "pkg", "open"), 0o1777);
  await Deno.symlink("/etc", join(root, "pkg", "out"));
  return root;
}

function modes(root: string): Record<string, string> {
  const seen: Record<string, string> = {};
  const look = (path: string) => {
    const info = Deno.lstatSync(path);
    seen[path.slice(root.length) || "/"] = (info.mode! & 0o7777).toString(8);
    if (info.isDirectory) { for (const e of Deno.readDirSync(path)) look(join(path, e.name)); }
  };
  look(root);
  return seen;
}

Deno.test("attack: closeToOthers() leaves nothing of a folder open to other local users", async () => {
  const root = await openTree();
  assert.equal(await isClosedToOthers(root), false);
  await closeToOthers(root);
  assert.deepEqual(modes(root), {
    "/": "700",
    "/pkg": "755",
    "/pkg/mod.py": "644",
    "/pkg/tool": "755",
    "/pkg/open": "755",
  });
  assert.equal(await isClosedToOthers(root), true);
  const mine = (await Deno.lstat(root)).uid!;
  assert.equal(await isClosedToOthers(root, mine), true);
  assert.equal(await isClosedToOthers(root, mine + 1), false, "closed, but someone else's");
  for (const [what, path, mode] of [["a file", "pkg/mod.py", 0o646], ["the root", "", 0o750]]) {
    await Deno.chmod(join(root, path as string), mode as number);
    assert.equal(await isClosedToOthers(root), false, `${what} opened again`);
    await closeToOthers(root);
  }
  await Deno.remove(root, { recursive: true });
});

Deno.test({
  name: "attack: closeToOthers() refuses a folder where another user made an entry",
  ignore: Deno.uid() !== 0, // only root can give a file to another user
  fn: async () => {
    const root = await openTree();
    await Deno.mkdir(join(root, "pkg", "open", "mine"));
    await Deno.chown(join(root, "pkg", "open", "mine"), 65534, 65534);
    await assert.rejects(closeToOthers(root), /mine belongs to another user/);
    assert.equal(await isClosedToOthers(root), false);
    await Deno.remove(root, { recursive: true });
  },
});
