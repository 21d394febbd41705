/**
 * The typed signature of a skill, inferred from its code and the tools it calls (pure): a
 * parameter without an annotation takes the type of the tool parameter it is passed to as it is,
 * or of its default; the return type is the union of what its `return`s give, a tool's result
 * taking that tool's return type (declared or observed). Anything not shown by the code stays
 * unannotated, or `Any` for the result.
 */
import type { FunctionInfo, ParamInfo } from "../analysis/python_analysis.ts";
import type { Catalog } from "../catalog/catalog.ts";
import { orNone } from "../catalog/schema_types.ts";

export function typedSignature(fn: FunctionInfo, catalog: Catalog): string {
  const params = fn.params.map((p) => render(p, p.annotation ?? inferParam(p, fn, catalog)));
  const parts: string[] = [];
  const kinds = fn.params.map((p) => p.kind);
  fn.params.forEach((p, i) => {
    if (p.kind === "kwonly" && !kinds.includes("vararg") && kinds.indexOf("kwonly") === i) {
      parts.push("*");
    }
    parts.push(params[i]!);
    if (p.kind === "posonly" && kinds[i + 1] !== "posonly") parts.push("/");
  });
  return `(${parts.join(", ")}) -> ${fn.returns ?? inferReturn(fn, catalog)}`;
}

function render(p: ParamInfo, annotation: string | null): string {
  const prefix = p.kind === "vararg" ? "*" : p.kind === "kwarg" ? "**" : "";
  const typed = annotation ? `${prefix}${p.name}: ${annotation}` : `${prefix}${p.name}`;
  if (p.default === null) return typed;
  return annotation ? `${typed} = ${p.default}` : `${typed}=${p.default}`;
}

function inferParam(p: ParamInfo, fn: FunctionInfo, catalog: Catalog): string | null {
  if (p.kind === "vararg" || p.kind === "kwarg") return null;
  const fromTools = new Set<string>();
  for (const [param, module, fnName, keyword] of fn.passes) {
    if (param !== p.name) continue;
    const found = toolSpec(catalog, module, fnName);
    const target = found?.spec.params.find((q) => q.pyName === keyword || q.jsonName === keyword);
    if (found && target) fromTools.add(qualify(target.annotation, found));
  }
  const known = fromTools.size === 1
    ? [...fromTools][0]!
    : fromTools.size === 0 && p.default_type && p.default_type !== "None"
    ? p.default_type
    : null;
  if (known === null) return null;
  return p.default_type === "None" ? orNone(known) : known;
}

function inferReturn(fn: FunctionInfo, catalog: Catalog): string {
  if (fn.results.length === 0) return "None";
  const types = new Set<string>();
  for (const result of fn.results) {
    if (result === null) return "Any";
    if (result[0] === "type") {
      types.add(result[1]);
      continue;
    }
    const found = toolSpec(catalog, result[1], result[2]);
    if (!found) return "Any";
    types.add(qualify(found.spec.returns.annotation, found));
  }
  return types.has("Any") ? "Any" : [...types].join(" | ");
}

type Found = { module: string; spec: Catalog["servers"][number]["specs"][number] };

function toolSpec(catalog: Catalog, module: string, fnName: string): Found | undefined {
  const entry = catalog.server(module);
  const name = fnName.endsWith("_async") ? fnName.slice(0, -6) : fnName;
  const spec = entry?.specs.find((s) => s.pyName === name);
  return entry && spec ? { module: entry.moduleName, spec } : undefined;
}

/** A tool module's own type names, as the skill's reader must write them: `filesystem.Name`. */
function qualify(annotation: string, found: Found): string {
  const own = new Set(found.spec.types.map((t) => t.name));
  return annotation.replace(
    /\b[A-Z][A-Za-z0-9_]*\b/g,
    (name) => own.has(name) ? `mcp_tools.${found.module}.${name}` : name,
  );
}
