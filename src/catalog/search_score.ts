/**
 * The one scoring rule of `search_tools`, for tools and skills alike: each query word found in
 * a field adds that field's weight; an empty query matches everything with score 1.
 */

/** The words of a query (lowercase, two characters or more). */
export function queryTerms(query: string): string[] {
  return query.toLowerCase().split(/[^a-z0-9]+/).filter((t) => t.length > 1);
}

/** Score of one candidate: `fields` pairs lowercase text with its weight. */
export function matchScore(
  terms: readonly string[],
  fields: [text: string, weight: number][],
): number {
  if (terms.length === 0) return 1;
  let score = 0;
  for (const term of terms) {
    for (const [text, weight] of fields) if (text.includes(term)) score += weight;
  }
  return score;
}
