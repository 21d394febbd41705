/**
 * The shape of a tool's results, as a JSON Schema inferred from what the script received: keys
 * and value types only, never values. Shapes of several results merge into one (a key missing
 * from some results becomes optional; differing types become a union). Objects whose keys look
 * like data rather than field names (many keys, or keys that are not names) become
 * `dict[str, ...]`, so ids, emails or paths used as keys are not kept. Pure.
 */
import type { JsonSchema } from "./schema_types.ts";

/** Deeper than this, a value's shape is left open. */
const MAX_DEPTH = 6;
/** An object with more keys than this is a mapping, not a record. */
const MAX_FIELDS = 40;
/** Items of an array looked at. */
const MAX_ITEMS = 50;
/** Alternatives of a union kept before the shape is left open. */
const MAX_VARIANTS = 4;
/** A key that can be a field name: short, a word with `_`, `-`, `.`, `@`, `$` at most. */
const FIELD_NAME = /^[A-Za-z_$@][A-Za-z0-9_.$-]{0,39}$/;
/** A number as long as an id or a timestamp; capitals and digits as long as an access key. */
const LONG_CODE = /[0-9]{5}|[A-Z0-9]{16}/;
/** The words of a camel-case name: "HTTP", "Status", "4", "Address". */
const NAME_WORD = /[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+/g;
/** Letters of one case with a digit inside them: "UA1B2C3D4E", "k3jx9qwe2z". */
const ONE_CASE_WITH_INNER_DIGIT =
  /^(?:[A-Z0-9]*[A-Z][0-9]+[A-Z][A-Z0-9]*|[a-z0-9]*[a-z][0-9]+[a-z][a-z0-9]*)$/;
/**
 * A domain or a file name: "example.com", "README.md", "photo.JPG", "notes.markdown",
 * "acme.international", "example.xn--p1ai".
 */
const DOTTED_NAME = /\.[A-Za-z][A-Za-z0-9-]{0,24}$/;
/**
 * A well-known token: a Stripe, Slack, GitHub, GitLab, DigitalOcean, Hugging Face or OpenAI key's
 * prefix and 8 characters or more ("sk-livedeadbeefcafe", not "sk_id" or "tok_count"), or a JWT.
 */
const TOKEN_PREFIX =
  /^(?:(?:sk|pk|rk|tok|sess|hf|xox[abprs]|gh[opsu]|github_pat|glpat|dop_v1)[-_][\w-]{8,}|eyJ)/;
/**
 * Numbers that are data: a run of four digits or more between separators or at the end
 * ("ssn-078-05-1120", "user_1234", "user1234"; not "http_200"), or three numbers or more
 * ("ip_10_0_0_1").
 */
const DIGITS_PART = /(?:^|[_.$@-])[0-9]{4,}(?=$|[_.$@-])|[0-9]{4,}$|(?:[0-9]+[^0-9]+){2}[0-9]+/;

/**
 * Whether `key` reads as a field name rather than data. Generated ids and tokens read as runs
 * of short pieces ("N9x7Y2kLm3Qp", "f47ac10b" of a UUID, "51Hx9aBcD") or mix letters and digits
 * more than once ("a7fec171"); names read as words ("ipv4Address", "HTTPStatusCode"). A heuristic:
 * a name taken for data only makes its object a `dict[str, ...]`, while an id made of letters
 * alone ("deadbeef") still passes for a name; `mergeShapes` catches most of those, as the keys
 * of a mapping differ from one result to the next.
 */
export function isFieldName(key: string): boolean {
  if (!FIELD_NAME.test(key) || LONG_CODE.test(key) || DOTTED_NAME.test(key)) return false;
  if (TOKEN_PREFIX.test(key) || DIGITS_PART.test(key)) return false;
  return key.split(/[_.$@-]/).every((part) => {
    if (part.length < 6) return true;
    const words = part.match(NAME_WORD)?.length ?? 1;
    const digitRuns = part.match(/[0-9]+/g)?.length ?? 0;
    if (part.length >= 8 && ONE_CASE_WITH_INNER_DIGIT.test(part)) return false;
    return part.length / words >= 2.5 && (part.length < 8 || digitRuns < 2);
  });
}

/**
 * The value a script gets from a tool result (the rule of `to_python_value` in prelude.py):
 * the structured content, or the one text item (parsed when it is JSON). Undefined when the
 * result is something else (images, several items), whose shape is not recorded.
 */
export function scriptValue(result: Record<string, unknown>): { value: unknown } | undefined {
  if (result.structuredContent !== undefined && result.structuredContent !== null) {
    return { value: result.structuredContent };
  }
  const content = Array.isArray(result.content) ? result.content : [];
  if (content.length !== 1) return undefined;
  const item = content[0] as Record<string, unknown> | null;
  if (item?.type !== "text" || typeof item.text !== "string") return undefined;
  const text = item.text.trim();
  if (text.startsWith("{") || text.startsWith("[")) {
    try {
      return { value: JSON.parse(text) };
    } catch {
      // Not JSON after all: the script gets the text.
    }
  }
  return { value: item.text };
}

/**
 * Values looked at for one shape; past them, the rest is left open. The other bounds allow 40
 * fields on each of 6 levels, and a tool answering a new branch each call grew its recorded
 * shape, and the file it is saved in, past 100 MB (an attacker's corpus).
 */
export const MAX_SHAPE_NODES = 1_000;

/** The shape of one value. */
export function shapeOf(
  value: unknown,
  depth = 0,
  budget = { left: MAX_SHAPE_NODES },
): JsonSchema {
  if (--budget.left < 0) return {};
  if (value === null) return { type: "null" };
  switch (typeof value) {
    case "boolean":
      return { type: "boolean" };
    case "number":
      return { type: Number.isInteger(value) ? "integer" : "number" };
    case "string":
      return { type: "string" };
  }
  if (depth >= MAX_DEPTH) return {};
  if (Array.isArray(value)) {
    const items = value.slice(0, MAX_ITEMS).map((v) => shapeOf(v, depth + 1, budget));
    return items.length === 0
      ? { type: "array" }
      : { type: "array", items: items.reduce(mergeShapes) };
  }
  if (typeof value !== "object") return {};
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_FIELDS || !entries.every(([k]) => isFieldName(k))) {
    const values = entries.slice(0, MAX_ITEMS).map(([, v]) => shapeOf(v, depth + 1, budget));
    return values.length === 0
      ? { type: "object" }
      : { type: "object", additionalProperties: values.reduce(mergeShapes) };
  }
  return {
    type: "object",
    properties: Object.fromEntries(entries.map(([k, v]) => [k, shapeOf(v, depth + 1, budget)])),
    required: entries.map(([k]) => k),
  };
}

