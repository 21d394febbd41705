/**
 * Compilation hints (src/sandbox/compilation_hints.ts): V8 optimizes the hinted functions of a
 * module before they ever run, and a sandbox's Pyodide gets its hot functions so. Whether a
 * function runs optimized code is asked of V8 itself (`%IsTurboFanFunction`, in a process
 * started with `--allow-natives-syntax` for the test).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  COMPILATION_PRIORITY_SECTION,
  leb128,
  withCompilationHints,
} from "../src/sandbox/compilation_hints.ts";
import {
  HOT_FUNCTIONS,
  HOT_FUNCTIONS_MODULE_BYTES,
  HOT_FUNCTIONS_PYODIDE,
} from "../src/sandbox/hot_functions.ts";
import { PYODIDE_VERSION } from "../src/_util/version.ts";
import { locateRuntime } from "../src/sandbox/runtime.ts";
import { ensureSnapshot } from "../src/sandbox/snapshot.ts";
import { sandboxCommand } from "../src/sandbox/sandbox_command.ts";
import {
  COMPILATION_HINTS_FLAG,
  type Profile,
  profileSummary,
  resolveProfile,
  sandboxKey,
  sandboxV8Flags,
} from "../src/sandbox/profile.ts";
import { silentLogger } from "../src/_util/log.ts";
import { plainProfile } from "./_profiles.ts";
import { rawSandbox } from "./_sandbox.ts";

const HINTS_MODULE = new URL("../src/sandbox/compilation_hints.ts", import.meta.url).href;

/**
 * A module of two exported functions `(i32, i32) -> i32`: "hot" (index 0) and "cold" (index 1),
 * each adding its arguments.
 */
const TWO_FUNCTIONS = new Uint8Array([
  ...hex("00 61 73 6d 01 00 00 00"), // header
  ...hex("01 07 01 60 02 7f 7f 01 7f"), // type section: (i32, i32) -> i32
  ...hex("03 03 02 00 00"), // function section: two functions of that type
  ...hex("07 0e 02 03 68 6f 74 00 00 04 63 6f 6c 64 00 01"), // exports: "hot" 0, "cold" 1
  ...hex("0a 11 02"), // code section: two bodies, each local.get 0, local.get 1, i32.add
  ...hex("07 00 20 00 20 01 6a 0b"),
  ...hex("07 00 20 00 20 01 6a 0b"),
]);

/** Bytes written as hex pairs separated by spaces. */
function hex(pairs: string): number[] {
  return pairs.split(" ").map((pair) => parseInt(pair, 16));
}

Deno.test("the hints section sits before the code section and keeps the module valid", () => {
  const hinted = withCompilationHints(TWO_FUNCTIONS, [0, 0]);
  assert.ok(WebAssembly.validate(hinted as BufferSource));
  const module = new WebAssembly.Module(hinted as BufferSource);
  const [section] = WebAssembly.Module.customSections(module, COMPILATION_PRIORITY_SECTION);
  // One function (duplicates dropped): index 0, offset 0, 2 hint bytes: priorities 0 and 0.
  assert.deepEqual([...new Uint8Array(section!)], [1, 0, 0, 2, 0, 0]);
  const codeAt = TWO_FUNCTIONS.indexOf(0x0a, 8);
  assert.equal(hinted[hinted.length - (TWO_FUNCTIONS.length - codeAt)], 0x0a);
  assert.throws(
    () => withCompilationHints(TWO_FUNCTIONS.subarray(0, codeAt), [0]),
    /no code section/,
  );
});

/** Runs `source` in a Deno process with V8's natives syntax and `flags`; returns its stdout. */
async function runWithNatives(source: string, flags: string[]): Promise<string> {
  const dir = await Deno.makeTempDir();
  try {
    const file = join(dir, "probe.js");
    await Deno.writeTextFile(file, source);
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-read", `--v8-flags=--allow-natives-syntax,${flags.join(",")}`, file],
      stderr: "inherit",
    }).output();
    assert.ok(out.success, "the probe failed");
    return new TextDecoder().decode(out.stdout).trim();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("V8 optimizes a hinted function before it runs, and only that one", async () => {
  const probe = (hinted: boolean, waitMs: number) => `
    import { hintNextInstantiation } from ${JSON.stringify(HINTS_MODULE)};
    const optimized = new Function("f", "return %IsTurboFanFunction(f)");
    // Hints are meant for a module of this length only: another length gets none.
    const hints = hintNextInstantiation(WebAssembly, [0], ${
    TWO_FUNCTIONS.length + (hinted ? 0 : 1)
  });
    const { instance } = await WebAssembly.instantiate(
      new Uint8Array(${JSON.stringify([...TWO_FUNCTIONS])}), {});
    hints.restore();
    const deadline = Date.now() + ${waitMs};
    while (!optimized(instance.exports.hot) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    console.log(JSON.stringify({
      hot: optimized(instance.exports.hot),
      cold: optimized(instance.exports.cold),
      applied: hints.applied(),
      restored: WebAssembly.instantiate.name === "instantiate",
    }));`;
  // Tiering as a sandbox has it: nothing is optimized for being hot during the probe.
  const flags = ["--wasm-tiering-budget=2000000000", "--experimental-wasm-compilation-hints"];
  assert.deepEqual(JSON.parse(await runWithNatives(probe(true, 10_000), flags)), {
    hot: true,
    cold: false,
    applied: true,
    restored: true,
  });
  // Without the hints, the same wait optimizes nothing (the probe would pass without them).
  assert.deepEqual(JSON.parse(await runWithNatives(probe(false, 1000), flags)), {
    hot: false,
    cold: false,
    applied: false,
    restored: true,
  });
});

