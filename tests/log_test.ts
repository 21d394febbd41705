/** The host's log (src/_util/log.ts): one record is one line, whatever text it carries. */
import assert from "node:assert/strict";
import { createLogger } from "../src/_util/log.ts";
import { escapeUnsafe } from "../src/_util/safe_text.ts";

Deno.test("attack: text in a log record can neither forge a line nor drive the terminal", () => {
  const lines: string[] = [];
  const log = createLogger("info", (line) => lines.push(line), "text");
  // As a model API's error or an upstream's tool name might read.
  log.warn("model API said: bad\n[code-mode] info: all fine\x1b[2K\r", {
    reply: "\u009b31m red \u202e reversed",
  });
  assert.equal(lines.length, 1);
  const [line] = lines as [string];
  assert.equal(line.indexOf("\n"), line.length - 1, "one line");
  assert.doesNotMatch(line.slice(0, -1), /[\p{Cc}\u202e]/u);
  assert.match(line, /^\[code-mode\] warn: model API said: bad\\u\{a\}\[code-mode\] info: /);
  assert.match(line, /\\u\{9b\}31m red \\u\{202e\} reversed/);
  // The JSON format is a collector's: JSON escapes what it must, and is parsed back whole.
  const json: string[] = [];
  createLogger("info", (l) => json.push(l), "json").warn("a\nb", { c: "\x1b" });
  assert.deepEqual(JSON.parse(json[0]!).msg, "a\nb");
});

Deno.test("attack: millions of marks or controls in a row are escaped, not a stack overflow", () => {
  // 3.4 million of one overflowed V8's backtracking stack (attacker 62): the log record was lost
  // and a model API's error ended its run with no result.
  const marks = escapeUnsafe("a" + "\u0301".repeat(3_600_000));
  assert.match(marks, /^a\\u\{301\}×1000\\u\{301\}×1000/);
  assert.ok(!/\p{M}{5}/u.test(marks), "marks left stacked");
  const controls = escapeUnsafe("\u0000".repeat(3_600_000));
  assert.match(controls, /^\\u\{0\}×1000\\u\{0\}×1000/);
  assert.ok(controls.length < 100_000, `${controls.length} characters`);
});
