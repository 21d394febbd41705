import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { ReadBuffer } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import { MessageLines, readLinesLinearly } from "../src/rpc/message_lines.ts";
import { defaultTransportFactory } from "../src/upstream/transport.ts";
import { unreadReplyAnswer } from "../src/upstream/unread_reply.ts";

const encoder = new TextEncoder();

/** Every message the buffer gives for `bytes` cut into chunks of the given sizes. */
function readAll(
  buffer: { append(c: Uint8Array): void; readMessage(): unknown },
  bytes: Uint8Array,
  sizes: number[],
) {
  const messages: unknown[] = [];
  let at = 0;
  for (let i = 0; at < bytes.length; i++) {
    const size = sizes[i % sizes.length]!;
    buffer.append(Buffer.from(bytes.subarray(at, at + size))); // as the transports get them
    at += size;
    for (let m = buffer.readMessage(); m !== null; m = buffer.readMessage()) messages.push(m);
  }
  return messages;
}

Deno.test("MessageLines reads what the SDK's ReadBuffer reads, however the bytes are cut", () => {
  const text = [
    JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    "not json at all",
    JSON.stringify({ jsonrpc: "2.0", id: 2, result: { text: "é€😀\n".repeat(50) } }) + "\r",
    "",
    JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
    "",
  ].join("\n");
  const bytes = encoder.encode(text);
  for (const sizes of [[1], [2, 3], [7], [64], [bytes.length], [5, 1, 300]]) {
    assert.deepEqual(
      readAll(new MessageLines(), bytes, sizes),
      readAll(new ReadBuffer(), bytes, sizes),
      `chunks of ${sizes}`,
    );
  }
  assert.equal(readAll(new MessageLines(), bytes, [3]).length, 3);
});

Deno.test("MessageLines refuses a message past its bound, as the SDK does", () => {
  const lines = new MessageLines(100);
  lines.append(encoder.encode("x".repeat(60)));
  assert.throws(() => lines.append(encoder.encode("y".repeat(60))), /exceeded maximum size of 100/);
  // Cleared: what follows is read afresh.
  lines.append(encoder.encode('{"jsonrpc":"2.0","id":3,"method":"ping"}\n'));
  assert.deepEqual(lines.readMessage(), { jsonrpc: "2.0", id: 3, method: "ping" });
});

Deno.test("attack: a line past the bound is skipped whole, and told with its start and end, however it is cut", () => {
  const line = '{"jsonrpc":"2.0","id":"start-id","method":"ping","params":{"pad":"' +
    "z".repeat(500) + '"},"end":"tail"}';
  for (const cut of [1, 7, 12, 100, 400]) {
    const told: [string, string][] = [];
    const lines = new MessageLines(
      300,
      undefined,
      undefined,
      (start, end) => void told.push([start, end]),
    );
    const bytes = encoder.encode(`{"jsonrpc":"2.0","id":1,"method":"ping"}\n${line}\n`);
    const at = bytes.indexOf(10) + 1 + cut; // the long line's start split after `cut` bytes
    for (let i = 0; i < at; i += 3) lines.append(bytes.subarray(i, Math.min(i + 3, at)));
    lines.append(bytes.subarray(at));
    lines.append(encoder.encode('{"jsonrpc":"2.0","id":2,"method":"ping"}\n'));
    assert.deepEqual(lines.readMessage(), { jsonrpc: "2.0", id: 1, method: "ping" });
    assert.deepEqual(lines.readMessage(), { jsonrpc: "2.0", id: 2, method: "ping" }, "goes on");
    assert.equal(told.length, 1, `cut ${cut}`);
    assert.ok(
      told[0]![0].startsWith('{"jsonrpc":"2.0","id":"start-id"'),
      `cut ${cut}: ${told[0]![0]}`,
    );
    assert.ok(told[0]![1].endsWith('"end":"tail"}'), `cut ${cut}`);
  }
});

