import assert from "node:assert/strict";
import { silentLogger } from "../src/_util/log.ts";
import { Sandbox } from "../src/sandbox/launcher.ts";
import { DEFAULT_LIMITS } from "../src/sandbox/profile.ts";
import { locateRuntime } from "../src/sandbox/runtime.ts";
import { directResidentMemory } from "../src/sandbox/resident_memory.ts";
import { ensureSnapshot, isSnapshotIntact, isSnapshotVerified } from "../src/sandbox/snapshot.ts";

Deno.test("the snapshot is built on first use, and a corrupt one is detected and rebuilt", async () => {
  const cacheDir = await Deno.makeTempDir();
  const runtime = locateRuntime(cacheDir);
  const path = await ensureSnapshot(runtime, silentLogger);
  assert.equal(await isSnapshotIntact(path), true);
  // A start trusts an unchanged file by its stamp; a wrong stamp means hashing it again.
  const stamp = await Deno.readTextFile(`${path}.verified`);
  await Deno.writeTextFile(`${path}.verified`, "[0]");
  assert.equal(await isSnapshotVerified(path), true);
  assert.equal(await Deno.readTextFile(`${path}.verified`), stamp);

  const file = await Deno.open(path, { write: true });
  await file.seek(4096, Deno.SeekMode.Start);
  await file.write(new Uint8Array(64).fill(0xff));
  file.close();
  assert.equal(await isSnapshotIntact(path), false, "corruption went unnoticed");
  assert.equal(await isSnapshotVerified(path), false, "the stamp hid a changed file");

  const rebuilt = await ensureSnapshot(runtime, silentLogger);
  assert.equal(rebuilt, path);
  assert.equal(await isSnapshotIntact(path), true);

  await using sandbox = new Sandbox({
    runtime,
    snapshotPath: rebuilt,
    log: silentLogger,
    memory: directResidentMemory,
    profile: {
      name: "t",
      description: "",
      folders: [],
      net: [],
      allowed_tools: [],
      approve: [],
      limits: { ...DEFAULT_LIMITS },
    },
  });
  const outcome = await sandbox.execute({
    code: "import _codemode\n'prelude' if hasattr(_codemode, 'run') else 'missing'",
    timeoutMs: 30_000,
    memoryBytes: 512 * 1024 * 1024,
    outputBytes: 65536,
  }, { callTool: () => Promise.resolve({ error: { kind: "invalid", message: "none" } }) });
  assert.deepEqual(outcome.reply, { ok: true, result: "prelude", outputs: [] });
  await Deno.remove(cacheDir, { recursive: true });
});
