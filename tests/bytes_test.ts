/** Byte helpers (src/_util/bytes.ts): every byte value survives, whichever way it goes. */
import assert from "node:assert/strict";
import { binaryToBytes, bytesToBinary, decodeBase64, encodeBase64 } from "../src/_util/bytes.ts";

const EVERY_BYTE = Uint8Array.from({ length: 512 }, (_, i) => i % 256);

Deno.test("bytes as characters: each byte is the character of its own code, and back", () => {
  const binary = bytesToBinary(EVERY_BYTE.subarray(1)); // an offset view, as callers pass
  assert.equal(binary.length, 511);
  // 0x80-0x9F included: the web's "latin1" (windows-1252) would make 0x80 a euro sign.
  for (let i = 0; i < binary.length; i++) assert.equal(binary.charCodeAt(i), (i + 1) % 256);
  assert.deepEqual(binaryToBytes(binary), EVERY_BYTE.subarray(1));
  // A character past U+00FF (scrubbing writes ASCII, but a caller may not) keeps its low byte.
  assert.deepEqual([...binaryToBytes("\u20ac")], [0xac]);
});

Deno.test("base64 of every byte value goes there and back, and bad text is refused", () => {
  const text = encodeBase64(EVERY_BYTE);
  assert.equal(text, btoa(String.fromCharCode(...EVERY_BYTE)));
  assert.deepEqual(decodeBase64(text), EVERY_BYTE);
  assert.throws(() => decodeBase64("not base64!"));
});