Deno.test("the hot functions were found for the pinned Pyodide", () => {
  assert.equal(
    HOT_FUNCTIONS_PYODIDE,
    PYODIDE_VERSION,
    "run `deno task hot-functions` after changing Pyodide",
  );
  assert.ok(HOT_FUNCTIONS.length > 0);
  const wasm = join(locateRuntime().pyodideDir, "pyodide.asm.wasm");
  assert.equal(Deno.statSync(wasm).size, HOT_FUNCTIONS_MODULE_BYTES);
});

/**
 * Boots a production sandbox of `profile` (V8's natives syntax added for probes), runs `code`,
 * and returns its output. Every line the sandbox writes must be a protocol message.
 */
async function runInSandbox(profile: Profile, code: string): Promise<string> {
  const runtime = locateRuntime();
  const command = sandboxCommand(runtime, await ensureSnapshot(runtime, silentLogger), profile);
  const sandbox = rawSandbox(command, ["--allow-natives-syntax"]);
  try {
    await sandbox.boot();
    const execute = { code, result_bytes: 1000 };
    await sandbox.send({ jsonrpc: "2.0", id: 1, method: "execute", params: execute });
    let output = "";
    for (;;) {
      const message = await sandbox.next();
      const params = message.params as { text?: string } | undefined;
      if (message.method === "output" && params?.text) output += params.text;
      if (message.id === 1) return output;
    }
  } finally {
    await sandbox.kill();
  }
}

/**
 * Whether Pyodide's `PyLong_FromLong`, among the hot functions, runs optimized before the first
 * script in a sandbox of `profile`, and whether the boot's wrapper of `WebAssembly.instantiate`
 * is gone by then. With V8's tiering as a sandbox has it, nothing before the first script makes
 * that function hot enough to be optimized otherwise.
 */
async function hotFunctionOptimized(profile: Profile): Promise<[boolean, boolean]> {
  const output = await runInSandbox(
    profile,
    "import pyodide_js\nfrom js import Function\n" +
      "optimized = Function.new('m', 'return %IsTurboFanFunction(m._PyLong_FromLong)')\n" +
      "print(optimized(pyodide_js._module))\n" +
      "from js import WebAssembly\nprint('[native code]' in WebAssembly.instantiate.toString())",
  );
  const [optimized, native] = output.trim().split("\n");
  return [optimized === "True", native === "True"];
}

Deno.test("a sandbox's Pyodide runs its hot functions optimized before the first script, under optimize_compute only", async () => {
  const computing = { ...plainProfile("hints"), optimize_compute: true };
  assert.deepEqual(await hotFunctionOptimized(computing), [true, true]);
  assert.deepEqual(await hotFunctionOptimized(plainProfile("plain")), [false, true]);
});

Deno.test("optimize_compute is a profile's choice: checked, and its sandboxes pooled apart", () => {
  const ctx = { baseDir: "/", realPath: (path: string) => path, protectedPaths: [] };
  const raw = { folders: [], net: [] };
  assert.equal(resolveProfile("p", raw, ctx).optimize_compute, undefined);
  const computing = resolveProfile("p", { ...raw, optimize_compute: true }, ctx);
  assert.equal(computing.optimize_compute, true);
  assert.throws(
    () => resolveProfile("p", { ...raw, optimize_compute: "yes" }, ctx),
    /profile "p", field "optimize_compute": must be true or false/,
  );
  assert.notEqual(sandboxKey(computing), sandboxKey(resolveProfile("p", raw, ctx)));
  assert.ok(sandboxV8Flags(computing).split(",").includes(COMPILATION_HINTS_FLAG));
  assert.ok(!sandboxV8Flags(plainProfile("plain")).includes(COMPILATION_HINTS_FLAG));
  // The `profile` parameter's summary tells an agent which profile is the faster one.
  assert.match(profileSummary([computing]), /compute-bound Python optimized/);
  assert.doesNotMatch(profileSummary([plainProfile("plain")]), /optimized/);
});

