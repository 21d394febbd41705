/**
 * What a large tool reply costs the host's one thread, in process: reading it off a stdio pipe
 * (the SDK's ReadBuffer against ours, MessageLines), and scrubbing secrets from it (the redactor
 * the server builds from its secrets, against `JSON.parse` of the same reply, which the host does
 * anyway).
 */
import { Buffer } from "node:buffer";
import { ReadBuffer } from "@modelcontextprotocol/client";
import { createRedactor } from "../src/policy/redaction.ts";
import { MessageLines } from "../src/rpc/message_lines.ts";

export interface ScrubCase {
  name: string;
  /** Milliseconds per scrub of the reply's text, one sample per round. */
  text: number[];
  /** Milliseconds per scrub of the parsed reply (every string and key), one per round. */
  json: number[];
}

export interface ScrubBench {
  replyBytes: number;
  /** Milliseconds per `JSON.parse` of the reply, one per round. */
  parse: number[];
  cases: ScrubCase[];
}

const REPLY_BYTES = 8_000_000;

/** A deterministic generator, so every run scrubs the same secrets and reply. */
function random(seed: number): () => number {
  return () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
}

function pick(next: () => number, chars: string, length: number): string {
  return Array.from({ length }, () => chars[Math.floor(next() * chars.length)]).join("");
}

/** A tool reply as a search or listing tool gives it: many small records. */
function reply(next: () => number, inserted: string[]): string {
  const items: unknown[] = [];
  let size = 0;
  for (let i = 0; size < REPLY_BYTES; i++) {
    const item = {
      id: i,
      title: `record ${i} ${pick(next, "abcdefghij klmnop", 24)}`,
      url: `https://example.test/items/${i}?q=${pick(next, "abc%20def", 8)}`,
      // An upstream that knows the secrets can put pieces of them everywhere.
      note: inserted.length > 0 ? inserted[i % inserted.length] : "",
      blob: btoa(pick(next, "xyz0123", 30)),
    };
    items.push(item);
    size += JSON.stringify(item).length;
  }
  return JSON.stringify({ items });
}

export interface ReadBench {
  messageBytes: number;
  /** Milliseconds to read the message in 64 KB chunks, one per round. */
  sdk: number[];
  ours: number[];
}

/** One tool reply of about 8 MB arriving in 64 KB chunks, as a pipe delivers it. */
export function runReadBench(rounds: number): ReadBench {
  const text = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    result: { content: [{ type: "text", text: "x".repeat(REPLY_BYTES) }] },
  }) + "\n";
  const bytes = new TextEncoder().encode(text);
  const read = (buffer: { append(c: Uint8Array): void; readMessage(): unknown }) => {
    const t0 = performance.now();
    for (let at = 0; at < bytes.length; at += 65536) {
      buffer.append(Buffer.from(bytes.buffer, at, Math.min(65536, bytes.length - at)));
      if (buffer.readMessage() !== null) break;
    }
    return performance.now() - t0;
  };
  const bench: ReadBench = { messageBytes: bytes.length, sdk: [], ours: [] };
  for (let round = 0; round < rounds; round++) {
    bench.sdk.push(read(new ReadBuffer()));
    bench.ours.push(read(new MessageLines()));
  }
  return bench;
}

export function runScrubBench(rounds: number): ScrubBench {
  const next = random(3);
  const tokens = Array.from({ length: 30 }, () => `sk-${pick(next, "abcdef0123456789", 32)}`);
  // Passwords: punctuation leaves short runs of letters and digits between.
  const passwords = Array.from(
    { length: 30 },
    () => pick(next, "abcXYZ012!@#$%^&*()/\\\"' +=?", 24),
  );
  const plain = reply(next, []);
  const pieces = reply(next, passwords.map((p) => p.slice(0, 12)));
  const setups: [string, string[], string][] = [
    ["1 token", tokens.slice(0, 1), plain],
    ["30 tokens", tokens, plain],
    ["30 passwords", passwords, plain],
    ["30 passwords, the reply holding a piece of each", passwords, pieces],
  ];
  const time = (work: () => unknown) => {
    const t0 = performance.now();
    work();
    return performance.now() - t0;
  };
  const parse: number[] = [];
  const cases: ScrubCase[] = setups.map(([name]) => ({ name, text: [], json: [] }));
  for (let round = 0; round < rounds; round++) {
    parse.push(time(() => JSON.parse(plain)));
    setups.forEach(([, secrets, text], i) => {
      const redact = createRedactor(secrets);
      const parsed = JSON.parse(text);
      cases[i]!.text.push(time(() => redact.text(text)));
      cases[i]!.json.push(time(() => redact.json(parsed)));
    });
  }
  return { replyBytes: plain.length, parse, cases };
}
