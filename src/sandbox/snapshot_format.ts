/**
 * A snapshot file is a 128-byte header (the SHA-256 of the rest as 64 hex digits, padded with
 * spaces, ending in a newline) followed by Pyodide's memory snapshot. The header keeps the
 * snapshot 8-byte aligned, which Pyodide requires. Shared by the host (which writes and verifies
 * it) and the worker (which skips it).
 */
export const SNAPSHOT_HEADER_BYTES = 128;

export function snapshotHeader(sha256Hex: string): string {
  return sha256Hex.padEnd(SNAPSHOT_HEADER_BYTES - 1, " ") + "\n";
}
