/**
 * Text from elsewhere (client files, a script's tool arguments) is shown to a person, so it must
 * not be able to move the cursor, recolour or hide text, start a new line, or reorder what
 * follows (bidi marks). This module finds such characters and shows them escaped (`\u{1b}`), so a
 * printed line is what it says.
 */

/**
 * C0 and C1 controls (newline, carriage return and escape among them), the line and paragraph
 * separators, format characters (the bidi marks, embeddings, overrides and isolates, the Arabic
 * letter mark, annotation anchors), every character Unicode says to draw as nothing when
 * unsupported (Default_Ignorable_Code_Point: zero-width ones, the soft hyphen, joiners, invisible
 * operators, the Hangul fillers, variation selectors, which can spell ASCII as tag characters do,
 * and the tag characters U+E0000-E007F), and the blank braille pattern, drawn as a space. A lone
 * emoji presentation selector is kept.
 */
const UNSAFE = new RegExp(
  "[\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}\\p{Default_Ignorable_Code_Point}\\u2800](?<![\\uFE0E\\uFE0F])" +
    // An emoji's one presentation selector (the one in ⚠️) is text; two or more in a row spell.
    "|[\\uFE0E\\uFE0F](?=[\\uFE0E\\uFE0F])|(?<=[\\uFE0E\\uFE0F])[\\uFE0E\\uFE0F]",
  "gu",
);

/** Whether `text` holds a character that a terminal or text view would act on. */
export function hasUnsafeCharacters(text: string): boolean {
  UNSAFE.lastIndex = 0;
  return UNSAFE.test(text);
}

/**
 * Three or more of the same escape in a row, shown once with a count (`\u{2028}×200`); up to
 * 1,000 at a time, for the same stack as STACKED_MARKS.
 */
const REPEATED_ESCAPE = /(\\u\{[0-9a-f]+\})\1{2,999}/g;

/**
 * `text` with every unsafe character written as `\u{hex}` (a backslash stays as it is: the
 * escape is for the reader, not for parsing back), a run of one written once with its count.
 * `keepNewlines` leaves `\n` alone, for text whose line breaks are ours (pretty-printed JSON,
 * where strings' own newlines are escaped).
 */
export function escapeUnsafe(text: string, options: { keepNewlines?: boolean } = {}): string {
  const escaped = (c: string) => `\\u{${c.codePointAt(0)!.toString(16)}}`;
  return text
    .replace(UNSAFE, (c) => c === "\n" && options.keepNewlines ? c : escaped(c))
    .replace(STACKED_MARKS, (run) => [...run].map(escaped).join(""))
    .replace(REPEATED_ESCAPE, (run, one: string) => `${one}×${run.length / one.length}`);
}

/**
 * Combining marks stacked on one character beyond what any script writes: drawn over the lines
 * around them, they can cover text. Matched 1,000 at a time (a longer run in consecutive
 * matches, fewer than 5 left on an escape's brace): V8's backtracking stack overflowed on an
 * unbounded run of 3.4 million (attacker 62).
 */
const STACKED_MARKS = /\p{M}{5,1000}/gu;

/** Runs of whitespace longer than this are shortened in printed text. */
const LONG_SPACE = /(?<=\S)[^\S\n]{9,}/gu;

/**
 * `text` with every run of more than 8 whitespace characters inside a line written as `␣×N`:
 * padding cannot push the rest of a command line off screen.
 */
export function shortenSpaces(text: string): string {
  return text.replace(LONG_SPACE, (run) => `␣×${[...run].length}`);
}
