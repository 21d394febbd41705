/**
 * Reads a file that someone else may control (a folder shared with other servers or users) on the
 * host's one thread, without letting them hold that thread: the file is opened without waiting
 * (a FIFO put there, or swapped in after a check, would block a plain open until someone writes
 * to it) and without following a symlink, and read only if what was opened is a regular file, up
 * to `maxBytes`.
 */
import fs from "node:fs";

const { O_RDONLY, O_NONBLOCK, O_NOFOLLOW } = fs.constants;

/** What was at the path is no regular file, or is larger than the reader takes (its `size`). */
export class NotPlainFileError extends Error {
  constructor(message: string, readonly size?: number) {
    super(message);
  }
}

/** The bytes of the regular file at `path`, up to `maxBytes` (else NotPlainFileError). */
export function readPlainFileSync(path: string, maxBytes: number): Uint8Array {
  let fd: number;
  try {
    fd = fs.openSync(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW);
  } catch (error) {
    if ((error as { code?: string }).code === "ELOOP") {
      throw new NotPlainFileError(`${path} is a symlink`);
    }
    throw error;
  }
  try {
    const info = fs.fstatSync(fd);
    if (!info.isFile()) throw new NotPlainFileError(`${path} is not a regular file`);
    if (info.size > maxBytes) {
      throw new NotPlainFileError(`${path} has ${info.size} bytes, over ${maxBytes}`, info.size);
    }
    const bytes = new Uint8Array(info.size);
    let done = 0;
    while (done < bytes.length) {
      const n = fs.readSync(fd, bytes, done, bytes.length - done, done);
      if (n === 0) break;
      done += n;
    }
    return bytes.subarray(0, done);
  } finally {
    fs.closeSync(fd);
  }
}

export function readPlainTextFileSync(path: string, maxBytes: number): string {
  return new TextDecoder().decode(readPlainFileSync(path, maxBytes));
}
