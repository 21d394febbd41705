/**
 * How structured results of upstream tools are checked against their declared `outputSchema`:
 * the SDK's own validator, given the schema without its regular expressions. The SDK validates
 * on the host's one thread, and a `pattern` is the upstream's own regular expression: an attacker's
 * corpus declared `^(a|a)*$` and answered 27 a's and a "!", which held every client, and every
 * running script's time and memory limits, for 17 s (twice as long per added a). Types, required
 * keys, enums and the rest are still checked.
 */
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/client/validators/ajv";
import type { JsonSchemaType, jsonSchemaValidator } from "@modelcontextprotocol/client";

export function outputValidator(): jsonSchemaValidator {
  const ajv = new AjvJsonSchemaValidator();
  return { getValidator: (schema) => ajv.getValidator(withoutPatterns(schema) as JsonSchemaType) };
}

/** `schema` without `pattern` and `patternProperties` anywhere in it (a copy). */
export function withoutPatterns(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutPatterns);
  if (schema === null || typeof schema !== "object") return schema;
  return Object.fromEntries(
    Object.entries(schema)
      .filter(([key]) => key !== "pattern" && key !== "patternProperties")
      .map(([key, value]) => [key, withoutPatterns(value)]),
  );
}
