/**
 * An execution's result without the secrets the server knows: every string and key scrubbed,
 * and each returned file's content too, as bytes (text or binary) rather than as the base64 that
 * carries it: a secret replaced inside base64 left text that was no longer base64, and the
 * client rejected the whole answer. A file that held a secret comes back with it replaced.
 */
import type { Redactor } from "../policy/redaction.ts";
import { binaryToBytes, bytesToBinary, decodeBase64, encodeBase64 } from "../_util/bytes.ts";
import type { ExecutionResult, ResultFile } from "./execution_result.ts";

export function scrubbedResult(result: ExecutionResult, redact: Redactor): ExecutionResult {
  const data = result.outputs.map((f) => f.data);
  const scrubbed = redact.json({ ...result, outputs: result.outputs.map(withoutData) });
  return {
    ...scrubbed,
    outputs: scrubbed.outputs.map((file, i) => {
      const content = data[i];
      return content === undefined ? file : { ...file, ...scrubbedContent(content, redact) };
    }),
  };
}

function withoutData({ data: _, ...meta }: ResultFile): ResultFile {
  return meta;
}

/** A file's base64 content with the secrets in it replaced (as UTF-8 text when it is that). */
function scrubbedContent(base64: string, redact: Redactor): { data: string; size?: number } {
  const bytes = decodeBase64(base64);
  let text: string | null;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    text = null;
  }
  if (text !== null) {
    const clean = redact.text(text);
    if (clean === text) return { data: base64 };
    const out = new TextEncoder().encode(clean);
    return { data: encodeBase64(out), size: out.length };
  }
  // Binary: one character per byte, so a secret's bytes are found wherever they are.
  const binary = bytesToBinary(bytes);
  const clean = redact.text(binary);
  if (clean === binary) return { data: base64 };
  const out = binaryToBytes(clean);
  return { data: encodeBase64(out), size: out.length };
}
