/**
 * Live output is scrubbed as it flows: however the script's output is cut into chunks, what the
 * client is sent is what scrubbing the whole output gives, secrets that span lines included.
 */
import assert from "node:assert/strict";
import { createRedactor } from "../src/policy/redaction.ts";
import { lastLinesStart, scrubbedLines } from "../src/execution/scrubbed_lines.ts";

const PEM =
  "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nAb3dEf9hIjKlMnOp\n-----END KEY-----";

/** What the client is sent of `chunks` of stdout, each piece as sent. */
function liveOutput(secrets: string[], chunks: string[]): string[] {
  const sent: string[] = [];
  const live = scrubbedLines(createRedactor(secrets), (_stream, text) => sent.push(text));
  for (const chunk of chunks) live.write("stdout", chunk);
  live.flush();
  return sent;
}

Deno.test("a secret that spans lines is scrubbed from live output sent a line at a time", () => {
  const output = `before\ndecoded: ${PEM}\nafter\n`;
  const byLine = output.split(/(?<=\n)/);
  const byChar = [...output];
  const whole = createRedactor([PEM]).text(output);
  assert.equal(whole, "before\ndecoded: [REDACTED]\nafter\n");
  for (const chunks of [byLine, byChar, [output]]) {
    const sent = liveOutput([PEM], chunks);
    assert.equal(sent.join(""), whole, JSON.stringify(sent));
    for (const line of PEM.split("\n")) {
      assert.ok(!sent.some((piece) => piece.includes(line)), `a line of the secret: ${line}`);
    }
  }
});

Deno.test("live output without such a secret is still sent as each line ends", () => {
  const sent = liveOutput(["a-secret-value"], ["one\ntw", "o\nthree"]);
  assert.deepEqual(sent, ["one\n", "two\n", "three"]);
});

Deno.test("lastLinesStart() finds where the last n lines begin", () => {
  const text = "a\nb\nc\n";
  assert.deepEqual([0, 1, 2, 3, 4].map((n) => lastLinesStart(text, n)), [6, 4, 2, 0, 0]);
  assert.deepEqual([1, 2, 3].map((n) => lastLinesStart("\n\n", n)), [1, 0, 0]);
  assert.equal(lastLinesStart("", 1), 0);
  assert.deepEqual([1, 2].map((n) => lastLinesStart("a\n[REDACTED]", n)), [2, 0]);
});
