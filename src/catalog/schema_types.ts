/**
 * JSON Schema -> Python types. Objects with named properties become `TypedDict`s (required and
 * `NotRequired` keys, the fields' descriptions as attribute docstrings), enums and consts become
 * `Literal[...]`, `anyOf`/`oneOf` and type lists become unions, `allOf` parts are merged, and
 * `$ref`s are followed inside the schema's own document (`#/$defs/...`, `#/definitions/...`,
 * `#`), so a recursive schema becomes a `TypedDict` that names itself. Pure: one `PythonTypes`
 * collects the definitions of one module; the same definitions serve the module the sandbox runs
 * and the stub an agent reads.
 */
import { isHardKeyword } from "./identifiers.ts";

export type JsonSchema = Record<string, unknown>;

export interface TypedDictField {
  key: string;
  annotation: string;
  required: boolean;
  description: string;
}

export interface TypedDictDef {
  name: string;
  description: string;
  fields: TypedDictField[];
  /** Definitions this one names in its fields. */
  uses: string[];
}

/** Deeper than this, a schema is `Any` (pathological or adversarial nesting). */
const MAX_DEPTH = 8;
/**
 * What one `type()` call may spend, in schemas rendered and keys copied while merging; past it,
 * the rest is `Any`. A type list or an inline `allOf` renders the schema again per entry, and
 * `anyOf` copies the keys beside it into every alternative, so a few KB of schema could
 * otherwise cost minutes of the host's one thread (an attacker's corpus: 2.3 KB took 12 s; 85
 * KB of anyOf beside 3,000 properties, 7 s per catalog rebuild).
 */
const MAX_RENDERED = 20_000;
/** Enums longer than this are shown as their base type. */
const MAX_LITERALS = 30;
/** Unions wider than this are `Any`. */
const MAX_UNION = 6;
/**
 * Annotations longer than this are `Any`. A `$ref`'s annotation is rendered once and then used
 * as it is, so without it a chain of definitions, each a union of wrappers of the one before,
 * grew six-fold a link: an attacker's 5 KB schema made a module of 532 million characters, and
 * one of 5.2 KB ended the host (a string longer than V8 allows).
 */
const MAX_ANNOTATION = 400;
/**
 * Past this many characters of annotations in one module (parameters, results and the fields of
 * their TypedDicts), the rest are `Any`: a `$ref` costs one step however long its annotation, so
 * 10,000 references to one 30-value enum of long strings (339 KB of schema) rendered 600 million
 * characters before any bound on the module was checked.
 */
const MAX_MODULE_ANNOTATIONS = 1024 * 1024;

/** A type expression and the definitions it names. */
export interface PythonType {
  annotation: string;
  uses: string[];
}

export class PythonTypes {
  readonly #defs = new Map<string, TypedDictDef>();
  /** Structural key -> name, so the same shape is defined once. */
  readonly #byShape = new Map<string, string>();
  /**
   * `$ref` target -> its type, set before the target is rendered. By the target itself, not by
   * the pointer's spelling: `#/$defs/X`, `#/%24defs/X` and `#/$defs/%58` are one definition,
   * rendered once (spelt anew in each parameter, one costly definition was rendered each time).
   */
  readonly #byRef = new Map<JsonSchema, PythonType>();
  readonly #taken: Set<string>;
  /** For a root that was taken: the number to try next (see #claim). */
  readonly #nextNumber = new Map<string, number>();
  /** The outermost object of the current `type()` call gets its hint as its own name. */
  #ownName = false;
  /** What the current `type()` call may still spend (see `MAX_RENDERED`). */
  #budget = 0;
  /** Characters of the annotations given so far (see `MAX_MODULE_ANNOTATIONS`). */
  #written = 0;

  /** `reserved`: names the module already uses (functions, imports). */
  constructor(reserved: Iterable<string>) {
    this.#taken = new Set(reserved);
  }

