/**
 * Upstream tools -> Python functions. For each tool one `FunctionSpec` is derived (its parameters
 * and result typed by `schema_types.ts`), and from that one spec both the stub an agent reads and
 * the module code the sandbox runs are rendered, so what the agent reads is exactly what it can
 * call.
 */
import { assignIdentifiers } from "./identifiers.ts";
import {
  type JsonSchema,
  orNone,
  pythonLiteral,
  PythonTypes,
  renderTypedDicts,
  sourceSafe,
  toPascal,
  type TypedDictDef,
} from "./schema_types.ts";
import { counted } from "../_util/counted.ts";

export { pythonLiteral };

export interface ToolInfo {
  server: string;
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
}

export interface ParamSpec {
  /** The property name in the tool's JSON Schema. */
  jsonName: string;
  /** The Python parameter name. */
  pyName: string;
  annotation: string;
  required: boolean;
  /** Python literal of the schema default, shown in the docs (omitted values are not sent). */
  defaultLiteral: string | null;
  description: string;
}

export interface FunctionSpec {
  server: string;
  tool: string;
  pyName: string;
  params: ParamSpec[];
  /** True when the schema lists no properties: the function takes **arguments. */
  freeForm: boolean;
  /** The tool's own description. */
  description: string;
  /** A fingerprint of the tool's input schema (skills use it to notice schema changes). */
  schemaHash: string;
  /** What the function returns, and where that type comes from. */
  returns: ReturnSpec;
  /** The TypedDicts its signature names, each after those it uses. */
  types: TypedDictDef[];
  doc: string;
}

export interface ReturnSpec {
  annotation: string;
  /** `declared`: the tool's outputSchema; `observed`: the shape of its real results so far. */
  source: "declared" | "observed" | "unknown";
  /** How many results the observed type is based on. */
  observedCalls?: number;
}

/** The observed result shape of a tool without an outputSchema (see observed_results.ts). */
export interface ObservedShape {
  schema: JsonSchema;
  calls: number;
}

/** Names every module binds besides its functions and types. */
const MODULE_RESERVED = ["_cm", "Any", "Literal", "NotRequired", "TypedDict"];

/** The function specs of one server's tools, with collision-free names. */
export function functionSpecs(
  tools: readonly ToolInfo[],
  observed: (tool: string) => ObservedShape | undefined = () => undefined,
): FunctionSpec[] {
  const names = assignIdentifiers(tools.map((t) => t.name), {
    reserved: MODULE_RESERVED,
    withAsync: true,
  });
  const functionNames = [...names.values()].flatMap((n) => [n, `${n}_async`]);
  const types = new PythonTypes([...MODULE_RESERVED, ...functionNames]);
  return [...tools]
    .sort((a, b) => names.get(a.name)!.localeCompare(names.get(b.name)!))
    .map((tool) => functionSpec(tool, names.get(tool.name)!, types, observed(tool.name)));
}

function functionSpec(
  tool: ToolInfo,
  pyName: string,
  types: PythonTypes,
  observed: ObservedShape | undefined,
): FunctionSpec {
  const input = tool.inputSchema;
  const properties = asRecord(input.properties) ?? {};
  const required = new Set(Array.isArray(input.required) ? input.required.map(String) : []);
  const jsonNames = Object.keys(properties);
  const ids = assignIdentifiers(jsonNames, { reserved: ["arguments", ...MODULE_RESERVED] });
  const used = new Set<string>();
  const typeOf = (
    schema: unknown,
    document: JsonSchema,
    hint: { full: string; leaf?: string },
    ownName = false,
  ) => {
    const type = types.type(schema, document, hint, { ownName });
    for (const name of type.uses) used.add(name);
    return type.annotation;
  };
  const toolName = toPascal(pyName);
  const params: ParamSpec[] = jsonNames.map((jsonName) => {
    const schema = asRecord(properties[jsonName]) ?? {};
    return {
      jsonName,
      pyName: ids.get(jsonName)!,
      annotation: typeOf(schema, input, {
        full: toolName + toPascal(jsonName),
        leaf: toPascal(jsonName),
      }),
      required: required.has(jsonName),
      defaultLiteral: "default" in schema ? pythonLiteral(schema.default) : null,
      description: oneLine(String(schema.description ?? "")),
    };
  });
  params.sort((a, b) => Number(b.required) - Number(a.required));
  const returns: ReturnSpec = tool.outputSchema
    ? {
      annotation: typeOf(tool.outputSchema, tool.outputSchema, { full: `${toolName}Result` }, true),
      source: "declared",
    }
    : observed
    ? {
      annotation: typeOf(observed.schema, observed.schema, { full: `${toolName}Result` }, true),
      source: "observed",
      observedCalls: observed.calls,
    }
    : { annotation: "Any", source: "unknown" };
  return {
    server: tool.server,
    tool: tool.name,
    pyName,
    params,
    freeForm: !("properties" in input) && input.additionalProperties !== false,
    description: tool.description ?? "",
    schemaHash: fingerprint(JSON.stringify(input)),
    returns,
    types: types.closure(used),
    doc: docstring(tool, params, returns),
  };
}

