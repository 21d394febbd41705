/**
 * JSON Schema -> Python. For each upstream tool one `FunctionSpec` is derived, and from that one
 * spec both the stub an agent reads and the module code the sandbox runs are rendered, so what
 * the agent reads is exactly what it can call.
 */
import { assignIdentifiers } from "./identifiers.ts";

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
  doc: string;
}

const MODULE_RESERVED = ["_cm", "Any", "Literal"];

/** The function specs of one server's tools, with collision-free names. */
export function functionSpecs(tools: readonly ToolInfo[]): FunctionSpec[] {
  const names = assignIdentifiers(tools.map((t) => t.name), {
    reserved: MODULE_RESERVED,
    withAsync: true,
  });
  return [...tools]
    .sort((a, b) => names.get(a.name)!.localeCompare(names.get(b.name)!))
    .map((tool) => functionSpec(tool, names.get(tool.name)!));
}

function functionSpec(tool: ToolInfo, pyName: string): FunctionSpec {
  const properties = asRecord(tool.inputSchema.properties) ?? {};
  const required = new Set(
    Array.isArray(tool.inputSchema.required) ? tool.inputSchema.required.map(String) : [],
  );
  const jsonNames = Object.keys(properties);
  const ids = assignIdentifiers(jsonNames, { reserved: ["arguments", ...MODULE_RESERVED] });
  const params: ParamSpec[] = jsonNames.map((jsonName) => {
    const schema = asRecord(properties[jsonName]) ?? {};
    return {
      jsonName,
      pyName: ids.get(jsonName)!,
      annotation: pythonType(schema),
      required: required.has(jsonName),
      defaultLiteral: "default" in schema ? pythonLiteral(schema.default) : null,
      description: oneLine(String(schema.description ?? "")),
    };
  });
  params.sort((a, b) => Number(b.required) - Number(a.required));
  return {
    server: tool.server,
    tool: tool.name,
    pyName,
    params,
    freeForm: !("properties" in tool.inputSchema) &&
      tool.inputSchema.additionalProperties !== false,
    description: tool.description ?? "",
    schemaHash: fingerprint(JSON.stringify(tool.inputSchema)),
    doc: docstring(tool, params),
  };
}

/** `def name(...) -> Any:` for the blocking (or async) form. */
function signature(spec: FunctionSpec, isAsync: boolean): string {
  const parts: string[] = [];
  const required = spec.params.filter((p) => p.required);
  const optional = spec.params.filter((p) => !p.required);
  for (const p of required) parts.push(`${p.pyName}: ${p.annotation}`);
  if (optional.length > 0) {
    parts.push("*");
    for (const p of optional) parts.push(`${p.pyName}: ${p.annotation} | None = None`);
  }
  if (spec.freeForm) parts.push("**arguments: Any");
  const name = isAsync ? `${spec.pyName}_async` : spec.pyName;
  return `${isAsync ? "async def" : "def"} ${name}(${parts.join(", ")}) -> Any:`;
}

function docstring(tool: ToolInfo, params: ParamSpec[]): string {
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
  lines.push(
    "",
    `Returns: ${tool.outputSchema ? describeShape(tool.outputSchema) : "the tool's result"}.`,
  );
  lines.push("Raises mcp_tools.ToolError when the tool fails.");
  return lines.join("\n");
}

function indent(text: string, by: string): string {
  return text.split("\n").map((l) => (l ? by + l : l)).join("\n");
}

function pyDocstring(text: string): string {
  const escaped = text.replace(/\\/g, "\\\\").replace(/"""/g, '\\"\\"\\"');
  return `"""${escaped}\n"""`;
}

/** The stub of one function as an agent reads it (signature, docstring, `...`). */
export function renderStub(spec: FunctionSpec): string {
  return `${signature(spec, false)}\n${indent(pyDocstring(spec.doc), "    ")}\n    ...\n`;
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

const MODULE_HEADER = "from typing import Any, Literal\nimport _codemode as _cm\n";

/** The module `mcp_tools.<server>` as the sandbox runs it. */
export function renderModule(serverDescription: string, specs: readonly FunctionSpec[]): string {
  const doc = pyDocstring(serverDescription || "MCP tools");
  return [doc, MODULE_HEADER, ...specs.map(renderFunction)].join("\n");
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
    "from typing import Any, Literal",
    "",
  ].filter((l) => l !== "").join("\n");
  return [header, ...specs.map(renderStub)].join("\n\n");
}

/** An output schema as a short dict shape: `dict {"content": str, "count": int}`. */
function describeShape(schema: Record<string, unknown>): string {
  const properties = asRecord(schema.properties);
  if (!properties) return `structured content (${pythonType(schema)})`;
  const fields = Object.entries(properties).slice(0, 12)
    .map(([k, v]) => `${JSON.stringify(k)}: ${pythonType(asRecord(v) ?? {})}`);
  return `dict {${fields.join(", ")}}`;
}

/** A Python type annotation for a JSON Schema. */
export function pythonType(schema: Record<string, unknown>, depth = 0): string {
  if (depth > 4) return "Any";
  if (Array.isArray(schema.enum) && schema.enum.length > 0 && schema.enum.length <= 20) {
    return `Literal[${schema.enum.map(pythonLiteral).join(", ")}]`;
  }
  if ("const" in schema) return `Literal[${pythonLiteral(schema.const)}]`;
  const union = (schema.anyOf ?? schema.oneOf) as unknown;
  if (Array.isArray(union)) {
    const types = [...new Set(union.map((s) => pythonType(asRecord(s) ?? {}, depth + 1)))];
    return types.includes("Any") ? "Any" : types.join(" | ");
  }
  const type = schema.type;
  if (Array.isArray(type)) {
    return [...new Set(type.map((t) => pythonType({ ...schema, type: t }, depth + 1)))].join(" | ");
  }
  switch (type) {
    case "string":
      return "str";
    case "integer":
      return "int";
    case "number":
      return "float";
    case "boolean":
      return "bool";
    case "null":
      return "None";
    case "array": {
      const items = asRecord(schema.items);
      return items ? `list[${pythonType(items, depth + 1)}]` : "list";
    }
    case "object":
      return "dict";
    default:
      return "Any";
  }
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

/** A JSON value as a Python literal. */
export function pythonLiteral(value: unknown): string {
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : "None";
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(pythonLiteral).join(", ")}]`;
  if (typeof value === "object") {
    const entries = Object.entries(value).map(([k, v]) =>
      `${JSON.stringify(k)}: ${pythonLiteral(v)}`
    );
    return `{${entries.join(", ")}}`;
  }
  return "None";
}

/** The first sentence (or line) of a description, at most `max` characters. */
export function firstSentence(text: string | undefined, max = 80): string {
  const line = oneLine((text ?? "").trim().split(/\n\s*\n|\n(?=\s*[A-Z][a-z]+:)/)[0] ?? "");
  const end = line.search(/[.!?](\s|$)/);
  const sentence = end === -1 ? line : line.slice(0, end + 1);
  return sentence.length > max ? sentence.slice(0, max - 1).trimEnd() + "…" : sentence;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

function asRecord(value: unknown): Record<string, unknown> | null {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Record<string, unknown>
    : null;
}
