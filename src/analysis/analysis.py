"""Static analysis of a Python script with Python's own `ast`, run inside a sandbox.

The host appends `analyse(<source as a string literal>)`; the value of that last expression is
the result: the `mcp_tools` calls the script makes, whether it prints or returns something, and
its top-level functions (see `Analysis` in src/analysis/python_analysis.ts).

Embedded into TypeScript as src/analysis/analysis_py.ts by `deno task generate`.
"""
import ast

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
    defined = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defined[node.name] = {
                "signature": "(" + ast.unparse(node.args) + ")",
                "doc": ast.get_docstring(node),
                "is_async": isinstance(node, ast.AsyncFunctionDef),
            }
    return {"calls": calls, "outputs": prints or returns, "functions": defined}
