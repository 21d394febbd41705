import assert from "node:assert/strict";
import { silentLogger } from "../src/_util/log.ts";
import { Sandbox } from "../src/sandbox/launcher.ts";
import { DEFAULT_LIMITS } from "../src/sandbox/profile.ts";
import { locateRuntime } from "../src/sandbox/runtime.ts";
import { directResidentMemory } from "../src/sandbox/resident_memory.ts";
import {
  ensureSnapshot,
  inUseMark,
  isSnapshotIntact,
  isSnapshotVerified,
  keepInUse,
  removeStalePreloads,
  removeStaleSnapshots,
} from "../src/sandbox/snapshot.ts";
import { fromSparse, readSparseTable, toSparse } from "../src/sandbox/snapshot_format.ts";
import { snapshotBuildCommand } from "../src/sandbox/sandbox_command.ts";

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
  // A snapshot others may write (as older versions created it) is not trusted.
  assert.equal((await Deno.stat(path)).mode! & 0o022, 0, "built writable by others");
  await Deno.chmod(path, 0o666);
  assert.equal(await isSnapshotVerified(path), false, "a world-writable snapshot was trusted");
  await Deno.chmod(path, 0o644);

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
    // The boot's wrapped TypedArray `set` (see bootFromSnapshot) is gone before any script.
    code: "import _codemode, js\n" +
      "native = '[native code]' in str(js.Object.getPrototypeOf(js.Uint8Array.prototype).set)\n" +
      "('prelude' if hasattr(_codemode, 'run') else 'missing', native)",
    timeoutMs: 30_000,
    memoryBytes: 512 * 1024 * 1024,
    outputBytes: 65536,
  }, { callTool: () => Promise.resolve({ error: { kind: "invalid", message: "none" } }) });
  assert.deepEqual(outcome.reply, { ok: true, result: ["prelude", true], outputs: [] });
  await Deno.remove(cacheDir, { recursive: true });
});

Deno.test("the sparse snapshot form keeps every non-zero byte, leaves out zero pages, and refuses a bad table", async (t) => {
  const raw = new Uint8Array(10 * 4096 + 100);
  raw.set([1, 2, 3], 0); // page 0
  raw[4096 * 3 + 17] = 9; // page 3
  raw[4096 * 4] = 7; // page 4, joins page 3's range
  raw[raw.length - 1] = 5; // the short last page
  const sparse = toSparse(raw);
  await t.step("a round trip gives the same bytes", () => {
    assert.deepEqual(fromSparse(sparse), raw);
  });
  await t.step("only the non-zero pages are stored, adjacent ones as one range", () => {
    const { ranges, length } = readSparseTable(sparse, sparse.length);
    assert.equal(length, raw.length);
    assert.deepEqual(ranges.map((r) => [r.offset, r.size]), [
      [0, 4096],
      [3 * 4096, 2 * 4096],
      [10 * 4096, 100],
    ]);
    assert.equal(sparse.length, 8 + 3 * 8 + 3 * 4096 + 100);
  });
  await t.step("a cut, padded or overlapping form is refused", () => {
    assert.throws(() => readSparseTable(sparse, sparse.length - 1), RangeError);
    assert.throws(() => readSparseTable(sparse, sparse.length + 1), RangeError);
    assert.throws(() => readSparseTable(sparse.subarray(0, 12), sparse.length), RangeError);
    const overlapping = sparse.slice();
    new DataView(overlapping.buffer).setUint32(16, 100, true); // range 1 starts inside range 0
    assert.throws(() => readSparseTable(overlapping, overlapping.length), RangeError);
  });
});

Deno.test("a snapshot another server marked in use within a week is not removed as stale", async () => {
  const cacheDir = await Deno.makeTempDir();
  const ours = `${cacheDir}/snapshot-314-ours.bin`;
  const theirs = `${cacheDir}/snapshot-314-theirs.bin`;
  const old = `${cacheDir}/snapshot-313-old.bin`;
  for (const path of [ours, theirs, old]) {
    await Deno.writeTextFile(path, "x");
    await Deno.writeTextFile(inUseMark(path), "stamp");
  }
  const eightDaysAgo = new Date(Date.now() - 8 * 24 * 3600_000);
  for (const path of [theirs, old]) await Deno.utime(inUseMark(path), eightDaysAgo, eightDaysAgo);
  // The other running server marks its snapshot in use (it does so each day while it runs).
  const stop = keepInUse([inUseMark(theirs)]);
  stop();
  await new Promise((r) => setTimeout(r, 50)); // the mark is written in the background
  await removeStaleSnapshots(cacheDir, ours, silentLogger);
  const left = [...Deno.readDirSync(cacheDir)].map((e) => e.name).sort();
  assert.deepEqual(left, [
    "snapshot-314-ours.bin",
    "snapshot-314-ours.bin.verified",
    "snapshot-314-theirs.bin",
    "snapshot-314-theirs.bin.verified",
  ]);
  await Deno.remove(cacheDir, { recursive: true });
});

Deno.test("a build's scratch a killed server left goes after a day; a build in progress stays", async () => {
  const cacheDir = await Deno.makeTempDir();
  const dayAndHourAgo = new Date(Date.now() - 25 * 3600_000);
  const left = {
    preloadFolder: `${cacheDir}/preload-abc.1111.tmp`, // its packages, hundreds of MB
    preloadRaw: `${cacheDir}/preload-abc.bin.2222.tmp`,
    snapshotRaw: `${cacheDir}/snapshot-314-x.bin.3333.tmp`,
  };
  const building = {
    preloadFolder: `${cacheDir}/preload-def.4444.tmp`,
    snapshotRaw: `${cacheDir}/snapshot-314-y.bin.5555.tmp`,
  };
  for (const folder of [left.preloadFolder, building.preloadFolder]) {
    await Deno.mkdir(`${folder}/site/numpy`, { recursive: true });
    await Deno.writeTextFile(`${folder}/site/numpy/__init__.py`, "");
  }
  for (const file of [left.preloadRaw, left.snapshotRaw, building.snapshotRaw]) {
    await Deno.writeTextFile(file, "x");
  }
  for (const path of Object.values(left)) await Deno.utime(path, dayAndHourAgo, dayAndHourAgo);
  await removeStalePreloads(cacheDir, [], silentLogger);
  await removeStaleSnapshots(cacheDir, `${cacheDir}/snapshot-314-ours.bin`, silentLogger);
  const kept = [...Deno.readDirSync(cacheDir)].map((e) => e.name).sort();
  assert.deepEqual(kept, ["preload-def.4444.tmp", "snapshot-314-y.bin.5555.tmp"]);
  await Deno.remove(cacheDir, { recursive: true });
});

Deno.test("attack: the snapshot builder, where preloaded packages' code runs, imports nothing remote or from npm", () => {
  const runtime = locateRuntime(undefined, "flags");
  const { args } = snapshotBuildCommand(runtime, "/tmp/out.bin", {
    specPath: "/tmp/spec.json",
    siteDir: "/tmp/site",
  });
  const flags = args.slice(0, args.indexOf(runtime.workerPath));
  for (const flag of ["--cached-only", "--no-remote", "--no-npm", "--no-prompt"]) {
    assert.ok(flags.includes(flag), `${flag} in ${flags.join(" ")}`);
  }
  assert.ok(
    !flags.some((f) => /^--allow-(net|env|run|ffi|sys|import|all)/.test(f)),
    flags.join(" "),
  );
});
