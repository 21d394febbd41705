/**
 * WebAssembly compilation hints for Pyodide's module: which of its functions V8 should compile
 * with its optimizing tier (TurboFan) in the background as soon as the module is instantiated,
 * instead of waiting for them to get hot.
 *
 * A sandbox runs one script in a fresh process, and its V8 settings keep Pyodide's WebAssembly on
 * baseline code except for what boot makes hot (see SANDBOX_V8_TUNING): the C functions a
 * compute-bound script leans on (integer and float arithmetic, dict and list operations, the JSON
 * codec, string building) would stay on baseline code for the whole script. The hints name those
 * functions (`HOT_FUNCTIONS`, found by `deno task hot-functions`), so in sandboxes of a profile
 * with `optimize_compute` they are optimized during boot, while the sandbox is pooled, and every
 * script runs on them (at a cost in boot CPU: see SANDBOX_V8_TUNING).
 *
 * The hints travel in the module's own bytes, as the custom section the WebAssembly
 * compilation-hints proposal defines (`metadata.code.compilation_priority`), read by V8 with
 * `--experimental-wasm-compilation-hints`: no file is read and nothing is printed.
 */

/** The custom section's name, as V8 recognizes it. */
export const COMPILATION_PRIORITY_SECTION = "metadata.code.compilation_priority";

const CODE_SECTION_ID = 10;
const WASM_HEADER_BYTES = 8;

/**
 * `wasm` with a compilation-priority section inserted before its code section, naming
 * `functions` (module function indices): each is compiled eagerly (priority 0) and optimized at
 * once (optimization priority 0). Pure; throws when `wasm` has no code section.
 */
export function withCompilationHints(wasm: Uint8Array, functions: readonly number[]): Uint8Array {
  const codeAt = codeSectionOffset(wasm);
  const indices = [...new Set(functions)].sort((a, b) => a - b);
  const name = new TextEncoder().encode(COMPILATION_PRIORITY_SECTION);
  // The same hint for each: compilation priority 0, optimization priority 0.
  const hint = [...leb128(0), ...leb128(0)];
  const body: number[] = [...leb128(name.length), ...name, ...leb128(indices.length)];
  for (const index of indices) {
    body.push(...leb128(index), ...leb128(0), ...leb128(hint.length), ...hint); // 0: whole function
  }
  const section = [0, ...leb128(body.length), ...body]; // 0: a custom section
  const out = new Uint8Array(wasm.length + section.length);
  out.set(wasm.subarray(0, codeAt));
  out.set(section, codeAt);
  out.set(wasm.subarray(codeAt), codeAt + section.length);
  return out;
}

/** Where the code section starts (its id byte). */
function codeSectionOffset(wasm: Uint8Array): number {
  let at = WASM_HEADER_BYTES;
  while (at < wasm.length) {
    const id = wasm[at]!;
    const [size, payload] = readLeb128(wasm, at + 1);
    if (id === CODE_SECTION_ID) return at;
    at = payload + size;
  }
  throw new TypeError("Cannot add compilation hints: the module has no code section");
}

/** `value` (an unsigned 32-bit integer) as unsigned LEB128, WebAssembly's integer encoding. */
export function leb128(value: number): number[] {
  const out: number[] = [];
  do {
    let byte = value & 0x7f;
    value >>>= 7;
    if (value !== 0) byte |= 0x80;
    out.push(byte);
  } while (value !== 0);
  return out;
}

/** An unsigned LEB128 at `at`: its value and the offset after it. */
function readLeb128(bytes: Uint8Array, at: number): [number, number] {
  let value = 0;
  let shift = 0;
  for (;;) {
    if (at >= bytes.length || shift > 28) {
      throw new TypeError("Cannot add compilation hints: the module is cut short or malformed");
    }
    const byte = bytes[at++]!;
    value |= (byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return [value >>> 0, at];
    shift += 7;
  }
}

/**
 * Has Pyodide's module carry hints for `functions` when it is instantiated from its bytes (as
 * Pyodide does in Deno): wraps `WebAssembly.instantiate` until `restore` is called. The module
 * is told by its length, `moduleBytes`, so no other module gets hints meant for Pyodide's.
 * `applied()` tells whether it got them.
 */
export function hintNextInstantiation(
  webAssembly: typeof WebAssembly,
  functions: readonly number[],
  moduleBytes: number,
): { applied(): boolean; restore(): void } {
  const { instantiate } = webAssembly;
  let applied = false;
  webAssembly.instantiate = function (source: BufferSource | WebAssembly.Module, imports) {
    if (applied || !ArrayBuffer.isView(source) || source.byteLength !== moduleBytes) {
      return instantiate.call(webAssembly, source as BufferSource, imports);
    }
    const bytes = new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
    const hinted = withCompilationHints(bytes, functions);
    applied = true;
    return instantiate.call(webAssembly, hinted as BufferSource, imports);
  } as typeof WebAssembly.instantiate;
  return {
    applied: () => applied,
    restore() {
      webAssembly.instantiate = instantiate;
    },
  };
}
