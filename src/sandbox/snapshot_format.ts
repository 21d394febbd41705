/**
 * A snapshot file is a 128-byte header (the SHA-256 of the rest as 64 hex digits, padded with
 * spaces, ending in a newline) followed by Pyodide's memory snapshot in sparse form: about half
 * of a snapshot is zero pages, which are not stored, not read at boot and never touched in the
 * sandbox's memory (so they cost it no resident memory). Shared by the host (which writes and
 * verifies it) and the worker (which reads it back; see worker.ts).
 *
 * Sparse form, little-endian: u32 the snapshot's full length, u32 the number of ranges, then for
 * each range u32 offset and u32 length, then the ranges' bytes in order. A range is a run of
 * 4 KiB pages that are not all zero.
 */
export const SNAPSHOT_HEADER_BYTES = 128;

/** Part of the snapshot key: a change of this file's format must not read an older file. */
export const SNAPSHOT_FORMAT = "sparse-4k-1";

const PAGE = 4096;

export function snapshotHeader(sha256Hex: string): string {
  return sha256Hex.padEnd(SNAPSHOT_HEADER_BYTES - 1, " ") + "\n";
}

/** The sparse form of Pyodide's snapshot `raw`. */
export function toSparse(raw: Uint8Array): Uint8Array {
  const ranges: [number, number][] = [];
  for (let page = 0; page < raw.length; page += PAGE) {
    const end = Math.min(raw.length, page + PAGE);
    if (isZero(raw, page, end)) continue;
    const last = ranges.at(-1);
    if (last && last[0] + last[1] === page) last[1] = end - last[0];
    else ranges.push([page, end - page]);
  }
  const data = ranges.reduce((sum, [, length]) => sum + length, 0);
  const out = new Uint8Array(8 + 8 * ranges.length + data);
  const view = new DataView(out.buffer);
  view.setUint32(0, raw.length, true);
  view.setUint32(4, ranges.length, true);
  let at = 8 + 8 * ranges.length;
  ranges.forEach(([offset, length], i) => {
    view.setUint32(8 + 8 * i, offset, true);
    view.setUint32(12 + 8 * i, length, true);
    out.set(raw.subarray(offset, offset + length), at);
    at += length;
  });
  return out;
}

/** Where a range of the snapshot is in the sparse form. */
export interface SparseRange {
  /** Its offset in the snapshot. */
  offset: number;
  size: number;
  /** Where its bytes start in the sparse form. */
  at: number;
}

/** How many bytes of the sparse form `readSparseTable` needs, from its first 8. */
export function sparseTableBytes(start: Uint8Array): number {
  if (start.length < 8) throw new RangeError("Cannot read the snapshot: too short");
  return 8 + 8 * new DataView(start.buffer, start.byteOffset, 8).getUint32(4, true);
}

/**
 * The snapshot's full length and its ranges, from the start of the sparse form (at least
 * `sparseTableBytes` long) and the form's whole size; throws when they do not fit together.
 */
export function readSparseTable(
  table: Uint8Array,
  sparseSize: number,
): { length: number; ranges: SparseRange[] } {
  const fail = (why: string) => new RangeError(`Cannot read the snapshot: ${why}`);
  const need = sparseTableBytes(table);
  if (table.length < need) throw fail("its range table is cut short");
  const view = new DataView(table.buffer, table.byteOffset, need);
  const length = view.getUint32(0, true);
  const ranges: SparseRange[] = [];
  let at = need;
  let previousEnd = 0;
  for (let i = 0; i < (need - 8) / 8; i++) {
    const offset = view.getUint32(8 + 8 * i, true);
    const size = view.getUint32(12 + 8 * i, true);
    if (offset < previousEnd || offset + size > length || at + size > sparseSize) {
      throw fail(`range ${i} is out of place`);
    }
    ranges.push({ offset, size, at });
    at += size;
    previousEnd = offset + size;
  }
  if (at !== sparseSize) throw fail("its size does not match its ranges");
  return { length, ranges };
}

/** The snapshot the sparse form `sparse` holds, in full (tests and tools; the worker reads ranges). */
export function fromSparse(sparse: Uint8Array): Uint8Array {
  const { length, ranges } = readSparseTable(sparse, sparse.length);
  const raw = new Uint8Array(length);
  for (const r of ranges) raw.set(sparse.subarray(r.at, r.at + r.size), r.offset);
  return raw;
}

function isZero(bytes: Uint8Array, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (bytes[i] !== 0) return false;
  return true;
}