  /**
   * The Python type of `schema`, whose `$ref`s resolve against `document`. `nameHint` names the
   * TypedDicts its objects get: `full` (e.g. the tool's name and the parameter's) made unique in
   * the module, or the shorter `leaf` (the parameter's) where no other shape took it first.
   */
  type(
    schema: unknown,
    document: JsonSchema,
    nameHint: string | { full: string; leaf?: string },
    options: { ownName?: boolean } = {},
  ): PythonType {
    const uses = new Set<string>();
    if (this.#written > MAX_MODULE_ANNOTATIONS) return { annotation: "Any", uses: [] };
    this.#ownName = options.ownName ?? false;
    this.#budget = MAX_RENDERED;
    const named = typeof nameHint === "string" ? { full: nameHint } : nameHint;
    const hint = { leaf: toPascal(named.leaf ?? named.full), full: toPascal(named.full) };
    const annotation = bounded(this.#type(asSchema(schema), document, hint, 0, uses));
    this.#written += annotation.length;
    return { annotation, uses: [...uses] };
  }

  /** Every definition named so far, with the ones each uses, in the order they were made. */
  definitions(): ReadonlyMap<string, TypedDictDef> {
    return this.#defs;
  }

  /** `names` and every definition they use, each before its users where no cycle prevents it. */
  closure(names: Iterable<string>): TypedDictDef[] {
    const out: TypedDictDef[] = [];
    const seen = new Set<string>();
    const visit = (name: string) => {
      const def = this.#defs.get(name);
      if (!def || seen.has(name)) return;
      seen.add(name);
      for (const used of def.uses) visit(used);
      out.push(def);
    };
    for (const name of names) visit(name);
    return out;
  }

  /** Takes `cost` (keys to copy) from the budget of the current `type()` call, if it is there. */
  #afford(cost: number): boolean {
    this.#budget -= cost;
    return this.#budget >= 0;
  }

  #type(
    schema: JsonSchema,
    document: JsonSchema,
    hint: Hint,
    depth: number,
    uses: Set<string>,
  ): string {
    if (depth > MAX_DEPTH || --this.#budget < 0) return "Any";
    if (typeof schema.$ref === "string") return this.#ref(schema.$ref, document, depth, uses);
    const literals = Array.isArray(schema.enum)
      ? schema.enum
      : "const" in schema
      ? [schema.const]
      : null;
    if (literals && literals.length > 0 && literals.length <= MAX_LITERALS) {
      const values = literals.filter(isLiteralValue);
      if (values.length === literals.length) {
        const nulls = values.some((v) => v === null) ? " | None" : "";
        const rest = values.filter((v) => v !== null);
        if (rest.length === 0) return "None";
        return bounded(`Literal[${rest.map(pythonLiteral).join(", ")}]${nulls}`);
      }
    }
    const alternatives = (schema.anyOf ?? schema.oneOf) as unknown;
    if (Array.isArray(alternatives) && alternatives.length > 0) {
      // Keywords beside anyOf (a shared `type`, `properties`) apply to every alternative.
      const { anyOf: _a, oneOf: _o, ...shared } = schema;
      if (!this.#afford(alternatives.length * size(shared))) return "Any";
      return this.#union(
        alternatives.map((alt, i) =>
          this.#type(
            mergeSchemas(shared, asSchema(alt)),
            document,
            numbered(hint, i + 1),
            depth + 1,
            uses,
          )
        ),
      );
    }
    if (Array.isArray(schema.allOf) && schema.allOf.length > 0) {
      const { allOf, ...rest } = schema;
      // Each part is merged into all the parts before it.
      const parts = allOf.map((part) => size(asSchema(part))).reduce((a, b) => a + b, size(rest));
      if (!this.#afford(allOf.length * parts)) return "Any";
      const merged = allOf.reduce<JsonSchema>(
        (acc, part) => mergeSchemas(acc, this.#resolve(asSchema(part), document)),
        rest,
      );
      return this.#type(merged, document, hint, depth + 1, uses);
    }
    const type = schema.type;
    if (Array.isArray(type)) {
      if (!this.#afford(type.length * size(schema))) return "Any";
      return this.#union(
        type.map((t) => this.#type({ ...schema, type: t }, document, hint, depth + 1, uses)),
      );
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
      case "array":
        return this.#array(schema, document, hint, depth, uses);
      case "object":
        return this.#object(schema, document, hint, depth, uses);
      default:
        // No type: a schema with properties is still an object.
        if (asRecord(schema.properties)) return this.#object(schema, document, hint, depth, uses);
        if (schema.items || schema.prefixItems) {
          return this.#array(schema, document, hint, depth, uses);
        }
        return "Any";
    }
  }

  #array(
    schema: JsonSchema,
    document: JsonSchema,
    hint: Hint,
    depth: number,
    uses: Set<string>,
  ): string {
    const tuple = Array.isArray(schema.prefixItems) ? schema.prefixItems : null;
    if (tuple) {
      const types = tuple.map((s, i) =>
        this.#type(asSchema(s), document, numbered(hint, i + 1), depth + 1, uses)
      );
      return bounded(`list[${this.#union(types)}]`);
    }
    const items = asRecord(schema.items);
    if (!items) return "list[Any]";
    return bounded(`list[${this.#type(items, document, itemHint(hint), depth + 1, uses)}]`);
  }

  #object(
    schema: JsonSchema,
    document: JsonSchema,
    hint: Hint,
    depth: number,
    uses: Set<string>,
  ): string {
    const properties = asRecord(schema.properties);
    if (!properties || Object.keys(properties).length === 0) {
      const extra = asRecord(schema.additionalProperties);
      return extra
        ? bounded(
          `dict[str, ${this.#type(extra, document, suffixed(hint, "Value"), depth + 1, uses)}]`,
        )
        : "dict[str, Any]";
    }
    // Rendered under a provisional name; the same shape met again reuses the first name, except
    // for a shape that asked for its own name (a tool's result: `read_file -> ReadFileResult`).
    const own = this.#ownName && depth === 0;
    const draft = this.#typedDict(hint.full, schema, document, depth);
    const shape = JSON.stringify([draft.description, draft.fields]);
    let name = own ? undefined : this.#byShape.get(shape);
    if (name === undefined) {
      name = own ? this.#claim(hint.full) : this.#claimShortest(hint);
      if (!own) this.#byShape.set(shape, name);
      this.#defs.set(name, { ...draft, name });
    }
    uses.add(name);
    return name;
  }

  /** A `$ref` inside `document`: its name is claimed before it is rendered (cycles end there). */
  #ref(ref: string, document: JsonSchema, depth: number, uses: Set<string>): string {
    const target = resolvePointer(document, ref);
    if (target === undefined) return "Any";
    const refs = this.#byRef;
    if (!refs.has(target)) {
      if (asRecord(target.properties) === null) {
        refs.set(target, { annotation: "Any", uses: [] }); // a cycle through a non-object is Any
        const own = new Set<string>();
        const name = toPascal(refHint(ref));
        const annotation = this.#type(target, document, { leaf: name, full: name }, depth + 1, own);
        refs.set(target, { annotation, uses: [...own] });
      } else {
        // The name is claimed first, so a reference to itself inside resolves to it.
        const name = this.#claim(toPascal(refHint(ref)));
        refs.set(target, { annotation: name, uses: [name] });
        this.#defs.set(name, this.#typedDict(name, target, document, depth));
      }
    }
    const { annotation, uses: named } = refs.get(target)!;
    for (const name of named) uses.add(name);
    return annotation;
  }

