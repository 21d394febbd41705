/**
 * Reads JSON with comments and trailing commas (VS Code's `mcp.json` allows both; the other
 * clients' files are plain JSON, which this reads too), and says what a rewrite would lose:
 * comments, all but the last of duplicate keys, and numbers that JSON cannot hold exactly.
 *
 * A parse error names the line and column only, never the text there: a client file may be a
 * link to a secret (V8's own message quotes the start of the text).
 */

export interface JsoncResult {
  value: unknown;
  hadComments: boolean;
  /** Keys given twice in one object, as `path.to.key` (the last one wins, as in JSON.parse). */
  duplicateKeys: string[];
  /** Numbers as written whose value changes when read (9007199254740993, 1e400, -0). */
  lossyNumbers: string[];
}

const MAX_DEPTH = 512;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
/**
 * JSON's whitespace, and the line terminators a // comment ends at (JavaScript's: a comment
 * that ends there for another reader must end there for us too).
 */
const WHITESPACE = new Set([" ", "\t", "\n", "\r", "\u2028", "\u2029"]);
const LINE_END = new Set(["\n", "\r", "\u2028", "\u2029"]);

/** Parses JSONC text; throws `SyntaxError` naming the line and column of the first error. */
export function parseJsonc(text: string): JsoncResult {
  let i = 0;
  let hadComments = false;
  const duplicateKeys: string[] = [];
  const lossyNumbers: string[] = [];

  const fail = (what: string, at = i): never => {
    const before = text.slice(0, at);
    const line = before.split(/\r\n|\r|\n|\u2028|\u2029/).length;
    const column = at -
      Math.max(...["\n", "\r", "\u2028", "\u2029"].map((c) => before.lastIndexOf(c)));
    throw new SyntaxError(`${what} at line ${line}, column ${column}`);
  };
  const skip = () => {
    while (i < text.length) {
      const c = text[i]!;
      if (WHITESPACE.has(c)) i++;
      else if (c === "/" && text[i + 1] === "/") {
        hadComments = true;
        while (i < text.length && !LINE_END.has(text[i]!)) i++;
      } else if (c === "/" && text[i + 1] === "*") {
        hadComments = true;
        const end = text.indexOf("*/", i + 2);
        if (end === -1) fail("unterminated comment");
        i = end + 2;
      } else return;
    }
  };
  const string = (): string => {
    const start = i;
    i++;
    while (i < text.length && text[i] !== '"') {
      if (text.charCodeAt(i) < 0x20) fail("control character in a string");
      i += text[i] === "\\" ? 2 : 1;
    }
    if (i >= text.length) fail("unterminated string", start);
    i++;
    try {
      return JSON.parse(text.slice(start, i));
    } catch {
      return fail("invalid escape in a string", start);
    }
  };
  const value = (path: string, depth: number): unknown => {
    if (depth > MAX_DEPTH) fail("nested too deeply");
    skip();
    const c = text[i];
    if (c === "{") {
      i++;
      // Own properties even for "__proto__", as JSON.parse makes them.
      const obj: Record<string, unknown> = {};
      const seen = new Set<string>();
      for (;;) {
        skip();
        if (text[i] === "}") break;
        if (text[i] !== '"') fail("expected a key in quotes or }");
        const key = string();
        const keyPath = path === "" ? key : `${path}.${key}`;
        if (seen.has(key)) duplicateKeys.push(keyPath);
        seen.add(key);
        skip();
        if (text[i] !== ":") fail("expected :");
        i++;
        const v = value(keyPath, depth + 1);
        Object.defineProperty(obj, key, {
          value: v,
          enumerable: true,
          writable: true,
          configurable: true,
        });
        skip();
        if (text[i] === ",") i++;
        else if (text[i] !== "}") fail("expected , or }");
      }
      i++;
      return obj;
    }
    if (c === "[") {
      i++;
      const list: unknown[] = [];
      for (;;) {
        skip();
        if (text[i] === "]") break;
        list.push(value(`${path}[${list.length}]`, depth + 1));
        skip();
        if (text[i] === ",") i++;
        else if (text[i] !== "]") fail("expected , or ]");
      }
      i++;
      return list;
    }
    if (c === '"') return string();
    for (const [word, v] of [["true", true], ["false", false], ["null", null]] as const) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return v;
      }
    }
    NUMBER.lastIndex = i;
    const number = NUMBER.exec(text);
    if (number) {
      i += number[0].length;
      const n = Number(number[0]);
      if (!sameNumber(number[0], n)) lossyNumbers.push(`${path || "(the file)"}: ${number[0]}`);
      return n;
    }
    return fail(i >= text.length ? "unexpected end of the text" : "unexpected character");
  };

  const result = value("", 0);
  skip();
  if (i < text.length) fail("unexpected text after the end");
  return { value: result, hadComments, duplicateKeys, lossyNumbers };
}

/** Whether `n` (read from `written`) is the number written: same sign, digits and scale. */
function sameNumber(written: string, n: number): boolean {
  if (!Number.isFinite(n) || Object.is(n, -0)) return false;
  return decimal(written) === decimal(JSON.stringify(n));
}

/** A number's text as sign, significant digits and exponent ("1.50" and "15e-1" agree). */
function decimal(text: string): string {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text)!;
  const [, sign, whole, fraction = "", exp = "0"] = m as unknown as string[];
  let digits = whole! + fraction;
  let exponent = Number(exp) - fraction.length;
  const lead = digits.match(/^0*/)![0].length;
  digits = digits.slice(lead);
  // Counted, not matched: `/0*$/` tried from every zero of a long run that a digit ends
  // (`0.1000…01`, 80,000 characters: 8.8 s).
  let trail = 0;
  while (trail < digits.length && digits[digits.length - 1 - trail] === "0") trail++;
  digits = digits.slice(0, digits.length - trail);
  exponent += trail;
  return digits === "" ? "0" : `${sign}${digits}e${exponent}`;
}
