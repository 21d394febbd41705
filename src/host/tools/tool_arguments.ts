/**
 * The arguments a tool takes: exactly the named ones. A misspelt argument (`timeout` for
 * `timeout_s`) is refused with the name it likely meant, instead of being dropped while the
 * script runs under the default.
 */
import { z } from "zod";
import { closestName } from "../../config/did_you_mean.ts";

export function toolArguments<Shape extends z.ZodRawShape>(shape: Shape) {
  const known = Object.keys(shape);
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === "unrecognized_keys" ? unknownArguments(issue.keys, known) : undefined,
  });
}

/** The refusal of arguments the tool does not take (pure). */
export function unknownArguments(names: readonly string[], known: readonly string[]): string {
  const each = names.map((name) => {
    const meant = closestName(name, known);
    return meant === undefined ? `"${name}"` : `"${name}" (did you mean "${meant}"?)`;
  });
  const takes = known.length === 0 ? "no arguments" : `only ${known.join(", ")}`;
  return `Unknown argument${names.length === 1 ? "" : "s"} ${
    each.join(", ")
  }: this tool takes ${takes}.`;
}
