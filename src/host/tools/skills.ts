/**
 * Skill tools: save working code once as a named function, list, read and delete skills.
 * Scripts use them with `from skills import <name>`.
 */
import type { McpServer } from "@modelcontextprotocol/server";
import { z } from "zod";
import { toolArguments } from "./tool_arguments.ts";
import type { Analysis } from "../../analysis/python_analysis.ts";
import type { Catalog } from "../../catalog/catalog.ts";
import { checkSkill, checkSkillName } from "../../skills/skill_check.ts";
import { SkillLimitError, type SkillStore } from "../../skills/skill_store.ts";
import { LockTimeoutError } from "../../skills/file_lock.ts";

export interface SkillToolsOptions {
  store: SkillStore;
  catalog: () => Catalog;
  /** Runs the static analysis of code in a sandbox. */
  analyse: (code: string) => Promise<Analysis>;
  /** No save_skill and delete_skill (settings.skills_read_only). */
  readOnly: boolean;
}

const text = (value: string, isError = false) => ({
  content: [{ type: "text" as const, text: value }],
  isError,
});

export function registerSkillTools(server: McpServer, options: SkillToolsOptions): void {
  if (!options.readOnly) registerSkillWriting(server, options);
  registerSkillReading(server, options);
}

const nameInput = { name: z.string().max(64) };

const saveInput = {
  name: z.string().max(64).describe("Lowercase identifier; also the function's name."),
  code: z.string().max(100_000).describe(
    "Python source defining the function (it may import mcp_tools).",
  ),
  description: z.string().max(4000).describe("What the skill does and returns."),
};

/** save_skill and delete_skill: left out when the config makes skills read-only. */
function registerSkillWriting(server: McpServer, options: SkillToolsOptions): void {
  const { store } = options;
  server.registerTool("save_skill", {
    title: "Save a skill",
    description:
      "Save working Python as a reusable skill: the code must define a top-level function with the skill's name. Later scripts call it with `from skills import <name>`. Saving over a skill keeps the previous version. At most 200 skills, 4 MiB of code in all.",
    inputSchema: toolArguments(saveInput),
  }, async (args) => {
    const badName = checkSkillName(args.name);
    if (badName) return text(`Cannot save skill: ${badName}`, true);
    const checked = checkSkill(args, await options.analyse(args.code), options.catalog());
    if (!checked.ok) {
      return text(`Cannot save skill ${args.name}:\n- ${checked.problems.join("\n- ")}`, true);
    }
    let saved;
    try {
      saved = await store.save(checked.skill);
    } catch (error) {
      if (!(error instanceof SkillLimitError || error instanceof LockTimeoutError)) throw error;
      return text(`Cannot save skill ${args.name}: ${error.message}`, true);
    }
    const tools = saved.tools.map((t) => `${t.server}.${t.tool}`).join(", ") || "none";
    return {
      ...text(
        `Saved skill ${saved.name} v${saved.version} (tools: ${tools}).\n${store.stub(saved)}`,
      ),
      structuredContent: { name: saved.name, version: saved.version, tools: saved.tools },
    };
  });

  server.registerTool("delete_skill", {
    title: "Delete a skill",
    description: "Deletes a saved skill and its archived versions.",
    inputSchema: toolArguments(nameInput),
    annotations: { destructiveHint: true },
  }, async (args) => {
    let deleted;
    try {
      deleted = await store.delete(args.name);
    } catch (error) {
      if (!(error instanceof LockTimeoutError)) throw error;
      return text(`Cannot delete skill ${args.name}: ${error.message}`, true);
    }
    return deleted
      ? text(`Deleted skill ${args.name}.`)
      : text(`Cannot delete skill: no skill named "${args.name}"`, true);
  });
}

function registerSkillReading(server: McpServer, options: SkillToolsOptions): void {
  const { store } = options;
  server.registerTool("list_skills", {
    title: "List skills",
    description:
      "All saved skills with their signatures; a skill whose tools vanished or changed is marked stale.",
    inputSchema: toolArguments({}),
    annotations: { readOnlyHint: true },
  }, () => {
    const skills = store.list().map((skill) => {
      const status = store.status(skill, options.catalog());
      return {
        name: skill.name,
        signature: skill.signature,
        description: skill.description,
        version: skill.version,
        tools: skill.tools.map((t) => `${t.server}.${t.tool}`),
        stale: status.stale,
        stale_reasons: status.reasons,
      };
    });
    const lines = skills.map((s) =>
      `${s.name}${s.signature} v${s.version}${
        s.stale ? ` STALE (${s.stale_reasons.join("; ")})` : ""
      }: ${s.description}`
    );
    if (store.problems.length > 0) lines.push(...store.problems.map((p) => `skipped: ${p}`));
    return {
      ...text(lines.join("\n") || "No skills saved yet."),
      structuredContent: { skills, problems: store.problems },
    };
  });

  server.registerTool("get_skill", {
    title: "Get a skill",
    description: "A skill's code, description, tools and version.",
    inputSchema: toolArguments(nameInput),
    annotations: { readOnlyHint: true },
  }, (args) => {
    const skill = store.get(args.name);
    if (!skill) return text(`Cannot get skill: no skill named "${args.name}"`, true);
    const status = store.status(skill, options.catalog());
    return {
      ...text(
        `# skill ${skill.name} v${skill.version}${status.stale ? " (stale)" : ""}\n${skill.code}`,
      ),
      structuredContent: { ...skill, stale: status.stale, stale_reasons: status.reasons },
    };
  });
}
