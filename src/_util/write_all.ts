/**
 * Synchronous writes that never stop short: `writeSync` may write only part of what it is
 * given (a full pipe), so the rest is written until none is left.
 */
const encoder = new TextEncoder();

export function writeAllSync(
  target: { writeSync(bytes: Uint8Array): number },
  data: string | Uint8Array,
): void {
  let bytes = typeof data === "string" ? encoder.encode(data) : data;
  while (bytes.length > 0) bytes = bytes.subarray(target.writeSync(bytes));
}
