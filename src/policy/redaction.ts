/**
 * Secrets out: replaces every known secret value with `[REDACTED]`, in text or in every string
 * (and number) of a JSON value, in each form the secret can take in text:
 *
 * | form           | examples of what writes it                                              |
 * | -------------- | ----------------------------------------------------------------------- |
 * | as is          | anything                                                                |
 * | escaped        | JSON.stringify, json.dumps (`\"`, `\\`, `\/`, `\u00e9`), `\'` literals   |
 * | URL-encoded    | encodeURIComponent, URLSearchParams (`%22` in either case, `+` for " ") |
 * | escaped twice  | JSON in a JSON string, a URL in JSON, %-encoding applied twice          |
 * | base64         | standard and URL-safe, alone or at any of the 3 alignments in a blob    |
 * | hex            | the UTF-8 bytes, either case                                            |
 * | lower case     | a URL's host (`https://${TENANT_KEY}.example` is read in lower case)     |
 * | as a host      | a URL's host: percent-decoded, tabs and line breaks dropped, punycode   |
 *
 * Base64 and hex cover the secret's bytes and the bytes of its JSON-escaped form. Out of reach:
 * base64 broken across lines (MIME), other escapes composed more than twice, and anything an
 * upstream server transforms on purpose (it holds the secret and can always hide it).
 *
 * A secret shorter than `MIN_SECRET_LENGTH` cannot be scrubbed safely: ordinary text would
 * match it and its encodings, and what is left around a replaced base64 run would say too much
 * about it. `secretProblem` is the rule; config.ts and model_config.ts refuse such secrets at
 * start, so `createRedactor` never sees one in the server (given one anyway, it leaves it out).
 */
import { createLiteralFinder, isAscii } from "./literal_finder.ts";

export const REDACTED = "[REDACTED]";
export const MIN_SECRET_LENGTH = 8;

export interface Redactor {
  text(value: string): string;
  /**
   * A deep copy of a JSON value with secrets replaced in every string (keys included); a number
   * whose digits hold a secret becomes the scrubbed string.
   */
  json<T>(value: T): T;
  /**
   * The most line breaks one secret holds (a PEM key has several; most secrets none): text
   * scrubbed a line at a time must hold back that many lines for such a secret to be seen whole.
   */
  lineBreaks: number;
}

/** Why `secret` cannot be scrubbed safely (to follow "<where>: "), or null when it can. */
export function secretProblem(secret: string): string | null {
  const length = [...secret].length;
  if (length < MIN_SECRET_LENGTH) {
    return `the secret is ${length} character${length === 1 ? "" : "s"}; secrets shorter than ` +
      `${MIN_SECRET_LENGTH} characters cannot be scrubbed safely from tool replies, results, ` +
      "logs and prompts";
  }
  if (REDACTED.includes(secret)) {
    return `the secret is part of the marker ${REDACTED} that replaces secrets, so it cannot be ` +
      "scrubbed";
  }
  return null;
}

export function createRedactor(secrets: Iterable<string>): Redactor {
  const given = [...secrets].filter((s) => secretProblem(s) === null);
  const hostForms = given.map(asHost).filter((s): s is string => s !== null && !secretProblem(s));
  const list = [...new Set([...given, ...given.map((s) => s.toLowerCase()), ...hostForms])];
  if (list.length === 0) return { text: (v) => v, json: (v) => v, lineBreaks: 0 };
  const lineBreaks = Math.max(...given.map((s) => s.split("\n").length - 1));
  const forms = [...new Map(list.flatMap(secretForms).map((f) => [f.source, f])).values()];
  const formsIn = formFinder(forms);
  const text = (value: string) => {
    const candidates = formsIn(value);
    return candidates.length === 0 ? value : replaceAll(value, candidates);
  };
  // A number's digits can hold only a secret made of what numbers are written with: without
  // one, numbers are not looked at (4 million of them in a reply took 0.2 s to write out).
  const numbersMayHold = list.some((s) => /^[-+.0-9eE]+$/.test(s));
  const json = <T>(value: T, depth = 0): T => {
    if (typeof value === "string") return text(value) as T;
    if (typeof value === "number" && numbersMayHold) {
      const digits = String(value);
      const scrubbed = text(digits);
      return (scrubbed === digits ? value : scrubbed) as T;
    }
    if (value === null || typeof value !== "object") return value;
    // Deeper than any honest reply nests: scrubbed as its JSON text, not walked (the walk would
    // overflow the stack where a reply nests thousands of levels deep).
    if (depth >= MAX_WALKED_DEPTH) return scrubbedJsonText(value, text) as T;
    if (Array.isArray(value)) return value.map((v) => json(v, depth + 1)) as T;
    // Two keys scrubbed alike stay two members: the second is `[REDACTED] 2`, and so on. Each
    // key's count goes on from where it stopped: started again at 2, the search was quadratic in
    // an object whose own keys already held `[REDACTED] 2`, `[REDACTED] 3`, ...
    // (The map is made at the first clash: one for each of a million empty objects took most of
    // a second.)
    const out: Record<string, unknown> = {};
    let nextSuffix: Map<string, number> | undefined;
    for (const [k, v] of Object.entries(value)) {
      const key = text(k);
      let unique = key;
      if (Object.hasOwn(out, unique)) {
        nextSuffix ??= new Map();
        let n = nextSuffix.get(key) ?? 2;
        while (Object.hasOwn(out, unique)) unique = `${key} ${n++}`;
        nextSuffix.set(key, n);
      }
      // Deno has no `__proto__` accessor: a key `__proto__` is a member like any other.
      out[unique] = json(v, depth + 1);
    }
    return out as T;
  };
  return { text, json: (value) => json(value), lineBreaks };
}

