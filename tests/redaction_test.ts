import assert from "node:assert/strict";
import { createRedactor, REDACTED, secretProblem } from "../src/policy/redaction.ts";

/** A secret with a quote, a backslash, a slash, a space and a non-ASCII letter. */
const SECRET = 'pa"ss\\wörd/42 x';
const TOKEN = "sk-live-0123456789abcdef";

const utf8 = (text: string) => new TextEncoder().encode(text);
const latin1 = (bytes: Uint8Array) => String.fromCharCode(...bytes);
const base64 = (bytes: Uint8Array) => btoa(latin1(bytes));
const base64Url = (bytes: Uint8Array) =>
  base64(bytes).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
const hex = (bytes: Uint8Array) => [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
/** json.dumps(value) of Python: ensure_ascii writes \uXXXX for every non-ASCII character. */
const pythonJson = (value: unknown) =>
  JSON.stringify(value).replace(
    /[\u0080-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );

Deno.test("createRedactor() scrubs a secret in every encoding it can take in text", async (t) => {
  const redact = createRedactor([
    SECRET,
    TOKEN,
    "abcdefgh12",
    "12XYZWVUTS",
    "???>>>~~~secret",
    "müller0123456789abc",
    "Tok%41pi-key\t2024",
    "myuser:longpassword@databasehost",
  ]);
  const escaped = JSON.stringify(SECRET).slice(1, -1);
  const table: [string, string, string][] = [
    ["as is", `key=${SECRET};`, `key=${REDACTED};`],
    ["JSON text", JSON.stringify({ key: SECRET }), JSON.stringify({ key: REDACTED })],
    [
      "JSON text inside a JSON string",
      JSON.stringify({ body: JSON.stringify({ key: SECRET }) }),
      JSON.stringify({ body: JSON.stringify({ key: REDACTED }) }),
    ],
    ["Python's json.dumps (\\u00f6)", pythonJson({ key: SECRET }), pythonJson({ key: REDACTED })],
    [
      "escaped slash and upper-case \\u",
      `"${escaped.replace("/", "\\/").replace("ö", "\\u00F6")}"`,
      `"${REDACTED}"`,
    ],
    ["encodeURIComponent", `?q=${encodeURIComponent(SECRET)}&x=1`, `?q=${REDACTED}&x=1`],
    [
      "form encoding (+ for a space)",
      new URLSearchParams({ q: SECRET, x: "1" }).toString(),
      `q=${REDACTED}&x=1`,
    ],
    [
      "lower-case %xx",
      encodeURIComponent(SECRET).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
      REDACTED,
    ],
    ["URL-encoded twice", encodeURIComponent(encodeURIComponent(SECRET)), REDACTED],
    [
      "a URL-encoded secret in JSON text",
      JSON.stringify({ url: `https://h/?k=${encodeURIComponent(SECRET)}` }),
      JSON.stringify({ url: `https://h/?k=${REDACTED}` }),
    ],
    ["base64", `data:${base64(utf8(SECRET))}.`, `data:${REDACTED}.`],
    // "???>>>~~~" encodes with + and / in standard base64, - and _ in the URL-safe alphabet.
    ["base64 with + and /", `k=${base64(utf8("???>>>~~~secret"))};`, `k=${REDACTED};`],
    ["URL-safe base64 without padding", base64Url(utf8(SECRET)), REDACTED],
    ["base64 of the JSON-escaped form", base64(utf8(escaped)), REDACTED],
    ["hex", hex(utf8(SECRET)), REDACTED],
    ["HEX", `0x${hex(utf8(TOKEN)).toUpperCase()}`, `0x${REDACTED}`],
    ["hex inside a longer dump", `00ff${hex(utf8(SECRET))}ff00`, `00ff${REDACTED}ff00`],
    [
      "lower case, as a URL's host holds it",
      new URL(`https://${"12XYZWVUTS"}.mcp.example/`).host,
      `${REDACTED}.mcp.example`,
    ],
    [
      "punycode, as a URL's host holds a non-ASCII secret",
      new URL(`https://${"müller0123456789abc"}.mcp.example/`).host,
      `${REDACTED}.mcp.example`,
    ],
    [
      "percent-decoded and without its tab, as a URL's host holds it",
      new URL(`https://${"Tok%41pi-key\t2024"}.mcp.example/`).host,
      `${REDACTED}.mcp.example`,
    ],
    [
      "the host of a URL-shaped secret is no secret of its own",
      "https://databasehost/",
      "https://databasehost/",
    ],
    ["two secrets side by side make one marker", `${TOKEN}${SECRET}`, REDACTED],
    ["two overlapping secrets leave no fragment", "<abcdefgh12XYZWVUTS>", `<${REDACTED}>`],
    ["text without a secret", 'pa"ss wörd and sk-live', 'pa"ss wörd and sk-live'],
    ["a near miss", SECRET.slice(0, -1) + "y", SECRET.slice(0, -1) + "y"],
  ];
  for (const [name, input, expected] of table) {
    await t.step(name, () => assert.equal(redact.text(input), expected));
  }
});

Deno.test("createRedactor() scrubs a secret inside a longer base64 blob at any alignment", async (t) => {
  const redact = createRedactor([SECRET]);
  const secret = utf8(SECRET);
  for (const prefix of ["", "A", "AB", "ABC", "ABCD", "ABCDE"]) {
    for (const [alphabet, encode] of [["standard", base64], ["URL-safe", base64Url]] as const) {
      await t.step(`${alphabet}, ${prefix.length} bytes before`, () => {
        const blob = encode(new Uint8Array([...utf8(prefix), ...secret, ...utf8("tail!")]));
        // Characters made only of neighbouring bits stay; every one holding a secret bit goes.
        const before = Math.floor((prefix.length * 8) / 6);
        const after = Math.ceil(((prefix.length + secret.length) * 8) / 6);
        assert.equal(redact.text(blob), blob.slice(0, before) + REDACTED + blob.slice(after));
      });
    }
  }
});

Deno.test("createRedactor().json() scrubs strings, object keys and numbers; JSON stays JSON", () => {
  const redact = createRedactor([SECRET, TOKEN, "31415926"]);
  assert.deepEqual(
    redact.json({
      [SECRET]: { nested: [`Bearer ${TOKEN}`, 42, true, null] },
      [`x-${TOKEN}`]: "ok",
      pin: 31415926,
      body: JSON.stringify({ key: SECRET }),
    }),
    {
      [REDACTED]: { nested: [`Bearer ${REDACTED}`, 42, true, null] },
      [`x-${REDACTED}`]: "ok",
      pin: REDACTED,
      body: JSON.stringify({ key: REDACTED }),
    },
  );
  // A secret ending in a backslash, next to a quote: the match takes the whole escape.
  const trailing = "abcdefg\\";
  const text = createRedactor([trailing]).text(JSON.stringify({ v: `${trailing}"` }));
  assert.deepEqual(JSON.parse(text), { v: `${REDACTED}"` });
});

Deno.test("createRedactor() finds every form of secrets of any make-up among many, anywhere in a text", () => {
  // Secrets with long, short and no runs of plain characters (the scrubber looks for those
  // first), non-ASCII ones, and ones sharing pieces: every encoding of each is scrubbed.
  let seed = 11;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const pick = (chars: string, length: number) =>
    Array.from({ length }, () => [...chars][Math.floor(next() * [...chars].length)]).join("");
  const secrets = [
    "!@#$%^&*()[]", // no plain character at all
    '\u00e9"\\/?+ %',
    "ö€😀日本語テキスト",
    "\u212a".repeat(10), // the Kelvin sign: "k" in lower case, but not ASCII
    "İİİİİİİİxİİİ", // "i̇" in lower case
    ...Array.from({ length: 12 }, () => pick('ab1!"\\/ %+é€', 8 + Math.floor(next() * 12))),
    ...Array.from({ length: 4 }, () => pick("abcdefXYZ0123-_.", 10 + Math.floor(next() * 20))),
  ];
  const redact = createRedactor(secrets);
  const encodings: [string, (secret: string) => string][] = [
    ["as is", (s) => s],
    ["JSON", (s) => JSON.stringify(s)],
    ["JSON twice", (s) => JSON.stringify(JSON.stringify(s))],
    ["Python's json.dumps", (s) => pythonJson(s)],
    ["encodeURIComponent", (s) => encodeURIComponent(s)],
    ["URL-encoded twice", (s) => encodeURIComponent(encodeURIComponent(s))],
    ["URL-encoded JSON", (s) => encodeURIComponent(JSON.stringify(s))],
    ["base64", (s) => base64(utf8(s))],
    ["URL-safe base64", (s) => base64Url(utf8(s))],
    ["hex", (s) => hex(utf8(s))],
    ["HEX", (s) => hex(utf8(s)).toUpperCase()],
    ["hEx", (s) => hex(utf8(s)).replace(/[a-f]/g, (c, i) => i % 2 ? c.toUpperCase() : c)],
  ];
  const filler = 'Lorem ipsum 0123 abc \\ %20 "q" '.repeat(30);
  for (const secret of secrets) {
    for (const [name, encode] of encodings) {
      const at = Math.floor(next() * filler.length);
      const text = filler.slice(0, at) + encode(secret) + filler.slice(at);
      const scrubbed = redact.text(text);
      assert.ok(
        !scrubbed.includes(encode(secret)) && scrubbed.includes(REDACTED),
        `${name} of ${JSON.stringify(secret)} survived: ${scrubbed}`,
      );
    }
  }
  assert.equal(redact.text(filler), filler);
});

Deno.test("secretProblem() refuses secrets that cannot be scrubbed safely", async (t) => {
  const table: [string, string, RegExp | null][] = [
    ["empty", "", /the secret is 0 characters; secrets shorter than 8 characters/],
    ["7 characters", "hunter2", /the secret is 7 characters;/],
    ["4 characters of 2 UTF-16 units each", "🔑🔑🔑🔑", /the secret is 4 characters;/],
    ["part of the marker", "REDACTED", /part of the marker \[REDACTED\]/],
    ["8 characters", "hunter22", null],
    ["non-ASCII", "pässwörd", null],
  ];
  for (const [name, secret, problem] of table) {
    await t.step(name, () => {
      const found = secretProblem(secret);
      if (problem === null) assert.equal(found, null);
      else assert.match(found ?? "", problem);
    });
  }
});

Deno.test("attack: keys scrubbed alike stay apart, and a __proto__ key stays a key", () => {
  // Attacker 51: two keys that were secrets became one `[REDACTED]`, and a value was lost.
  const redact = createRedactor(["createdAtSecret", "customerIdSecret"]);
  assert.deepEqual(redact.json({ createdAtSecret: "x", customerIdSecret: "c-1", id: 1 }), {
    "[REDACTED]": "x",
    "[REDACTED] 2": "c-1",
    id: 1,
  });
  // Attacker 52: keys already named `[REDACTED] n` made each collision count up from 2 again.
  const crowded: Record<string, number> = {};
  for (let i = 2; i <= 2_000; i++) crowded[`[REDACTED] ${i}`] = i;
  for (let i = 1; i <= 300; i++) crowded["createdAtSecret".repeat(i)] = -i;
  const hasOwn = Object.hasOwn;
  let lookups = 0;
  Object.hasOwn = (o: object, k: PropertyKey) => (lookups++, hasOwn(o, k));
  let spread: object;
  try {
    spread = redact.json(crowded);
  } finally {
    Object.hasOwn = hasOwn;
  }
  assert.equal(Object.keys(spread).length, Object.keys(crowded).length);
  assert.ok(lookups < 10_000, `${lookups} key lookups`); // counted from 2 each time: 600,000
  const scrubbed = redact.json(JSON.parse('{"__proto__": {"polluted": true}, "a": 1}'));
  assert.deepEqual(Object.keys(scrubbed), ["__proto__", "a"]);
  assert.equal((scrubbed as { polluted?: boolean }).polluted, undefined);
});
