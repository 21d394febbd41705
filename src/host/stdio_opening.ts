/**
 * Answering a stdio client's opening message before the MCP SDK has loaded. `answerOpening`
 * reads the first line off stdin, writes the answer opening_answer.ts gives for it (if any) and
 * puts every byte it read back, so the SDK later reads the connection from its start;
 * `dropAnswerTo` then keeps the SDK's own answer to that message off the wire.
 */
import type { Readable } from "node:stream";
import { Buffer } from "node:buffer";
import { openingAnswer, type RequestId } from "./opening_answer.ts";

/** An opening line longer than this is left to the SDK. */
const MAX_OPENING_BYTES = 1 << 20;

/**
 * How long start-up waits for the opening message. A client writes it as it starts the server,
 * so it is there by the time this runs; a person trying the server in a terminal, or a client
 * that waits, is kept waiting no longer than this, and the SDK answers it as always.
 */
export const OPENING_WAIT_MS = 100;

/**
 * Answers the opening message on `stdin` if it can (see opening_answer.ts); resolves with the
 * id it answered, or null. Leaves `stdin` paused, holding everything it read.
 */
export async function answerOpening(
  stdin: Readable,
  write: (line: string) => void,
  waitMs = OPENING_WAIT_MS,
): Promise<RequestId | null> {
  const { read, ended } = await readFirstLine(stdin, waitMs);
  if (ended) return null; // nothing to put back: the SDK sees a closed stdin and stops
  if (read.length > 0) stdin.unshift(read);
  const newline = read.indexOf(0x0a);
  if (newline < 0) return null;
  const answer = openingAnswer(read.subarray(0, newline).toString("utf8"));
  if (!answer) return null;
  write(answer.line + "\n");
  return answer.id;
}

function readFirstLine(
  stdin: Readable,
  waitMs: number,
): Promise<{ read: Buffer; ended: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  return new Promise((resolve) => {
    const timer = setTimeout(() => done(false), waitMs);
    const done = (ended: boolean) => {
      clearTimeout(timer);
      stdin.off("data", onData);
      stdin.off("end", onEnd);
      stdin.off("error", onEnd);
      stdin.pause();
      resolve({ read: Buffer.concat(chunks), ended });
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (chunk.includes(0x0a) || size > MAX_OPENING_BYTES) done(false);
    };
    const onEnd = () => done(true);
    stdin.on("data", onData);
    stdin.on("end", onEnd);
    stdin.on("error", onEnd);
  });
}

/** The part of a transport this needs. */
interface Sender {
  send(message: unknown, ...rest: never[]): Promise<void>;
}

/**
 * Makes `wire` drop its first response to request `id`: the SDK's answer to the opening
 * message, which was answered already. `onError` hears of it if that answer was an error (the
 * two answers disagreed).
 */
export function dropAnswerTo(wire: Sender, id: RequestId, onError: (error: unknown) => void): void {
  const send = wire.send.bind(wire);
  let dropped = false;
  wire.send = (message, ...rest) => {
    if (!dropped && isResponseTo(message, id)) {
      dropped = true;
      if ("error" in message) onError(message.error);
      return Promise.resolve();
    }
    return send(message, ...rest);
  };
}

function isResponseTo(message: unknown, id: RequestId): message is Record<string, unknown> {
  if (typeof message !== "object" || message === null) return false;
  const m = message as Record<string, unknown>;
  return m.id === id && ("result" in m || "error" in m) && !("method" in m);
}
