/**
 * Reads a file that someone else may control (a folder shared with other servers or users) on the
 * host's one thread, without letting them hold that thread: the file is opened without waiting
 * (a FIFO put there, or swapped in after a check, would block a plain open until someone writes
 * to it) and without following a symlink, and read only if what was opened is a regular file, up
 * to `maxBytes`.
 */
import fs from "node:fs";

const { O_RDONLY, O_NONBLOCK, O_NOFOLLOW } = fs.constants;

/** What was at the path is no regular file, or is larger than the reader takes. */
export class NotPlainFileError extends Error {}

export function readPlainTextFileSync(path: string, maxBytes: number): string {
  const fd = fs.openSync(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW);
  try {
    const info = fs.fstatSync(fd);
    if (!info.isFile()) throw new NotPlainFileError(`${path} is not a regular file`);
    if (info.size > maxBytes) {
      throw new NotPlainFileError(`${path} has ${info.size} bytes, over ${maxBytes}`);
    }
    const bytes = new Uint8Array(info.size);
    let done = 0;
    while (done < bytes.length) {
      const n = fs.readSync(fd, bytes, done, bytes.length - done, done);
      if (n === 0) break;
      done += n;
    }
    return new TextDecoder().decode(bytes.subarray(0, done));
  } finally {
    fs.closeSync(fd);
  }
}