/** `def name(...) -> Result:` for the blocking (or async) form. */
function signature(spec: FunctionSpec, isAsync: boolean): string {
  const parts: string[] = [];
  const required = spec.params.filter((p) => p.required);
  const optional = spec.params.filter((p) => !p.required);
  for (const p of required) parts.push(`${p.pyName}: ${p.annotation}`);
  if (optional.length > 0) {
    parts.push("*");
    for (const p of optional) parts.push(`${p.pyName}: ${orNone(p.annotation)} = None`);
  }
  if (spec.freeForm) parts.push("**arguments: Any");
  const name = isAsync ? `${spec.pyName}_async` : spec.pyName;
  return `${isAsync ? "async def" : "def"} ${name}(${
    parts.join(", ")
  }) -> ${spec.returns.annotation}:`;
}

function docstring(tool: ToolInfo, params: ParamSpec[], returns: ReturnSpec): string {
  const lines = [`${tool.server}.${tool.name}: ${tool.description?.trim() || "(no description)"}`];
  if (params.length > 0) {
    lines.push("", "Args:");
    for (const p of params) {
      const flags = [p.required ? "required" : "optional"];
      if (p.defaultLiteral !== null) flags.push(`default ${p.defaultLiteral}`);
      if (p.pyName !== p.jsonName) flags.push(`sent as "${p.jsonName}"`);
      lines.push(`    ${p.pyName} (${flags.join(", ")}): ${p.description}`.trimEnd());
    }
  }
  lines.push("", `Returns: ${returnsLine(returns)}`);
  lines.push("Raises mcp_tools.ToolError when the tool fails.");
  return lines.join("\n");
}

function indent(text: string, by: string): string {
  return text.split("\n").map((l) => (l ? by + l : l)).join("\n");
}