/** Custom sections a script might aim at V8's hints decoders: wrong, oversized, out of range. */
function hostileHintSections(): number[][] {
  const named = (name: string, payload: number[]) => {
    const bytes = [...new TextEncoder().encode(name)];
    const body = [bytes.length, ...bytes, ...payload];
    return [0, ...leb128(body.length), ...body];
  };
  const priority = (payload: number[]) => named(COMPILATION_PRIORITY_SECTION, payload);
  const frequencies = (payload: number[]) => named("metadata.code.instr_freq", payload);
  const targets = (payload: number[]) => named("metadata.code.call_targets", payload);
  const huge = [0xff, 0xff, 0xff, 0xff, 0x0f];
  return [
    priority(huge), // a count of 2^32 - 1 with nothing after it
    priority([1, 5, 0, 2, 0, 0]), // function 5 of 2
    priority([1, ...huge, 0, 2, 0, 0]), // function 2^32 - 1
    priority([2, 1, 0, 2, 0, 0, 0, 0, 2, 0, 0]), // out of order
    priority([1, 0, 0, ...huge, 0, 0]), // a hint longer than the section
    priority([1, 0, 0, 3, 0, 0xc8, 0x01]), // an optimization priority too large
    [...priority([1, 0, 0, 2, 0, 0]), ...priority([1, 1, 0, 2, 0, 0])], // twice
    priority([0xff, 0xff]), // cut short
    frequencies([1, 0, 1, ...huge, 1, 64]), // an offset past the function
    frequencies([1, 0, 1, 2, 0, 64]), // a zero-length hint
    targets([1, 0, 1, 2, 3, 7, 100]), // a call to function 7 of 2
    targets([1, 0, 1, 2, 5, 0, 90, 1, 90]), // percentages over 100
    targets([1, 1, 1, 2, ...huge, 0]), // a hint longer than the section
  ];
}

/**
 * TWO_FUNCTIONS with an imported function first (index 0, `m.f`, the same type), so "hot" and
 * "cold" are functions 1 and 2: hints aimed at index 0 name an import.
 */
const WITH_IMPORT = new Uint8Array([
  ...TWO_FUNCTIONS.subarray(0, 17), // header and type section
  ...hex("02 07 01 01 6d 01 66 00 00"), // import section: m.f of type 0
  ...hex("03 03 02 00 00"),
  ...hex("07 0e 02 03 68 6f 74 00 01 04 63 6f 6c 64 00 02"), // exports: "hot" 1, "cold" 2
  ...TWO_FUNCTIONS.subarray(TWO_FUNCTIONS.indexOf(0x0a, 8)),
]);

Deno.test("a script's own modules with hostile hints sections neither crash nor hang a sandbox", async () => {
  // Each section before the code section (where V8 reads it while compiling) and after it, in
  // both modules, compiled from bytes and by streaming in small chunks (built in the script:
  // the code's length is bounded).
  const sections = hostileHintSections();
  const count = sections.length * 2 * 2 * 2; // modules, placements, ways of compiling
  const probe = `(async () => {
    const imports = { m: { f: (a, b) => a + b } };
    const streamed = (bytes) => new Response(new ReadableStream({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 7) controller.enqueue(bytes.slice(i, i + 7));
        controller.close();
      },
    }), { headers: { "content-type": "application/wasm" } });
    const modules = [];
    for (const section of ${JSON.stringify(sections)}) {
      for (const module of [${JSON.stringify([...TWO_FUNCTIONS])}, ${
    JSON.stringify([...WITH_IMPORT])
  }]) {
        const at = module.indexOf(0x0a, 8);
        modules.push([...module.slice(0, at), ...section, ...module.slice(at)]);
        modules.push([...module, ...section]);
      }
    }
    const results = [];
    for (const list of modules) {
      const bytes = new Uint8Array(list);
      for (const load of [
        () => WebAssembly.instantiate(bytes, imports),
        () => WebAssembly.instantiateStreaming(streamed(bytes), imports),
      ]) {
        try {
          const { instance } = await load();
          results.push(instance.exports.hot(2, 3) + instance.exports.cold(4, 5));
        } catch (error) {
          results.push(String(error));
        }
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    return JSON.stringify(results);
  })()`;
  // In a sandbox whose V8 reads hints (a stray line on its stdout fails the read).
  const computing = { ...plainProfile("hints"), optimize_compute: true };
  const output = await runInSandbox(
    computing,
    `import js\nprint(await js.eval(${JSON.stringify(probe)}))`,
  );
  assert.deepEqual(JSON.parse(output), Array(count).fill(14));
});

Deno.test("hints sections of a script's modules steer no inlining: wasm inlining stays off", () => {
  // With inlining on, V8 inlines call targets the hints name (a script's own modules' too): a
  // far larger surface than compiling early. The hints flag is only safe with inlining off.
  const flags = sandboxV8Flags({ ...plainProfile("hints"), optimize_compute: true }).split(",");
  assert.ok(flags.includes(COMPILATION_HINTS_FLAG));
  assert.ok(flags.includes("--no-wasm-inlining"));
  assert.ok(!flags.includes("--wasm-inlining"));
});
