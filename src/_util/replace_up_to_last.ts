/**
 * `text.replace(pattern, replace)` for a pattern whose every match ends in `close`, read in one
 * pass (pure). A form such as `\$\{[^}]*\}` scans from each opening to the end of the text when
 * no `close` follows, so text of openings alone (`${${${…`) cost quadratic time: 100,000
 * characters of a client's config took `import` 7.6 s. No match ends past the last `close`: the
 * text after it is kept as it is, unsearched, and before it every opening finds its close.
 */
export function replaceUpToLast(
  text: string,
  close: string,
  pattern: RegExp,
  replace: (match: string, ...groups: string[]) => string,
): string {
  const end = text.lastIndexOf(close);
  if (end < 0) return text;
  const cut = end + close.length;
  return text.slice(0, cut).replace(pattern, replace) + text.slice(cut);
}
