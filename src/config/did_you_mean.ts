/** Suggesting the name a typo meant (pure). */

/** How many edits apart a name and the one it meant may be. */
const MAX_EDITS = 2;

/** `; did you mean "x"?` for the known name within two edits of `name`, else "". */
export function didYouMean(name: string, known: readonly string[]): string {
  const best = closestName(name, known);
  return best === undefined ? "" : `; did you mean "${best}"?`;
}

/**
 * The known name within two edits of `name` (the closest), if any. Linear in the names' lengths:
 * the names are others' (a client's arguments, an upstream's tool names, up to megabytes), and a
 * full edit-distance table for each pair held the host for seconds to minutes (a 9 MB argument
 * name: 6.8 s; 50 names against 1,200 tools of 500-character names: 88 s).
 */
export function closestName(name: string, known: readonly string[]): string | undefined {
  const wanted = name.toLowerCase();
  let best: string | undefined;
  let bestDistance = MAX_EDITS + 1;
  for (const candidate of known) {
    if (Math.abs(candidate.length - name.length) > MAX_EDITS) continue; // more edits than that
    const distance = editsWithin(wanted, candidate.toLowerCase(), bestDistance - 1);
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return best;
}

/**
 * The edit distance of `a` and `b` when it is at most `max`, else `max + 1`: only the cells of
 * the table within `max` of its diagonal are worked out (Ukkonen's band), so the cost is
 * about (2 * max + 1) cells a character.
 */
export function editsWithin(a: string, b: string, max: number): number {
  const over = max + 1;
  if (max < 0 || Math.abs(a.length - b.length) > max) return over;
  // Two rows, reused; a cell outside the band reads as `over`.
  let previous = new Array<number>(b.length + 2).fill(over);
  let current = new Array<number>(b.length + 2).fill(over);
  for (let j = 0; j <= Math.min(b.length, max); j++) previous[j] = j;
  for (let i = 1; i <= a.length; i++) {
    const from = Math.max(1, i - max);
    const to = Math.min(b.length, i + max);
    current[from - 1] = from === 1 && i <= max ? i : over;
    let rowBest = current[from - 1]!;
    for (let j = from; j <= to; j++) {
      const cell = Math.min(
        previous[j]! + 1,
        current[j - 1]! + 1,
        previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
        over,
      );
      current[j] = cell;
      if (cell < rowBest) rowBest = cell;
    }
    current[to + 1] = over;
    if (rowBest > max) return over;
    [previous, current] = [current, previous];
  }
  return previous[b.length]!;
}