/** One shape that both results fit. */
export function mergeShapes(a: JsonSchema, b: JsonSchema): JsonSchema {
  if (isOpen(a) || isOpen(b)) return {};
  const variants = [...alternatives(a)];
  for (const next of alternatives(b)) {
    const i = variants.findIndex((v) => sameKind(v, next));
    if (i === -1) variants.push(next);
    else variants[i] = mergeSameKind(variants[i]!, next);
  }
  if (variants.length > MAX_VARIANTS) return {};
  return variants.length === 1 ? variants[0]! : { anyOf: variants };
}

function mergeSameKind(a: JsonSchema, b: JsonSchema): JsonSchema {
  if (a.type === "number" || b.type === "number") return { type: "number" };
  if (a.type === "array") {
    if (!a.items) return b;
    if (!b.items) return a;
    return { type: "array", items: mergeShapes(a.items as JsonSchema, b.items as JsonSchema) };
  }
  if (a.type !== "object") return a;
  const ap = a.properties as Record<string, JsonSchema> | undefined;
  const bp = b.properties as Record<string, JsonSchema> | undefined;
  if (ap && bp) {
    const keys = [...new Set([...Object.keys(ap), ...Object.keys(bp)])];
    if (keys.length > MAX_FIELDS) return mapping(a, b);
    // More keys that only one result has than keys both have: keys that are data (ids, names
    // of people or projects), not a record's fields, which come back call after call.
    const shared = keys.filter((k) => Object.hasOwn(ap, k) && Object.hasOwn(bp, k)).length;
    if (keys.length - shared > shared) return mapping(a, b);
    const required = new Set(a.required as string[]);
    return {
      type: "object",
      properties: Object.fromEntries(
        // Own keys only: a result's `toString` or `constructor` is not Object.prototype's.
        keys.map((k) => [
          k,
          !Object.hasOwn(bp, k)
            ? ap[k]!
            : !Object.hasOwn(ap, k)
            ? bp[k]!
            : mergeShapes(ap[k]!, bp[k]!),
        ]),
      ),
      required: (b.required as string[]).filter((k) => required.has(k)),
    };
  }
  return mapping(a, b);
}

/** Two objects as one mapping of their values' shapes. */
function mapping(a: JsonSchema, b: JsonSchema): JsonSchema {
  const values = [a, b].flatMap((s) =>
    s.properties
      ? Object.values(s.properties as Record<string, JsonSchema>)
      : s.additionalProperties
      ? [s.additionalProperties as JsonSchema]
      : []
  );
  return values.length === 0
    ? { type: "object" }
    : { type: "object", additionalProperties: values.reduce(mergeShapes) };
}

function alternatives(shape: JsonSchema): JsonSchema[] {
  return Array.isArray(shape.anyOf) ? shape.anyOf as JsonSchema[] : [shape];
}

function sameKind(a: JsonSchema, b: JsonSchema): boolean {
  const kind = (s: JsonSchema) => (s.type === "integer" ? "number" : s.type);
  return kind(a) === kind(b);
}

function isOpen(shape: JsonSchema): boolean {
  return shape.type === undefined && shape.anyOf === undefined;
}