  #typedDict(name: string, schema: JsonSchema, document: JsonSchema, depth: number): TypedDictDef {
    const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
    const uses = new Set<string>();
    const fields = Object.entries(asRecord(schema.properties) ?? {}).map(([key, value]) => {
      const field = asSchema(value);
      // Each field's annotation counts toward the module's bound too: 19,000 fields, each a
      // `$ref` to one long Literal, made a module of 98 MiB from a tool list of 7.8 MB.
      const annotation = this.#written > MAX_MODULE_ANNOTATIONS
        ? "Any"
        : this.#type(field, document, fieldHint(name, key), depth + 1, uses);
      this.#written += annotation.length;
      return {
        key,
        annotation,
        required: required.has(key),
        description: oneLine(String(field.description ?? field.title ?? "")),
      };
    });
    const description = oneLine(String(schema.description ?? schema.title ?? ""));
    return { name, description, fields, uses: [...uses] };
  }

  #resolve(schema: JsonSchema, document: JsonSchema): JsonSchema {
    return typeof schema.$ref === "string" ? resolvePointer(document, schema.$ref) ?? {} : schema;
  }

  #union(types: string[]): string {
    const parts = [...new Set(types.flatMap((t) => splitUnion(t)))];
    if (parts.includes("Any") || parts.length > MAX_UNION) return "Any";
    // None last reads best: `str | None`.
    const nones = parts.filter((p) => p === "None");
    return bounded([...parts.filter((p) => p !== "None"), ...nones].join(" | "));
  }

  /**
   * A nested object's name: the short one (`Entity` for an item of `entities`) where it is free
   * and not one of `UNAVAILABLE_NAMES`, else the full one (`CreateEntitiesEntity`).
   */
  #claimShortest(hint: Hint): string {
    if (hint.leaf && !this.#taken.has(hint.leaf) && !UNAVAILABLE_NAMES.has(hint.leaf)) {
      return this.#claim(hint.leaf);
    }
    return this.#claim(hint.full);
  }

  #claim(base: string): string {
    // A name a hint left empty or numbered only (a `$defs` key of no ASCII letters: `用户`, `-`,
    // whose union's members were named `1`, `2`) is no Python name.
    const root = /^[A-Za-z_]/.test(base) ? base : `Shape${base}`;
    let name = root;
    // Numbered on from the last number this root took: counted from 2 each time, N names
    // wanting one root (`a_b`, `a__b`, `aB` are all `AB`) cost N² steps (8,000: 8 s).
    let n = this.#nextNumber.get(root) ?? 2;
    while (this.#taken.has(name) || UNAVAILABLE_NAMES.has(name)) name = `${root}${n++}`;
    if (name !== root) this.#nextNumber.set(root, n);
    this.#taken.add(name);
    return name;
  }
}

