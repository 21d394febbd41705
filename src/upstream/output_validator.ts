/**
 * How structured results of upstream tools are checked against their declared `outputSchema`:
 * the SDK's own validator, given the schema without its regular expressions. The SDK validates
 * on the host's one thread, and a `pattern` is the upstream's own regular expression: an attacker's
 * corpus declared `^(a|a)*$` and answered 27 a's and a "!", which held every client, and every
 * running script's time and memory limits, for 17 s (twice as long per added a). Nor is
 * `uniqueItems`: the validator compares every pair of items that are arrays or objects, and
 * 60,000 of them (a 529 KB result) held the host for 50 s. Types, required keys, enums and the
 * rest are still checked.
 */
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/client/validators/ajv";
import type { JsonSchemaType, jsonSchemaValidator } from "@modelcontextprotocol/client";

export function outputValidator(): jsonSchemaValidator {
  const ajv = new AjvJsonSchemaValidator();
  return {
    getValidator: (schema) => ajv.getValidator(withoutCostlyKeywords(schema) as JsonSchemaType),
  };
}

/** The keywords a result is not checked against: what they cost is the upstream's choice. */
const UNCHECKED = new Set(["pattern", "patternProperties", "uniqueItems"]);

/** `schema` without the `UNCHECKED` keywords anywhere in it (a copy). */
export function withoutCostlyKeywords(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutCostlyKeywords);
  if (schema === null || typeof schema !== "object") return schema;
  return Object.fromEntries(
    Object.entries(schema)
      .filter(([key]) => !UNCHECKED.has(key))
      .map(([key, value]) => [key, withoutCostlyKeywords(value)]),
  );
}