Deno.test("a message onOversized gives is read in the skipped line's place, in order", () => {
  const instead = { jsonrpc: "2.0", id: 5, error: { code: -32603, message: "too large" } };
  const lines = new MessageLines(100, undefined, undefined, () => instead as never);
  const one = '{"jsonrpc":"2.0","id":1,"method":"ping"}';
  const three = '{"jsonrpc":"2.0","id":3,"method":"ping"}';
  lines.append(encoder.encode(`${one}\n{"result":"${"x".repeat(300)}","id":5}\n${three}\n`));
  assert.deepEqual(
    [lines.readMessage(), lines.readMessage(), lines.readMessage(), lines.readMessage()],
    [JSON.parse(one), instead, JSON.parse(three), null],
  );
});

Deno.test("unreadReplyAnswer() answers the request a message too large to read answered", () => {
  const answer = (head: string, tail: string, sent?: number) =>
    unreadReplyAnswer(head, tail, sent, "too large")?.id ?? null;
  // The TypeScript SDK writes an answer's id last, the Python SDK first; on an event stream
  // after the event's other fields.
  assert.equal(
    answer('{"result":{"content":[{"type":"text","text":"AA', 'A"}]},"jsonrpc":"2.0","id":5}'),
    5,
  );
  assert.equal(
    answer('{"jsonrpc":"2.0","id":"a-1","result":{"structuredContent":{"method":"GET"', "}}"),
    "a-1",
  );
  assert.equal(answer('{"id":3,"jsonrpc":"2.0","error":{"code":1,"message":"', '"}}'), 3);
  assert.equal(answer('event: message\r\nid: 4\r\ndata: {"result":{"x":"', '"},"id":9}'), 9);
  // A server's own request or notification answers nothing: dropped.
  assert.equal(
    answer('{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{', "}}"),
    null,
  );
  assert.equal(
    answer('{"method":"notifications/message","params":{"data":"', '"},"jsonrpc":"2.0"}'),
    null,
  );
  assert.equal(answer('event: message\ndata: {"method":"x","params":{"a":"', '"},"id":9}'), null);
  assert.equal(answer('{"result":"', "no id"), null);
  // Neither an answer nor a request at its start: it answers nothing, whatever id it ends with.
  assert.equal(answer('{"params":{"a":"', '"},"id":1}'), null);
  assert.equal(answer('{"jsonrpc":"2.0","id":2,"data":"', '"}'), null);
  assert.equal(answer('{"result":{"x":"', '"},"id":"b-2","jsonrpc":"2.0"}'), "b-2");
  // On a request's own stream, that request, whatever the message is but a request or a
  // notification of the server's own (which come before the answer there).
  assert.equal(answer('{"params":{"a":"', '"},"id":1}', 7), 7);
  assert.equal(answer('{"result":{"a":"', '"}}', 7), 7);
  assert.equal(answer('data: {"method":"notifications/message","params":{"a":"', '"}}', 7), null);
  assert.equal(
    answer('data: {"jsonrpc":"2.0","id":0,"method":"roots/list","params":{"', "}}", 7),
    null,
  );
});

Deno.test("readLinesLinearly() takes the place of both SDK stdio transports' read buffers", () => {
  const client = readLinesLinearly(new StdioClientTransport({ command: "true" }));
  const server = readLinesLinearly(new StdioServerTransport());
  for (const transport of [client, server]) {
    assert.ok(
      (transport as unknown as { _readBuffer: unknown })._readBuffer instanceof MessageLines,
    );
  }
  assert.throws(() => readLinesLinearly({}), /no read buffer/);
});

Deno.test("an upstream stdio server's replies are read by MessageLines", () => {
  const { transport } = defaultTransportFactory({
    name: "x",
    kind: "stdio",
    protocol: "auto",
    command: "true",
    args: [],
    env: {},
    cwd: "/",
    description: "",
  });
  assert.ok((transport as unknown as { _readBuffer: unknown })._readBuffer instanceof MessageLines);
});