/** The Python source of TypedDict definitions, in the given order. */
export function renderTypedDicts(defs: readonly TypedDictDef[]): string {
  return defs.map(renderTypedDict).join("\n");
}

function renderTypedDict(def: TypedDictDef): string {
  const classSyntax = def.fields.every((f) => isFieldName(f.key));
  const typed = (f: TypedDictField) => (f.required ? f.annotation : `NotRequired[${f.annotation}]`);
  if (classSyntax) {
    const lines = [`class ${def.name}(TypedDict):`];
    if (def.description) lines.push(`    ${docstring(def.description)}`);
    for (const f of def.fields) {
      lines.push(`    ${f.key}: ${typed(f)}`);
      if (f.description) lines.push(`    ${docstring(f.description)}`);
    }
    return lines.join("\n") + "\n";
  }
  // Keys that are not identifiers (`$schema`, `from`, `a-b`) need the functional form; its
  // annotations are evaluated at once, so they are strings (forward references).
  const comments = [
    def.description,
    ...def.fields.filter((f) => f.description)
      .map((f) => `${JSON.stringify(f.key)}: ${f.description}`),
  ].filter(Boolean).map((l) => `# ${l}`);
  const entries = def.fields.map((f) =>
    `    ${JSON.stringify(f.key)}: ${JSON.stringify(typed(f))},`
  );
  return [
    ...comments,
    `${def.name} = TypedDict(${JSON.stringify(def.name)}, {`,
    ...entries,
    "})",
    "",
  ]
    .join("\n");
}

/**
 * Whether `key` can be written as a field of a class body. Not a name with two leading
 * underscores: Python mangles `__x` to `_Name__x` there, refuses to assign `__debug__`, and
 * gives other dunder names a meaning of their own (an observed result with a `__debug__` key made
 * its server's module a SyntaxError for every script, and `__classdict__` a SystemError).
 */
