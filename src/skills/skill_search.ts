/**
 * Skills in `search_tools` results: the words of the query matched against skill names and
 * descriptions, scored like tools.
 */
import { matchScore, queryTerms } from "../catalog/search_score.ts";
import type { SkillStore } from "./skill_store.ts";

export function searchSkills(store: SkillStore, query: string) {
  const terms = queryTerms(query);
  return store.list().flatMap((skill) => {
    const score = matchScore(terms, [[skill.name, 3], [skill.description.toLowerCase(), 1]]);
    return score > 0 ? [{ name: `skills.${skill.name}`, stub: store.stub(skill), score }] : [];
  });
}
