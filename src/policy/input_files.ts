/**
 * The caller's input files for a script: names must be plain relative paths, and the total size
 * is capped. Decided on the host before a sandbox is touched.
 */
import type { InputFile } from "../rpc/sandbox_protocol.ts";
import { encodeBase64 } from "../_util/bytes.ts";

export type FileContent = string | { base64: string };

const NAME = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;
export const MAX_INPUT_FILES = 50;
export const MAX_INPUT_BYTES = 8 * 1024 * 1024;

/** The files as the sandbox receives them, or a message naming what is wrong. */
export function checkInputFiles(files: Record<string, FileContent>): InputFile[] | string {
  const entries = Object.entries(files);
  if (entries.length > MAX_INPUT_FILES) {
    return `At most ${MAX_INPUT_FILES} input files, got ${entries.length}`;
  }
  const out: InputFile[] = [];
  let total = 0;
  for (const [name, content] of entries) {
    if (
      !NAME.test(name) || name.split("/").some((part) => part === "." || part === "..") ||
      name === "outputs" || name.startsWith("outputs/")
    ) {
      return `Input file name "${
        name.slice(0, 100)
      }" must be a relative path of letters, digits, ., _ and -, parts joined by / (not under outputs/)`;
    }
    let data: string;
    if (typeof content === "string") {
      data = encodeBase64(new TextEncoder().encode(content));
    } else if (
      typeof content?.base64 === "string" && /^[A-Za-z0-9+/]*={0,2}$/.test(content.base64)
    ) {
      data = content.base64;
    } else if (typeof content?.base64 === "string") {
      return `Input file "${name}": its "base64" is not base64 (A-Z, a-z, 0-9, + and /, with = ` +
        "at the end only)";
    } else {
      return `Input file "${name}" must be text or {"base64": "..."}`;
    }
    total += Math.floor(data.length * 3 / 4);
    if (total > MAX_INPUT_BYTES) return `Input files exceed ${MAX_INPUT_BYTES} bytes in total`;
    out.push({ name, data });
  }
  return out;
}
