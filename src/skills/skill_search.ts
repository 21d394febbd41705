/**
 * Skills as `search_tools` candidates: each saved skill is ranked together with the tools, by
 * its name and description (see tool_search.ts).
 */
import type { SearchEntry } from "../catalog/catalog.ts";
import type { SkillStore } from "./skill_store.ts";

export function skillSearchEntries(store: SkillStore): SearchEntry[] {
  return store.list().map((skill) => ({
    document: {
      id: `skills.${skill.name}`,
      name: skill.name,
      description: skill.description,
      params: "",
      server: "skills",
      serverDescription: "saved scripts",
    },
    stub: store.stub(skill),
  }));
}
