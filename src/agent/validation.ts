/**
 * Checks generated code before it runs: it must parse (Python's own `ast`, run inside a
 * sandbox), call only `mcp_tools` functions that exist with parameters they take, and print or
 * return something. `analysisScript` (src/analysis/python_analysis.ts) is the Python side;
 * `checkAnalysis` the pure host side.
 */
import type { Catalog } from "../catalog/catalog.ts";
import type { Analysis } from "../analysis/python_analysis.ts";

export { type Analysis, analysisScript } from "../analysis/python_analysis.ts";

/** Problems found in the analysis, as messages for the model; empty when the code may run. */
export function checkAnalysis(analysis: Analysis, catalog: Catalog): string[] {
  if ("syntax_error" in analysis) return [analysis.syntax_error];
  const problems: string[] = [];
  for (const call of analysis.calls) {
    const where = `line ${call.line}: ${call.module}.${call.function}`;
    const entry = catalog.server(call.module);
    if (!entry || entry.moduleName !== call.module) {
      const known = catalog.servers.map((s) => s.moduleName).join(", ") || "none";
      problems.push(`${where}: there is no module mcp_tools.${call.module} (modules: ${known})`);
      continue;
    }
    const name = call.function.endsWith("_async") ? call.function.slice(0, -6) : call.function;
    const spec = entry.specs.find((s) => s.pyName === name);
    if (!spec) {
      const known = entry.specs.map((s) => s.pyName).join(", ");
      problems.push(`${where}: no such function (${call.module} has: ${known})`);
      continue;
    }
    if (call.star) continue;
    const names = new Set(spec.params.map((p) => p.pyName));
    const unknown = call.keywords.filter((k) => !names.has(k));
    if (unknown.length > 0 && !spec.freeForm) {
      const accepted = spec.params.map((p) => p.pyName).join(", ") || "none";
      problems.push(`${where}: unknown argument(s) ${unknown.join(", ")} (accepted: ${accepted})`);
    }
    const required = spec.params.filter((p) => p.required);
    if (call.positional > required.length) {
      problems.push(
        `${where}: ${call.positional} positional arguments, but only ${required.length} allowed; pass optional ones by name`,
      );
    }
    const missing = required.slice(call.positional).filter((p) =>
      !call.keywords.includes(p.pyName)
    );
    if (missing.length > 0) {
      problems.push(
        `${where}: missing required argument(s) ${missing.map((p) => p.pyName).join(", ")}`,
      );
    }
  }
  if (!analysis.outputs) {
    problems.push("the script neither prints anything nor ends with an expression to return");
  }
  return problems;
}