/**
 * The patterns worth running over a text: one pass over it finds which forms' literals occur in
 * it (almost always none), and only those forms' patterns are run. (One alternation of every
 * pattern, tried at each character, cost V8 about 7 µs a character with 30 secrets holding
 * punctuation: a minute for an 8 MB reply.)
 */
function formFinder(forms: SecretForm[]): (text: string) => RegExp[] {
  // A piece of a literal that every match holds is held by every match too.
  const needlesOf = (form: SecretForm) => [...new Set(form.needles.map((n) => n.slice(0, 32)))];
  const needles = [...new Set(forms.flatMap(needlesOf))];
  const finder = createLiteralFinder(needles);
  const needleIndex = new Map(needles.map((n, i) => [n, i]));
  const patternsOf: RegExp[][] = needles.map(() => []);
  const unanchored: RegExp[] = []; // forms without a certain literal, run over every text
  for (const form of forms) {
    const pattern = new RegExp(form.source, "g");
    if (form.needles.length === 0) unanchored.push(pattern);
    for (const needle of needlesOf(form)) patternsOf[needleIndex.get(needle)!]!.push(pattern);
  }
  return (text) => {
    const found = finder.found(text);
    if (found.length === 0) return unanchored;
    return [...new Set([...unanchored, ...found.flatMap((i) => patternsOf[i]!)])];
  };
}

const MAX_WALKED_DEPTH = 200;

function scrubbedJsonText(value: object, text: (value: string) => string): string {
  try {
    return text(JSON.stringify(value));
  } catch {
    return "[a value nested too deeply to show]";
  }
}

/**
 * `secret` as a URL's host spells it, when that differs from its lower case; else null. A host
 * is lower-cased, percent-decoded (`%41` is `a`), loses tabs and line breaks, and a non-ASCII one
 * becomes punycode.
 */
