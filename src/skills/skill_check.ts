/**
 * What makes code a valid skill, decided from its analysis (pure): a valid name, code that
 * parses, a top-level function of that name, and only `mcp_tools` calls that exist.
 */
import type { Analysis } from "../analysis/python_analysis.ts";
import { checkAnalysis } from "../agent/validation.ts";
import type { Catalog } from "../catalog/catalog.ts";
import { isPythonKeyword } from "../catalog/identifiers.ts";
import { type Skill, SKILL_NAME } from "./skill_store.ts";
import { typedSignature } from "./skill_types.ts";

export type SkillCheck =
  | { ok: true; skill: Omit<Skill, "version" | "saved_at"> }
  | { ok: false; problems: string[] };

export function checkSkillName(name: string): string | null {
  if (!SKILL_NAME.test(name) || isPythonKeyword(name)) {
    return `"${name}" is not a valid skill name (lowercase letters, digits and _, not starting with __ or _skill_, not a Python keyword)`;
  }
  return null;
}

export function checkSkill(
  input: { name: string; code: string; description: string },
  analysis: Analysis,
  catalog: Catalog,
): SkillCheck {
  const badName = checkSkillName(input.name);
  if (badName) return { ok: false, problems: [badName] };
  if ("syntax_error" in analysis) return { ok: false, problems: [analysis.syntax_error] };
  const fn = analysis.functions[input.name];
  if (!fn) {
    const defined = Object.keys(analysis.functions).join(", ") || "none";
    return {
      ok: false,
      problems: [
        `the code must define a top-level function named ${input.name} (it defines: ${defined})`,
      ],
    };
  }
  const problems = checkAnalysis({ ...analysis, outputs: true }, catalog);
  if (problems.length > 0) return { ok: false, problems };
  const tools = new Map<string, Skill["tools"][number]>();
  for (const call of analysis.calls) {
    const entry = catalog.server(call.module)!;
    const name = call.function.endsWith("_async") ? call.function.slice(0, -6) : call.function;
    const spec = entry.specs.find((s) => s.pyName === name)!;
    tools.set(`${entry.server}.${spec.tool}`, {
      server: entry.server,
      tool: spec.tool,
      schema: spec.schemaHash,
    });
  }
  return {
    ok: true,
    skill: {
      name: input.name,
      description: input.description.trim() || fn.doc || "",
      code: input.code,
      signature: fn.signature,
      typed_signature: typedSignature(fn, catalog),
      is_async: fn.is_async,
      tools: [...tools.values()],
    },
  };
}
