/**
 * Which of many literal strings occur in a text, in one pass over it (Aho-Corasick), with ASCII
 * letters matched in either case. The scrubber asks this before it runs any regular expression:
 * hundreds of secret forms in one alternation cost V8 microseconds per character, this a few
 * nanoseconds.
 *
 * Only ASCII characters can be part of a literal; every other character of the text ends any
 * match in progress.
 */
export interface LiteralFinder {
  /** The indices (into the literals given) of those that occur in `text`. */
  found(text: string): readonly number[];
}

const NONE: readonly number[] = Object.freeze([]);

export function isAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) >= 128) return false;
  return true;
}

export function createLiteralFinder(literals: readonly string[]): LiteralFinder {
  for (const literal of literals) {
    if (literal.length === 0 || !isAscii(literal)) {
      throw new TypeError(`a literal must be non-empty ASCII: ${JSON.stringify(literal)}`);
    }
  }
  const alphabet = alphabetOf(literals);
  const trie = buildTrie(literals, alphabet);
  const { next, ends } = automaton(trie, alphabet.size);
  const width = alphabet.size;
  return {
    found(text) {
      // Made at the first literal found (almost never).
      let seen: Uint8Array | undefined;
      let found: number[] | undefined;
      let state = 0;
      for (let i = 0; i < text.length; i++) {
        const code = text.charCodeAt(i);
        state = next[state * width + (code < 128 ? alphabet.symbols[code]! : 0)]!;
        const ending = ends[state];
        if (ending === undefined) continue;
        seen ??= new Uint8Array(literals.length);
        found ??= [];
        for (const index of ending) {
          if (seen[index] === 0) {
            seen[index] = 1;
            found.push(index);
          }
        }
      }
      return found ?? NONE;
    },
  };
}

/**
 * Symbols: one per character the literals use (a letter in either case is one symbol), and 0
 * for every other character.
 */
interface Alphabet {
  symbols: Uint8Array;
  size: number;
}

function alphabetOf(literals: readonly string[]): Alphabet {
  const symbols = new Uint8Array(128);
  let size = 1;
  for (const char of new Set(literals.join("").toLowerCase())) {
    const code = char.charCodeAt(0);
    symbols[code] = size;
    if (char !== char.toUpperCase()) symbols[char.toUpperCase().charCodeAt(0)] = size;
    size++;
  }
  return { symbols, size };
}

interface Trie {
  /** children[state]: symbol → state. */
  children: Map<number, number>[];
  /** The literals that end at each state (by index). */
  endsAt: number[][];
}

function buildTrie(literals: readonly string[], alphabet: Alphabet): Trie {
  const trie: Trie = { children: [new Map()], endsAt: [[]] };
  literals.forEach((literal, index) => {
    let state = 0;
    for (let i = 0; i < literal.length; i++) {
      const symbol = alphabet.symbols[literal.charCodeAt(i)]!;
      let child = trie.children[state]!.get(symbol);
      if (child === undefined) {
        child = trie.children.length;
        trie.children.push(new Map());
        trie.endsAt.push([]);
        trie.children[state]!.set(symbol, child);
      }
      state = child;
    }
    trie.endsAt[state]!.push(index);
  });
  return trie;
}

/**
 * The trie completed into a full transition table (every state, every symbol), breadth first:
 * a missing edge goes where the longest proper suffix read so far leads, and each state also
 * reports the literals ending at that suffix.
 */
function automaton(
  trie: Trie,
  width: number,
): { next: Int32Array; ends: (number[] | undefined)[] } {
  const states = trie.children.length;
  const next = new Int32Array(states * width);
  const fallback = new Int32Array(states);
  const ends: (number[] | undefined)[] = new Array(states);
  const queue: number[] = [0];
  for (let head = 0; head < queue.length; head++) {
    const state = queue[head]!;
    const own = trie.endsAt[state]!;
    const inherited = state === 0 ? undefined : ends[fallback[state]!];
    const all = inherited ? [...own, ...inherited] : own;
    ends[state] = all.length > 0 ? all : undefined;
    for (let symbol = 0; symbol < width; symbol++) {
      const child = trie.children[state]!.get(symbol);
      if (child === undefined) {
        next[state * width + symbol] = state === 0 ? 0 : next[fallback[state]! * width + symbol]!;
        continue;
      }
      next[state * width + symbol] = child;
      fallback[child] = state === 0 ? 0 : next[fallback[state]! * width + symbol]!;
      queue.push(child);
    }
  }
  return { next, ends };
}
