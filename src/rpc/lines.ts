/**
 * Splits a byte stream into newline-terminated text lines, with a hard cap on line length so a
 * peer cannot make the reader buffer without bound.
 */

import { concatBytes } from "../_util/bytes.ts";

export interface LineEvents {
  line(text: string): void;
  /** A line grew past `maxLineBytes`; its bytes up to the next newline are dropped. */
  overlong(bytes: number): void;
}

/** Reads `stream` to its end, calling `events` for each line. Resolves when the stream ends. */
export async function readLines(
  stream: ReadableStream<Uint8Array>,
  maxLineBytes: number,
  events: LineEvents,
): Promise<void> {
  const decoder = new TextDecoder();
  let parts: Uint8Array[] = [];
  let size = 0;
  let dropping = false;
  const flush = () => {
    if (!dropping) events.line(decoder.decode(concatBytes(parts, size)));
    parts = [];
    size = 0;
    dropping = false;
  };
  const reader = stream.getReader();
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      let start = 0;
      while (start < value.length) {
        const nl = value.indexOf(10, start);
        const end = nl === -1 ? value.length : nl;
        if (!dropping) {
          size += end - start;
          if (size > maxLineBytes) {
            dropping = true;
            events.overlong(size);
            parts = [];
          } else {
            parts.push(value.subarray(start, end));
          }
        }
        if (nl === -1) break;
        flush();
        start = nl + 1;
      }
    }
    if (size > 0 && !dropping) flush();
  } finally {
    reader.releaseLock();
  }
}
