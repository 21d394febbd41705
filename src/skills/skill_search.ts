/**
 * Skills in `search_tools` results: the words of the query matched against skill names and
 * descriptions, scored like tools.
 */
import type { SkillStore } from "./skill_store.ts";

export function searchSkills(store: SkillStore, query: string) {
  const terms = query.toLowerCase().split(/[^a-z0-9]+/).filter((t) => t.length > 1);
  return store.list().flatMap((skill) => {
    let score = terms.length === 0 ? 1 : 0;
    for (const term of terms) {
      if (skill.name.includes(term)) score += 3;
      if (skill.description.toLowerCase().includes(term)) score += 1;
    }
    return score > 0 ? [{ name: `skills.${skill.name}`, stub: store.stub(skill), score }] : [];
  });
}
