/**
 * Whether a JSON text would hold the host's one thread too long once parsed, read off the text
 * before `JSON.parse` sees it. Parsing and walking JSON costs the host little per byte of text
 * (an 8 MB string: a few milliseconds), but much per byte of these, measured in process for
 * about 7 MB (2026-12, 2 cores, loaded):
 *
 * - object keys that take V8 to a hidden class it has not made yet in this text, which is a key
 *   after keys in an order not seen before: 6,000 objects of 100 keys of their own took
 *   `JSON.parse` 1.4 s, and 15,000 objects of the same 92 keys, each in another order, 0.9 s
 *   (attacker 66: counting only new names let those through);
 * - keys of an object of more than 127 named keys, which V8 keeps as a dictionary: one object
 *   of 600,000 keys took 0.35 s to parse, and every walk over it as long again (the SDK's
 *   validation, scrubbing, the result's depth and size, its observed shape: 4 s in all); rows
 *   of 140 keys, 7.8 MB, parsed 3 to 5 times slower than rows of 127 (attacker 67: counted from
 *   1,000 keys, they held the host 0.5 to 1.5 s a message);
 * - nesting: 1,000,000 levels took 0.24 s to parse and 0.43 s to write back;
 * - objects and arrays, each a walk's step: 1,300,000 empty objects (3.9 MB) took 0.4 s to
 *   parse and 2.9 s to walk (0.9 s once the walks were made leaner);
 * - values, each a step too: an array of 3,900,000 zeros (7.8 MB) held the host 0.5 s.
 *
 * Keys of one shape repeated (rows of a table) cost what text does: 120,000 rows of 5 keys took
 * 14 ms. So a text is refused when it nests deeper than `maxDepth`, or holds more than
 * `maxValues` values (counted by the commas between them), `maxContainers` objects and arrays,
 * or `maxCostlyKeys` costly keys: a key that makes a transition not seen before in the text
 * (from the keys of its object before it, in their order, as V8's hidden classes go), or a key
 * of an object past `WIDE_OBJECT_KEYS` keys. One pass, linear in the text (strings are skipped
 * with `indexOf`); V8's own rules are only approximated. Pure.
 */

/**
 * Keys an object may have before each further one counts as costly: V8 keeps an object of more
 * named keys as a dictionary (array-index keys, "0" to "9", are kept apart; counted all the
 * same, which errs on the costly side).
 */
export const WIDE_OBJECT_KEYS = 127;

export interface JsonCostLimits {
  maxDepth: number;
  maxCostlyKeys: number;
  maxContainers: number;
  maxValues: number;
}

/**
 * What messages the host reads may hold (see the module comment): rows of a table pass up to
 * 250,000 of them (about 8 MiB of rows of two short fields).
 */
export const JSON_COST_LIMITS: JsonCostLimits = {
  maxDepth: 1000,
  maxCostlyKeys: 50_000,
  maxContainers: 250_000,
  maxValues: 2_000_000,
};

/**
 * A text shorter than this is not scanned: it cannot hold enough keys, levels or values to cost
 * more than a few milliseconds (a key is at least 4 characters: `"a":1` less its value).
 */
export const SCANNED_FROM_CHARS = 64 * 1024;

/**
 * Why `text` would cost too much to parse, or null. Not a validator: a text that is not JSON
 * gives whatever the scan saw, and `JSON.parse` says the rest. A text shorter than `scanFrom`
 * is not scanned.
 */
export function jsonCostProblem(
  text: string,
  limits: JsonCostLimits = JSON_COST_LIMITS,
  scanFrom = SCANNED_FROM_CHARS,
): string | null {
  if (text.length < scanFrom) return null;
  /** Each open container: an object's shape (its keys so far, in order), or ARRAY. */
  const shapes: number[] = [];
  /** Keys so far of each open object. */
  const counts: number[] = [];
  /** The transitions seen: from each shape (0: no keys yet), by key, to the next shape. */
  const transitions: (Map<string, number> | undefined)[] = [undefined];
  let costly = 0;
  let containers = 0;
  let commas = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i + 1);
      if (end === -1) return null;
      const top = shapes.length - 1;
      if (top >= 0 && shapes[top] !== ARRAY && isFollowedByColon(text, end + 1)) {
        let isCostly = ++counts[top]! > WIDE_OBJECT_KEYS;
        if (!isCostly) {
          const from = shapes[top]!;
          const name = text.slice(i + 1, end);
          const next = (transitions[from] ??= new Map()).get(name);
          if (next === undefined) {
            isCostly = true;
            transitions[from]!.set(name, transitions.length);
            shapes[top] = transitions.length;
            transitions.push(undefined);
          } else {
            shapes[top] = next;
          }
        }
        if (isCostly && ++costly > limits.maxCostlyKeys) {
          return `it holds more than ${limits.maxCostlyKeys.toLocaleString("en")} object keys ` +
            `that are costly to read (of names, or in an order, not seen before in it, or in an ` +
            `object of more than ${WIDE_OBJECT_KEYS.toLocaleString("en")} keys)`;
        }
      }
      i = end;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      shapes.push(c === OPEN_BRACE ? 0 : ARRAY);
      counts.push(0);
      if (shapes.length > limits.maxDepth) {
        return `it is nested deeper than ${limits.maxDepth.toLocaleString("en")} levels`;
      }
      if (++containers > limits.maxContainers) {
        return `it holds more than ${limits.maxContainers.toLocaleString("en")} objects and arrays`;
      }
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      shapes.pop();
      counts.pop();
    } else if (c === COMMA && ++commas >= limits.maxValues) {
      return `it holds more than ${limits.maxValues.toLocaleString("en")} values`;
    }
  }
  return null;
}

/** The shape of an open array, which has no keys. */
const ARRAY = -1;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** Where the string whose contents start at `from` ends (its closing quote), or -1. */
function stringEnd(text: string, from: number): number {
  for (let at = text.indexOf('"', from); at !== -1; at = text.indexOf('"', at + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
  return -1;
}

/** Whether the next character after blank space at `from` is a colon (the string was a key). */
function isFollowedByColon(text: string, from: number): boolean {
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === COLON) return true;
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return false;
  }
  return false;
}
