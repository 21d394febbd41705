/**
 * The code-size limit: decided before any sandbox is used.
 */
import type { Limits } from "../sandbox/profile.ts";

/** A message naming the limit when `code` is too large, else null. */
export function checkCodeSize(code: string, limits: Pick<Limits, "code_chars" | "code_lines">) {
  if (code.length > limits.code_chars) {
    return `Code has ${code.length} characters; the limit is ${limits.code_chars}`;
  }
  const lines = code.split("\n").length;
  if (lines > limits.code_lines) {
    return `Code has ${lines} lines; the limit is ${limits.code_lines}`;
  }
  return null;
}