function isFieldName(key: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) && !key.startsWith("__") && !isHardKeyword(key);
}

function docstring(text: string): string {
  // Backslashes doubled first, so none can escape what follows; then every quote of a run of
  // three or more, and of a run at the end (it would join the closing quotes), is escaped.
  const escaped = text.replace(/\\/g, "\\\\").replace(
    /"{3,}|"+$/g,
    (run) => '\\"'.repeat(run.length),
  );
  return `"""${sourceSafe(escaped)}"""`;
}

/**
 * `text` as a Python source can hold it: Python refuses a source with a NUL character or a lone
 * surrogate (an upstream's description holding either broke its whole module). A NUL is written
 * `\x00` (in a string literal the same character, in a comment shown as that), and a lone
 * surrogate, half of a character cut in two, becomes U+FFFD.
 */
export function sourceSafe(text: string): string {
  return text.replace(/\0/g, "\\x00").toWellFormed();
}

/** `annotation`, or `Any` when it is past `MAX_ANNOTATION`. */
function bounded(annotation: string): string {
  return annotation.length > MAX_ANNOTATION ? "Any" : annotation;
}

/** `annotation | None`, unless it already admits None. */
export function orNone(annotation: string): string {
  const parts = splitUnion(annotation);
  return parts.includes("None") || parts.includes("Any") ? annotation : `${annotation} | None`;
}

/** `A | B | None` -> its parts (top level only: brackets are kept whole). */
function splitUnion(type: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < type.length; i++) {
    const c = type[i];
    if (c === "[") depth++;
    else if (c === "]") depth--;
    else if (c === "|" && depth === 0) {
      parts.push(type.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(type.slice(start).trim());
  return parts;
}

/** What copying a schema costs: its keys and its properties' keys. */
function size(schema: JsonSchema): number {
  const properties = asRecord(schema.properties);
  // A `required` list is copied with the keys (merged into every alternative of an `anyOf`
  // beside it): 100,000 names beside 6,000 alternatives took 54 s of the host's thread.
  const required = Array.isArray(schema.required) ? schema.required.length : 0;
  return Object.keys(schema).length + (properties ? Object.keys(properties).length : 0) + required;
}

/** Merges two object schemas' keywords (allOf): properties and required lists are united. */
function mergeSchemas(a: JsonSchema, b: JsonSchema): JsonSchema {
  const merged: JsonSchema = { ...a, ...b };
  const pa = asRecord(a.properties);
  const pb = asRecord(b.properties);
  if (pa || pb) merged.properties = { ...pa, ...pb };
  const ra = Array.isArray(a.required) ? a.required : [];
  const rb = Array.isArray(b.required) ? b.required : [];
  if (ra.length || rb.length) merged.required = [...new Set([...ra, ...rb])];
  return merged;
}

/** A JSON Pointer (`#/$defs/Node`, `#`) inside `document`; undefined when it names nothing. */
export function resolvePointer(document: JsonSchema, ref: string): JsonSchema | undefined {
  if (!ref.startsWith("#")) return undefined;
  const path = ref.slice(1);
  if (path === "") return document;
  if (!path.startsWith("/")) return undefined;
  let node: unknown = document;
  for (const raw of path.slice(1).split("/")) {
    const key = decodedSegment(raw)?.replace(/~1/g, "/").replace(/~0/g, "~");
    if (key === undefined) return undefined;
    const record = asRecord(node) ??
      (Array.isArray(node) ? node as unknown as Record<string, unknown> : null);
    if (record === null || !Object.hasOwn(record, key)) return undefined;
    node = record[key];
  }
  return asRecord(node) ?? undefined;
}

function refHint(ref: string): string {
  const last = ref.split("/").pop() ?? "";
  return last === "" || last === "#" ? "Root" : decodedSegment(last) ?? last;
}

/** A pointer segment's percent-escapes decoded; undefined when they are malformed (`%`, `%zz`). */
function decodedSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined; // an upstream's `$ref: "#/%"` threw out of the catalog and ended the host
  }
}

