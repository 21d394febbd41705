/** Reading files a neighbour may control without letting them hold the host's thread. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { NotPlainFileError, readPlainTextFileSync } from "../src/_util/plain_file.ts";
import { delay } from "./_helpers.ts";

Deno.test("attack: readPlainTextFileSync() reads only a regular file, never waiting", async (t) => {
  const dir = await Deno.makeTempDir();
  const plain = join(dir, "plain");
  await Deno.writeTextFile(plain, "hello");

  await t.step("a regular file is read", () => {
    assert.equal(readPlainTextFileSync(plain, 5), "hello");
  });
  await t.step("one past the bytes taken is refused", () => {
    assert.throws(() => readPlainTextFileSync(plain, 4), NotPlainFileError);
  });
  await t.step("a symlink is not followed", async () => {
    await Deno.symlink(plain, join(dir, "link"));
    assert.throws(() => readPlainTextFileSync(join(dir, "link"), 100), /link is a symlink/);
  });
  await t.step("a FIFO with no writer is refused at once, not waited on", async () => {
    const fifo = join(dir, "fifo");
    assert.ok((await new Deno.Command("mkfifo", { args: [fifo] }).output()).success);
    // A writer that comes 2 s later and marks that it found a reader: a read that waited for a
    // writer would have been one (and its wait ended by this).
    const marked = join(dir, "writer-found-a-reader");
    const writer = new Deno.Command("sh", {
      args: ["-c", 'sleep 2; exec 3>"$1"; touch "$2"', "sh", fifo, marked],
    }).spawn();
    assert.throws(() => readPlainTextFileSync(fifo, 100), NotPlainFileError);
    await delay(2500);
    writer.kill("SIGKILL");
    await writer.status;
    assert.equal(await Deno.lstat(marked).then(() => true, () => false), false);
  });
  await Deno.remove(dir, { recursive: true });
});
