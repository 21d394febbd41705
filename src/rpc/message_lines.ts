/**
 * The MCP SDK's stdio transports read messages through a `ReadBuffer` that copies everything
 * buffered with each chunk that arrives and searches it again from its start for a line break,
 * in JavaScript under Deno: an 8 MB message in 64 KB chunks cost the host's one thread about 2 s.
 * `MessageLines` does the same work in linear time (each byte is copied once and searched once),
 * and `readLinesLinearly` puts it in place of a transport's own. It also skips, unparsed, a line
 * too long or too costly to parse (json_cost.ts), when told what to do in its place.
 */
import { deserializeMessage, type JSONRPCMessage } from "@modelcontextprotocol/client";
import { concatBytes } from "../_util/bytes.ts";
import { jsonCostProblem } from "./json_cost.ts";

/** What the SDK's stdio transports call on their read buffer. */
interface ReadBufferLike {
  append(chunk: Uint8Array): void;
  readMessage(): JSONRPCMessage | null;
  clear(): void;
}

/** Told of a line skipped as too long: its first and last bytes; may give a message instead. */
export type OnOversized = (start: string, end: string) => JSONRPCMessage | null | void;

/**
 * Told of a line skipped as too costly to parse (json_cost.ts): its first and last characters
 * and why; may give a message instead.
 */
export type OnCostly = (start: string, end: string, why: string) => JSONRPCMessage | null | void;

/** The SDK's own bound on a message being read (it closes the connection past it). */
export const MAX_MESSAGE_BYTES = 10 * 1024 * 1024;

/** How much of a skipped line's start and end is kept, to find its id. */
const EDGE_BYTES = 256;

export class MessageLines implements ReadBufferLike {
  #parts: Uint8Array[] = [];
  #size = 0;
  /** Reading past a line over the limit (with `onOversized`), up to its end: its first bytes. */
  #skipping: Uint8Array | null = null;
  /** The last bytes of the line skipped (up to EDGE_BYTES, in pieces). */
  #skippedEnd: Uint8Array[] = [];
  /** Complete lines not read yet, and messages read in place of lines skipped. */
  #lines: (Uint8Array | JSONRPCMessage)[] = [];
  readonly #decoder = new TextDecoder();

  constructor(
    readonly maxBytes = MAX_MESSAGE_BYTES,
    /** Told of each line skipped because it is not JSON (its start). */
    readonly onSkipped?: (start: string) => void,
    /** Told of each line skipped because it is JSON but no JSON-RPC message (its value). */
    readonly onInvalid?: (value: unknown) => void,
    /**
     * Told of each line skipped because it is longer than `maxBytes`, when it ends: its first
     * and last bytes (where a message's id is); a message it returns is read in the line's
     * place. Without it, such a line throws, and what was read is dropped.
     */
    readonly onOversized?: OnOversized,
    /**
     * Told of each line skipped because it would cost the host's thread too much to parse
     * (json_cost.ts); a message it returns is read in its place. Without it, every line is
     * parsed.
     */
    readonly onCostly?: OnCostly,
  ) {}

  append(chunk: Uint8Array): void {
    let start = 0;
    // Uint8Array's own indexOf: a Node Buffer's searches in JavaScript under Deno.
    const find = (from: number) => Uint8Array.prototype.indexOf.call(chunk, 10, from);
    for (let nl = find(0); nl !== -1; nl = find(start)) {
      this.#take(chunk.subarray(start, nl));
      if (this.#skipping) this.#endSkipping();
      else this.#lines.push(concatBytes(this.#parts, this.#size));
      this.#parts = [];
      this.#size = 0;
      start = nl + 1;
    }
    if (start < chunk.length) this.#take(chunk.subarray(start));
  }

  #take(bytes: Uint8Array): void {
    if (this.#skipping) {
      this.#skippedEnd.push(bytes.slice(-EDGE_BYTES));
      const kept = concatBytes(this.#skippedEnd);
      this.#skippedEnd = [kept.subarray(-EDGE_BYTES)];
      return;
    }
    if (this.#size + bytes.length > this.maxBytes) {
      if (!this.onOversized) {
        this.clear();
        throw new Error(`ReadBuffer exceeded maximum size of ${this.maxBytes} bytes`);
      }
      this.#skipping = firstBytes([...this.#parts, bytes], EDGE_BYTES);
      this.#skippedEnd = [bytes.slice(-EDGE_BYTES)];
      this.#parts = [];
      this.#size = 0;
      return;
    }
    this.#parts.push(bytes);
    this.#size += bytes.length;
  }

  /**
   * The next message, or null; a line that is not JSON is skipped (as the SDK does), and so is
   * one that is no JSON-RPC message when `onInvalid` is given (the SDK throws).
   */
  readMessage(): JSONRPCMessage | null {
    while (this.#lines.length > 0) {
      const next = this.#lines.shift()!;
      if (!(next instanceof Uint8Array)) return next;
      const line = this.#decoder.decode(next).replace(/\r$/, "");
      const costly = this.onCostly ? jsonCostProblem(line) : null;
      if (costly !== null) {
        const instead = this.onCostly!(line.slice(0, EDGE_BYTES), line.slice(-EDGE_BYTES), costly);
        if (instead) return instead;
        continue;
      }
      try {
        return deserializeMessage(line);
      } catch (error) {
        if (error instanceof SyntaxError) {
          this.onSkipped?.(line.slice(0, 80));
          continue;
        }
        if (!this.onInvalid) throw error;
        this.onInvalid(JSON.parse(line));
      }
    }
    return null;
  }

  #endSkipping(): void {
    const start = this.#decoder.decode(this.#skipping!);
    const end = this.#decoder.decode(concatBytes(this.#skippedEnd));
    this.#skipping = null;
    this.#skippedEnd = [];
    const instead = this.onOversized!(start, end.replace(/\r$/, ""));
    if (instead) this.#lines.push(instead);
  }

  clear(): void {
    this.#parts = [];
    this.#size = 0;
    this.#lines = [];
    this.#skipping = null;
    this.#skippedEnd = [];
  }
}

/**
 * Puts `MessageLines` in place of a stdio transport's read buffer (the SDK's
 * `StdioClientTransport` and `StdioServerTransport` both read through `_readBuffer`, set in
 * their constructors). Throws if the transport has none, so an SDK that changes this fails the
 * tests rather than going back to the slow path unseen.
 */
export function readLinesLinearly<T extends object>(
  transport: T,
  onSkipped?: (start: string) => void,
  onInvalid?: (value: unknown) => void,
  oversized?: { maxBytes: number; onOversized: OnOversized; onCostly?: OnCostly },
): T {
  const holder = transport as unknown as { _readBuffer?: ReadBufferLike };
  if (typeof holder._readBuffer?.readMessage !== "function") {
    throw new TypeError("this transport has no read buffer to replace");
  }
  holder._readBuffer = new MessageLines(
    oversized?.maxBytes ?? MAX_MESSAGE_BYTES,
    onSkipped,
    onInvalid,
    oversized?.onOversized,
    oversized?.onCostly,
  );
  return transport;
}

/** The first `count` bytes of `parts` together (a line's start may span several reads). */
function firstBytes(parts: Uint8Array[], count: number): Uint8Array {
  const taken: Uint8Array[] = [];
  let size = 0;
  for (const part of parts) {
    if (size >= count) break;
    const piece = part.subarray(0, count - size);
    taken.push(piece);
    size += piece.length;
  }
  return concatBytes(taken, size).slice();
}