function pyDocstring(text: string): string {
  const escaped = sourceSafe(text.replace(/\\/g, "\\\\").replace(/"""/g, '\\"\\"\\"'));
  return `"""${escaped}\n"""`;
}

function returnsLine(returns: ReturnSpec): string {
  switch (returns.source) {
    case "declared":
      return `${returns.annotation} (the tool's declared outputSchema).`;
    case "observed": {
      const calls = counted(returns.observedCalls ?? 0, "call");
      return `${returns.annotation} (observed in ${calls}; the tool declares no outputSchema, ` +
        "so other results may differ).";
    }
    case "unknown":
      return "the tool's result (no outputSchema, and no result observed yet that has a type: " +
        "one of images or of several items is not recorded).";
  }
}

/** The stub of one function as an agent reads it: the types it names, signature, docstring. */
export function renderStub(spec: FunctionSpec): string {
  const types = spec.types.length ? renderTypedDicts(spec.types) + "\n" : "";
  return `${types}${signature(spec, false)}\n${indent(pyDocstring(spec.doc), "    ")}\n    ...\n`;
}

/** The TypedDicts of several functions, each once, each after those it uses. */
function moduleTypes(specs: readonly FunctionSpec[]): string {
  const seen = new Set<string>();
  const defs = specs.flatMap((s) => s.types).filter((d) => !seen.has(d.name) && seen.add(d.name));
  return defs.length ? renderTypedDicts(defs) : "";
}

function argumentsExpression(spec: FunctionSpec): string {
  const entries = spec.params.map((p) => `${JSON.stringify(p.jsonName)}: ${p.pyName}`);
  const dict = `{${entries.join(", ")}}`;
  const filtered = `{k: v for k, v in ${dict}.items() if v is not None}`;
  return spec.freeForm
    ? (entries.length ? `{**${filtered}, **arguments}` : "dict(arguments)")
    : filtered;
}

/** The runnable code of one function, both forms. */
function renderFunction(spec: FunctionSpec): string {
  const server = JSON.stringify(spec.server);
  const tool = JSON.stringify(spec.tool);
  const args = argumentsExpression(spec);
  const doc = indent(pyDocstring(spec.doc), "    ");
  return [
    signature(spec, false),
    doc,
    `    return _cm.call_tool(${server}, ${tool}, ${args})`,
    "",
    signature(spec, true),
    indent(
      pyDocstring(`Awaitable form of ${spec.pyName}; combine calls with asyncio.gather.`),
      "    ",
    ),
    `    return await _cm.call_tool_async(${server}, ${tool}, ${args})`,
    "",
  ].join("\n");
}

const TYPING_IMPORT = "from typing import Any, Literal, NotRequired, TypedDict";
const MODULE_HEADER = `${TYPING_IMPORT}\nimport _codemode as _cm\n`;

/**
 * The module `mcp_tools.<server>` as the sandbox runs it. A name it does not define gets a
 * "did you mean" error, or, when the server has no tools (it is not connected: `unavailable`
 * says why), a function whose call raises the reason.
 */
export function renderModule(
  server: string,
  serverDescription: string,
  specs: readonly FunctionSpec[],
  unavailable?: string,
): string {
  const doc = pyDocstring(serverDescription || "MCP tools");
  const names = specs.flatMap((s) => [s.pyName, `${s.pyName}_async`]);
  const missing = "def __getattr__(name):\n" +
    `    return _cm.missing_function(__name__, ${JSON.stringify(server)}, ${
      JSON.stringify(names)
    }, name, ${JSON.stringify(unavailable ?? "")})\n`;
  // What `from mcp_tools.<server> import *` takes: every function and type, except those named
  // like a Python builtin (an upstream's tools `print` and `len` replaced the script's own, and
  // were sent what it printed). They stay reachable as `module.print`.
  const types = [...new Set(specs.flatMap((s) => s.types.map((t) => t.name)))];
  // Through _cm: an upstream may name a tool `hasattr` (and so replace it in this module).
  const starred = `__all__ = _cm.star_names(${JSON.stringify([...names, ...types])})\n`;
  return [doc, MODULE_HEADER, moduleTypes(specs), ...specs.map(renderFunction), missing, starred]
    .join("\n");
}

/** The module as an agent reads it (the `.pyi`-style stub file of one server). */
export function renderModuleStub(
  moduleName: string,
  serverDescription: string,
  specs: readonly FunctionSpec[],
): string {
  const header = [
    `# from mcp_tools import ${moduleName}`,
    `# Every function also has an awaitable form named <function>_async.`,
    serverDescription ? `# ${oneLine(serverDescription)}` : "",
    TYPING_IMPORT,
    "",
  ].filter((l) => l !== "").join("\n");
  const functions = specs.map((spec) =>
    `${signature(spec, false)}\n${indent(pyDocstring(spec.doc), "    ")}\n    ...\n`
  );
  return [header, moduleTypes(specs), ...functions].filter(Boolean).join("\n\n");
}

/** A short, stable fingerprint of a string (FNV-1a, 32 bits, hex). */
export function fingerprint(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}

/** The first sentence (or line) of a description, at most `max` characters. */
export function firstSentence(text: string | undefined, max = 80): string {
  const line = oneLine((text ?? "").trim().split(/\n\s*\n|\n(?=\s*[A-Z][a-z]+:)/)[0] ?? "");
  const end = line.search(/[.!?](\s|$)/);
  const sentence = end === -1 ? line : line.slice(0, end + 1);
  return sentence.length > max ? sentence.slice(0, max - 1).trimEnd() + "…" : sentence;
}

function oneLine(text: string): string {
  return sourceSafe(text.replace(/\s+/g, " ").trim());
}

function asRecord(value: unknown): Record<string, unknown> | null {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Record<string, unknown>
    : null;
}
