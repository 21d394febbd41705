/** Files the server writes for itself are as private as the user's umask says, never looser. */
import assert from "node:assert/strict";
import { writeFileAtomically } from "../src/_util/atomic_write.ts";

Deno.test("writeFileAtomically() without a mode leaves it to the umask (no world-writable files)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "atomic_write_umask_" });
  const before = Deno.umask(0o022);
  try {
    await writeFileAtomically(`${dir}/a`, "x");
    assert.equal((await Deno.stat(`${dir}/a`)).mode! & 0o777, 0o644);
    Deno.umask(0o077);
    await writeFileAtomically(`${dir}/b`, "x");
    assert.equal((await Deno.stat(`${dir}/b`)).mode! & 0o777, 0o600);
    await writeFileAtomically(`${dir}/c`, "x", { mode: 0o640 });
    assert.equal((await Deno.stat(`${dir}/c`)).mode! & 0o777, 0o640);
  } finally {
    Deno.umask(before);
    await Deno.remove(dir, { recursive: true });
  }
});