/** `edit_file`, `old-text`, `oldText` -> `EditFile`, `OldText`, `OldText`. */
export function toPascal(name: string): string {
  const words = name.replace(/([a-z0-9])([A-Z])/g, "$1 $2").split(/[^A-Za-z0-9]+/).filter(Boolean);
  const pascal = words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join("");
  return /^[0-9]/.test(pascal) ? `T${pascal}` : pascal;
}

/** `Edits` -> `Edit`, `Entries` -> `Entry`, for the name of an item's type. */
function singular(name: string): string {
  if (/ies$/.test(name)) return name.slice(0, -3) + "y";
  if (/[^s]s$/.test(name)) return name.slice(0, -1);
  return name;
}

/** The name of an item's type: the singular of its list's (`Edits` -> `Edit`), else `…Item`. */
function itemName(name: string): string {
  const one = singular(name);
  return one !== name ? one : `${name}Item`;
}

/**
 * The names a nested type may take: `full` says where it is (the tool, the parameter, the keys
 * down to it) and is made unique; `leaf` only its own key, used where no other shape has it.
 */
interface Hint {
  leaf: string;
  full: string;
}

function fieldHint(parent: string, key: string): Hint {
  const leaf = toPascal(key);
  return { leaf, full: parent + leaf };
}

function itemHint(hint: Hint): Hint {
  return { leaf: hint.leaf && itemName(hint.leaf), full: itemName(hint.full) };
}

function numbered(hint: Hint, n: number): Hint {
  return { leaf: hint.leaf && `${hint.leaf}${n}`, full: `${hint.full}${n}` };
}

function suffixed(hint: Hint, suffix: string): Hint {
  return { leaf: hint.leaf && hint.leaf + suffix, full: hint.full + suffix };
}

/**
 * Names no type takes: Python's builtin classes and constants (`None`, `KeyError`,
 * `StopIteration`), which a script that star-imports the module would lose, and `None`, `True`
 * and `False` are keywords besides; the names `mcp_tools` exports (`Image`, `Resource`, its error
 * classes). A nested type does not take `Result` either, the end of every tool's result type.
 */
const UNAVAILABLE_NAMES = new Set((
  "ArithmeticError AssertionError AttributeError BaseException BaseExceptionGroup " +
  "BlockingIOError BrokenPipeError BufferError BytesWarning ChildProcessError " +
  "ConnectionAbortedError ConnectionError ConnectionRefusedError ConnectionResetError " +
  "DeprecationWarning EOFError Ellipsis EncodingWarning EnvironmentError Exception " +
  "ExceptionGroup False FileExistsError FileNotFoundError FloatingPointError FutureWarning " +
  "GeneratorExit IOError ImportError ImportWarning IndentationError IndexError InterruptedError " +
  "IsADirectoryError KeyError KeyboardInterrupt LookupError MemoryError ModuleNotFoundError " +
  "NameError None NotADirectoryError NotImplemented NotImplementedError OSError OverflowError " +
  "PendingDeprecationWarning PermissionError ProcessLookupError RecursionError ReferenceError " +
  "ResourceWarning RuntimeError RuntimeWarning StopAsyncIteration StopIteration SyntaxError " +
  "SyntaxWarning SystemError SystemExit TabError TimeoutError True TypeError UnboundLocalError " +
  "UnicodeDecodeError UnicodeEncodeError UnicodeError UnicodeTranslateError UnicodeWarning " +
  "UserWarning ValueError Warning ZeroDivisionError Image Resource Result ToolDenied ToolError " +
  "ToolTimeout UpstreamUnavailable ScriptError"
).split(" "));

function isLiteralValue(value: unknown): boolean {
  return value === null || typeof value === "string" || typeof value === "boolean" ||
    (typeof value === "number" && Number.isInteger(value));
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

function oneLine(text: string): string {
  return sourceSafe(text.replace(/\s+/g, " ").trim());
}

function asSchema(value: unknown): JsonSchema {
  return asRecord(value) ?? (value === true ? {} : {});
}

function asRecord(value: unknown): Record<string, unknown> | null {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Record<string, unknown>
    : null;
}
