/**
 * Checks generated code before it runs: it must parse (Python's own `ast`, run inside a
 * sandbox), call only `mcp_tools` functions that exist with parameters they take, and print or
 * return something. `analysisScript` is the Python side; `checkAnalysis` the pure host side.
 */
import type { Catalog } from "../catalog/catalog.ts";

export interface CallSite {
  module: string;
  function: string;
  positional: number;
  keywords: string[];
  /** *args or **kwargs used: argument names cannot be checked. */
  star: boolean;
  line: number;
}

export type Analysis =
  | { syntax_error: string }
  | { calls: CallSite[]; outputs: boolean };

/** A script that analyses `code` with `ast` and evaluates to an `Analysis`. */
export function analysisScript(code: string): string {
  return `import ast
SOURCE = ${JSON.stringify(code)}

def analyse(source):
    try:
        tree = ast.parse(source, filename="<script>")
    except SyntaxError as e:
        return {"syntax_error": f"SyntaxError at line {e.lineno}: {e.msg}"}
    modules, packages, functions = {}, set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "mcp_tools":
            for a in node.names:
                modules[a.asname or a.name] = a.name
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mcp_tools."):
            for a in node.names:
                functions[a.asname or a.name] = (node.module.split(".", 1)[1], a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "mcp_tools":
                    packages.add(a.asname or a.name)
                elif a.name.startswith("mcp_tools.") and a.asname:
                    modules[a.asname] = a.name.split(".", 1)[1]
                elif a.name.startswith("mcp_tools."):
                    packages.add("mcp_tools")
    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f, target = node.func, None
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in modules:
            target = (modules[f.value.id], f.attr)
        elif (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute)
              and isinstance(f.value.value, ast.Name) and f.value.value.id in packages):
            target = (f.value.attr, f.attr)
        elif isinstance(f, ast.Name) and f.id in functions:
            target = functions[f.id]
        if target:
            calls.append({
                "module": target[0], "function": target[1], "positional": len(node.args),
                "keywords": [k.arg for k in node.keywords if k.arg],
                "star": any(k.arg is None for k in node.keywords)
                        or any(isinstance(a, ast.Starred) for a in node.args),
                "line": node.lineno,
            })
    prints = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"
                 for n in ast.walk(tree))
    returns = bool(tree.body) and isinstance(tree.body[-1], ast.Expr)
    return {"calls": calls, "outputs": prints or returns}

analyse(SOURCE)
`;
}

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
