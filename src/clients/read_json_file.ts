/**
 * Reads one client's (or our) JSON file, safely for files from anywhere: only a regular file
 * (a FIFO or device named by a cloned project would hang or never end), at most
 * `MAX_CONFIG_BYTES`, and parse errors by position only (see jsonc.ts).
 */
import { concatBytes } from "../_util/bytes.ts";
import { type JsoncResult, parseJsonc } from "../_util/jsonc.ts";

/**
 * Far above any real client file, yet bounded: Claude Code keeps each project's history in
 * ~/.claude.json, which grows to tens of MiB for heavy users.
 */
export const MAX_CONFIG_BYTES = 64 * 1024 * 1024;

export type FileRead =
  | { status: "missing" }
  | { status: "broken"; message: string }
  | { status: "ok"; mode: number | null } & JsoncResult;

/** Never throws: a file that cannot be read is `broken`, with why. */
export async function readJsonFile(path: string): Promise<FileRead> {
  let bytes: Uint8Array;
  let mode: number | null;
  try {
    const info = await Deno.stat(path); // follows a link: the file it names is what is read
    if (!info.isFile) return { status: "broken", message: "not a regular file" };
    if (info.size > MAX_CONFIG_BYTES) return { status: "broken", message: tooLarge() };
    mode = info.mode === null ? null : info.mode & 0o777;
    using file = await Deno.open(path, { read: true });
    bytes = await readAtMost(file, MAX_CONFIG_BYTES + 1);
    if (bytes.length > MAX_CONFIG_BYTES) return { status: "broken", message: tooLarge() };
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { status: "missing" };
    return { status: "broken", message: (error as Error).message };
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return { status: "broken", message: "not UTF-8 text" };
  }
  try {
    return { status: "ok", mode, ...parseJsonc(text) };
  } catch (error) {
    return { status: "broken", message: `not valid JSON: ${(error as Error).message}` };
  }
}

function tooLarge(): string {
  return `larger than ${MAX_CONFIG_BYTES / 1024 / 1024} MiB, which no client's config is`;
}

async function readAtMost(file: Deno.FsFile, limit: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  const buffer = new Uint8Array(64 * 1024);
  while (total < limit) {
    const n = await file.read(buffer);
    if (n === null) break;
    chunks.push(buffer.slice(0, n));
    total += n;
  }
  return concatBytes(chunks, total);
}
