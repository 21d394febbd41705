/**
 * The code-size limit: decided before any sandbox is used.
 */
import type { Limits } from "../sandbox/profile.ts";

/** A message naming the limit when `code` is too large, else null. */
export function checkCodeSize(code: string, limits: Pick<Limits, "code_chars" | "code_lines">) {
  if (code.length > limits.code_chars) {
    return `Code has ${code.length} characters; the limit is ${limits.code_chars}` +
      splitHint("code_chars");
  }
  // Python ends a line at \n, \r\n or a lone \r: count them all. A break at the very end
  // (as editors save files) starts no line.
  const lines = code.replace(/(\r\n|\r|\n)$/, "").split(/\r\n|\r|\n/).length;
  if (lines > limits.code_lines) {
    return `Code has ${lines} lines; the limit is ${limits.code_lines}` + splitHint("code_lines");
  }
  return null;
}

/** Which limit it is, and how to get the work done within it. */
function splitHint(limit: string): string {
  return ` (the profile's limits.${limit}): save reusable parts with save_skill and import ` +
    'them, or run the work in steps in a session (session_id "new")';
}
