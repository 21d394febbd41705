/**
 * The arguments a tool takes: exactly the named ones. A misspelt argument (`timeout` for
 * `timeout_s`) is refused with the name it likely meant, instead of being dropped while the
 * script runs under the default.
 */
import { z } from "zod";
import { closestName } from "../../config/did_you_mean.ts";
import { quotedName } from "../../_util/quoted_name.ts";

export function toolArguments<Shape extends z.ZodRawShape>(shape: Shape) {
  const known = Object.keys(shape);
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === "unrecognized_keys" ? unknownArguments(issue.keys, known) : undefined,
  });
}

/** How many unknown arguments a refusal names (each quoted by `quotedName`). */
const NAMED_ARGUMENTS = 5;

/**
 * The refusal of arguments the tool does not take (pure). The names are the client's, of any
 * length and number: the refusal quotes a few, each in a few dozen characters (a 9 MB name was
 * echoed whole, and 400,000 names made a 9 MB answer).
 */
export function unknownArguments(names: readonly string[], known: readonly string[]): string {
  const each = names.slice(0, NAMED_ARGUMENTS).map((name) => {
    const quoted = quotedName(name);
    const meant = closestName(name, known);
    return meant === undefined ? quoted : `${quoted} (did you mean "${meant}"?)`;
  });
  if (names.length > NAMED_ARGUMENTS) each.push(`and ${names.length - NAMED_ARGUMENTS} more`);
  const takes = known.length === 0 ? "no arguments" : `only ${known.join(", ")}`;
  return `Unknown argument${names.length === 1 ? "" : "s"} ${
    each.join(", ")
  }: this tool takes ${takes}.`;
}
