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
    def tool_target(node):
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in modules:
            return (modules[f.value.id], f.attr)
        if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute)
                and isinstance(f.value.value, ast.Name) and f.value.value.id in packages):
            return (f.value.attr, f.attr)
        if isinstance(f, ast.Name) and f.id in functions:
            return functions[f.id]
        return None

    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        target = tool_target(node)
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
                "params": _params(node.args),
                "returns": ast.unparse(node.returns) if node.returns else None,
                "passes": _passes(node, tool_target),
                "results": _results(node, tool_target),
            }
    return {"calls": calls, "outputs": prints or returns, "functions": defined}


_LITERAL_TYPES = {str: "str", int: "int", float: "float", bool: "bool", bytes: "bytes"}


def _value_type(node):
    """The type of an expression whose type shows in its form, else None."""
    if isinstance(node, ast.Constant):
        return "None" if node.value is None else _LITERAL_TYPES.get(type(node.value))
    if isinstance(node, ast.JoinedStr):
        return "str"
    if isinstance(node, (ast.List, ast.ListComp)):
        return "list"
    if isinstance(node, (ast.Dict, ast.DictComp)):
        return "dict"
    if isinstance(node, (ast.Compare, ast.BoolOp)) or (
            isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
        return "bool"
    return None


def _params(args):
    """Each parameter: name, kind, its annotation and default as written, its default's type."""
    out = []
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for i, (a, d) in enumerate(zip(positional, defaults)):
        kind = "posonly" if i < len(args.posonlyargs) else "positional"
        out.append(_param(a, d, kind))
    if args.vararg:
        out.append(_param(args.vararg, None, "vararg"))
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        out.append(_param(a, d, "kwonly"))
    if args.kwarg:
        out.append(_param(args.kwarg, None, "kwarg"))
    return out


def _param(arg, default, kind):
    return {
        "name": arg.arg,
        "kind": kind,
        "annotation": ast.unparse(arg.annotation) if arg.annotation else None,
        "default": ast.unparse(default) if default is not None else None,
        "default_type": _value_type(default) if default is not None else None,
    }


def _passes(fn, tool_target):
    """Where a parameter is passed as-is to a tool: [parameter, module, function, keyword]."""
    names = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    out = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            target = tool_target(node)
            for k in node.keywords if target else []:
                if k.arg and isinstance(k.value, ast.Name) and k.value.id in names:
                    out.append([k.value.id, target[0], target[1], k.arg])
    return out


def _results(fn, tool_target):
    """What each `return` gives: a tool's result ["tool", module, function], a type, or None."""
    out = []
    for node in ast.walk(fn):
        if not isinstance(node, ast.Return):
            continue
        value = node.value
        if isinstance(value, ast.Await):
            value = value.value
        if value is None:
            out.append(["type", "None"])
        elif isinstance(value, ast.Call) and tool_target(value):
            out.append(["tool", *tool_target(value)])
        else:
            out.append(["type", _value_type(value)] if _value_type(value) else None)
    return out
