/**
 * Collects one output stream of a script up to a byte limit. What does not fit is dropped and
 * the text ends with a visible truncation marker.
 */
import type { OutputStream } from "../rpc/sandbox_protocol.ts";

const encoder = new TextEncoder();

export class OutputBuffer {
  readonly stream: OutputStream;
  readonly limit: number;
  #parts: string[] = [];
  #bytes = 0;
  #dropped = 0;

  constructor(stream: OutputStream, limit: number) {
    this.stream = stream;
    this.limit = limit;
  }

  /** Whether more output arrived than the limit allows. */
  get overflowed(): boolean {
    return this.#dropped > 0;
  }

  /** Appends text; returns the part that was kept (all of it while under the limit). */
  append(text: string): string {
    if (this.#dropped > 0) {
      this.#dropped += encoder.encode(text).length;
      return "";
    }
    const bytes = encoder.encode(text);
    const room = this.limit - this.#bytes;
    if (bytes.length <= room) {
      this.#parts.push(text);
      this.#bytes += bytes.length;
      return text;
    }
    const kept = new TextDecoder().decode(bytes.subarray(0, room)).replace(/\uFFFD$/, "");
    this.#parts.push(kept);
    this.#bytes = this.limit;
    this.#dropped = bytes.length - room;
    return kept;
  }

  text(): string {
    const body = this.#parts.join("");
    if (this.#dropped === 0) return body;
    return `${body}\n[... ${this.stream} truncated: output exceeded the ${this.limit}-byte limit ...]\n`;
  }
}