function asHost(secret: string): string | null {
  // A character that ends a host: the URL would hold only a piece of the secret there.
  if (/[/?#@:\\[\]]/.test(secret)) return null;
  try {
    const host = new URL(`http://${secret}.invalid/`).hostname.slice(0, -".invalid".length);
    return host === secret.toLowerCase() ? null : host;
  } catch {
    return null; // not something a host can hold
  }
}

/**
 * One form of a secret in text: the regular expression that finds it, and literals of which
 * every match holds one (in one letter case or the other); none when no literal is certain.
 */
interface SecretForm {
  source: string;
  needles: string[];
}

/** The forms of `secret` (see the table above). */
function secretForms(secret: string): SecretForm[] {
  const utf8 = new TextEncoder();
  const escaped = JSON.stringify(secret).slice(1, -1);
  const blobs = escaped === secret ? [secret] : [secret, escaped];
  const forms = textForms(secret);
  for (const blob of blobs) {
    const bytes = utf8.encode(blob);
    forms.push(
      ...base64Forms(bytes, BASE64),
      ...base64Forms(bytes, BASE64_URL),
      hexForm(bytes),
    );
  }
  return forms;
}

/**
 * Replaces every character that lies in some occurrence of some form with the marker, one
 * marker per run. Occurrences are found overlapping, per form, so that two secrets sharing
 * characters (or one secret's encodings overlapping another's) leave no fragment behind.
 */
function replaceAll(value: string, forms: RegExp[]): string {
  const ranges: [number, number][] = [];
  for (const form of forms) {
    form.lastIndex = 0;
    for (let match = form.exec(value); match !== null; match = form.exec(value)) {
      if (match[0].length > 0) ranges.push([match.index, match.index + match[0].length]);
      form.lastIndex = match.index + 1;
    }
  }
  ranges.sort((a, b) => a[0] - b[0]);
  let out = "";
  let at = 0;
  for (let i = 0; i < ranges.length;) {
    const start = ranges[i]![0];
    let end = ranges[i]![1];
    for (i++; i < ranges.length && ranges[i]![0] <= end; i++) end = Math.max(end, ranges[i]![1]);
    out += value.slice(at, start) + REDACTED;
    at = end;
  }
  return out + value.slice(at);
}

// ---- Text forms: the secret as is, escaped, URL-encoded, or two of these stacked ----

type Codec = (char: string) => string[];

/** Characters that no serializer escapes or %-encodes. */
const PLAIN_CHAR = /^[A-Za-z0-9_.-]$/;

const SHORT_ESCAPES: Record<string, string> = {
  '"': '\\"',
  "\\": "\\\\",
  "/": "\\/",
  "'": "\\'",
  "\b": "\\b",
  "\f": "\\f",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
};

/**
 * Backslash escapes: JSON (JSON.stringify; json.dumps and Go also write `\uXXXX` for other
 * characters), plus `\/` and `\'` of other writers. `"`, `\` and control characters are
 * always escaped; others may be.
 */
const escapeCodec: Codec = (char) => {
  if (PLAIN_CHAR.test(char)) return [char];
  const units = Array.from({ length: char.length }, (_, i) => hex4(char.charCodeAt(i)));
  const forms = [
    units.map((u) => `\\u${u}`).join(""),
    units.map((u) => `\\u${u.toUpperCase()}`).join(""),
  ];
  const short = SHORT_ESCAPES[char];
  if (short) forms.push(short);
  if (!(char === '"' || char === "\\" || char < " ")) forms.push(char);
  return forms;
};

/** %XX per UTF-8 byte in either case (encodeURIComponent, URLSearchParams' + for a space). */
const urlCodec: Codec = (char) => {
  if (PLAIN_CHAR.test(char)) return [char];
  const bytes = [...new TextEncoder().encode(char)].map((b) => b.toString(16).padStart(2, "0"));
  const forms = [
    bytes.map((b) => `%${b}`).join(""),
    bytes.map((b) => `%${b.toUpperCase()}`).join(""),
  ];
  if (char === " ") forms.push("+");
  else if (char !== "%") forms.push(char);
  return forms;
};

/** Which encodings, innermost first, may stand between the secret and the text. */
const CODEC_CHAINS: Codec[][] = [
  [],
  [escapeCodec],
  [urlCodec],
  [escapeCodec, escapeCodec],
  [urlCodec, urlCodec],
  [urlCodec, escapeCodec],
  [escapeCodec, urlCodec],
];

/** One pattern per chain of encodings, each applied to every character alike. */
function textForms(secret: string): SecretForm[] {
  return CODEC_CHAINS.map((chain) => ({
    source: [...secret].map((c) => charPattern(c, chain)).join(""),
    needles: windowSpellings(spelledChars(secret, chain)),
  }));
}

/** The spellings of each character of `secret` after `chain`, worked out once per character. */
function spelledChars(secret: string, chain: Codec[]): string[][] {
  const known = new Map<string, string[]>();
  return [...secret].map((c) => known.get(c) ?? known.set(c, spellings(c, chain)).get(c)!);
}

/** At most this many spellings of a window of the secret are looked for. */
const MAX_SPELLINGS = 16;
/** A window is long enough once its shortest spelling has this many characters. */
const ENOUGH_CHARACTERS = 24;

/**
 * The spellings of the window of consecutive characters (each with the spellings given) whose
 * shortest spelling is longest, among windows spelled at most `MAX_SPELLINGS` ways in ASCII:
 * every spelling of the whole holds one of them. Letter case is one spelling (the literal finder
 * ignores it). None when no character is spelled in ASCII alone.
 */
function windowSpellings(chars: string[][]): string[] {
  const usable = chars.map((forms) => forms.every(isAscii));
  const shortest = chars.map((forms) => Math.min(...forms.map((f) => f.length)));
  let best = { from: 0, to: 0, length: 0 };
  // Two pointers: the window [from, to) grows while it is spelled few enough ways.
  let to = 0, ways = 1, length = 0;
  for (let from = 0; from < chars.length; from++) {
    if (to < from) [to, ways, length] = [from, 1, 0];
    while (
      to < chars.length && usable[to] && ways * chars[to]!.length <= MAX_SPELLINGS &&
      length < ENOUGH_CHARACTERS
    ) {
      ways *= chars[to]!.length;
      length += shortest[to]!;
      to++;
    }
    if (length > best.length) best = { from, to, length };
    if (to > from) {
      ways /= chars[from]!.length;
      length -= shortest[from]!;
    }
  }
  return chars.slice(best.from, best.to).reduce<string[]>(
    (words, forms) => words.flatMap((w) => forms.map((f) => w + f)),
    best.length > 0 ? [""] : [],
  );
}

/**
 * Every way one character reads after `chain`, letter case aside: the strings `charPattern`
 * matches, in lower case.
 */
function spellings(char: string, chain: Codec[]): string[] {
  const [codec, ...rest] = chain;
  // ASCII only: "\u212a" (the Kelvin sign) is "k" in lower case, yet the finder reads it as other.
  if (codec === undefined) return [char < "\x80" ? char.toLowerCase() : char];
  const words = codec(char).flatMap((form) =>
    [...form].reduce<string[]>(
      (words, c) => words.flatMap((w) => spellings(c, rest).map((s) => w + s)),
      [""],
    )
  );
  return [...new Set(words)];
}

/**
 * The ways one character reads after `chain`. Longer forms come first, so a match takes a whole
 * escape (`\\` rather than its first `\`): scrubbed JSON text stays JSON.
 */
function charPattern(char: string, chain: Codec[]): string {
  const [codec, ...rest] = chain;
  if (codec === undefined) return escapeRegExp(char);
  const forms = [...new Set(codec(char))].sort((a, b) => b.length - a.length);
  const alternatives = [
    ...new Set(forms.map((form) => [...form].map((c) => charPattern(c, rest)).join(""))),
  ];
  return alternatives.length === 1 ? alternatives[0]! : `(?:${alternatives.join("|")})`;
}

function hex4(unit: number): string {
  return unit.toString(16).padStart(4, "0");
}

// ---- Binary forms: base64 and hex of the bytes ----

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const BASE64_URL = BASE64.slice(0, 62) + "-_";

/**
 * The secret's bytes inside a base64 blob, at each of the three alignments. A base64 character
 * holds 6 bits; the characters made only of the secret's bits are fixed, and the one at each
 * edge that shares bits with the neighbouring bytes is matched by a class of the characters
 * that agree on the secret's bits, so it is replaced too (taking a few neighbouring bits along).
 */
function base64Forms(bytes: Uint8Array, alphabet: string): SecretForm[] {
  const bits = bytes.length * 8;
  const bit = (i: number) => (bytes[i >> 3]! >> (7 - (i & 7))) & 1;
  /** The value of secret bits [from, from + count). */
  const value = (from: number, count: number) => {
    let v = 0;
    for (let i = from; i < from + count; i++) v = (v << 1) | bit(i);
    return v;
  };
  const charClass = (matches: (v: number) => boolean) =>
    `[${[...alphabet].filter((_, v) => matches(v)).map(escapeRegExp).join("")}]`;
  const forms: SecretForm[] = [];
  for (const offset of [0, 1, 2]) {
    const start = offset * 8; // where the secret's bits start in the blob's 24-bit group
    const end = start + bits;
    const first = Math.ceil(start / 6);
    const last = Math.floor(end / 6);
    let pattern = "";
    if (start % 6 !== 0) {
      // Its low bits are the secret's first bits.
      const known = (first * 6) - start;
      const want = value(0, known);
      pattern += `${charClass((v) => (v & ((1 << known) - 1)) === want)}?`;
    }
    let needle = ""; // the characters made only of the secret's bits
    for (let i = first; i < last; i++) needle += alphabet[value(i * 6 - start, 6)]!;
    pattern += escapeRegExp(needle);
    if (end % 6 !== 0) {
      // Its high bits are the secret's last bits; padding may follow when the blob ends.
      const known = end - last * 6;
      const want = value(bits - known, known);
      pattern += `(?:${charClass((v) => v >> (6 - known) === want)}={0,2})?`;
    }
    forms.push({ source: pattern, needles: needle === "" ? [] : [needle] });
  }
  return forms;
}

function hexForm(bytes: Uint8Array): SecretForm {
  const nibble = (n: number) => {
    const digit = n.toString(16);
    return n < 10 ? digit : `[${digit}${digit.toUpperCase()}]`;
  };
  return {
    source: [...bytes].map((b) => nibble(b >> 4) + nibble(b & 15)).join(""),
    needles: [[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")],
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
}
