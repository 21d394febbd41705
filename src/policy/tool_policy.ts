/**
 * Which upstream tools a script may call: the profile's `allowed_tools` globs over
 * `server.tool` names, and which of those wait for a person's approval (its `approve` globs).
 * `*` matches any run of characters (dots and line breaks included); nothing else is special. Decided on the
 * host for every call.
 */

/** Whether `server.tool` matches one of `globs`. */
export function isToolAllowed(server: string, tool: string, globs: readonly string[]): boolean {
  const name = `${server}.${tool}`;
  return globs.some((glob) => globMatches(glob, name));
}

/**
 * Whether `name` matches `glob`, each `*` any run of characters (pure). The parts between stars
 * are found left to right, each at its first place after the last: a `*` never needs to take
 * back what it took. As a regular expression (`.*` for each `*`), a glob of several stars
 * backtracked over the name a sandbox chose: `*a*a*a*b` against 400 characters took 12.7 s of
 * the host's thread, a call.
 */
export function globMatches(glob: string, name: string): boolean {
  const parts = glob.split("*");
  if (parts.length === 1) return glob === name;
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  const end = name.length - last.length;
  if (end < first.length || !name.startsWith(first) || !name.endsWith(last)) return false;
  let at = first.length;
  for (const part of parts.slice(1, -1)) {
    const found = name.indexOf(part, at);
    if (found < 0 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}

export type ToolDecision =
  | { allowed: true; needsApproval: boolean }
  | { allowed: false; reason: string };

/** The host's decision on one tool call of an execution. */
export function decideToolCall(
  server: string,
  tool: string,
  policy: {
    /** The profile's name, for the reason of a denial. */
    name: string;
    allowed_tools: readonly string[];
    approve: readonly string[];
    tool_calls: number;
  },
  callsSoFar: number,
  /**
   * The tool as scripts may name it (`my_db.get` for the MCP `my-db.get`): an `approve` glob
   * written that way asks too, since stubs and the index show those names. Only approvals:
   * asking more is the safe side, allowing more is not.
   */
  pythonNames: readonly { module: string; function: string }[] = [],
): ToolDecision {
  if (callsSoFar >= policy.tool_calls) {
    return {
      allowed: false,
      reason: `the limit of ${policy.tool_calls} tool calls per execution was reached ` +
        `(the profile's limits.tool_calls): do the rest in another execution`,
    };
  }
  if (!isToolAllowed(server, tool, policy.allowed_tools)) {
    return {
      allowed: false,
      reason: `the profile "${policy.name}" does not allow ${server}.${tool} (${
        allowedToolsShown(policy.allowed_tools)
      })`,
    };
  }
  const needsApproval = isToolAllowed(server, tool, policy.approve) ||
    pythonNames.some((name) => isToolAllowed(name.module, name.function, policy.approve));
  return { allowed: true, needsApproval };
}

/** A profile's allowed_tools as a denial names them: the first five (pure). */
function allowedToolsShown(globs: readonly string[]): string {
  if (globs.length === 0) return "it allows no tools";
  const shown = globs.slice(0, 5).map((glob) => JSON.stringify(glob)).join(", ");
  return `its allowed_tools: ${shown}${globs.length > 5 ? ` and ${globs.length - 5} more` : ""}`;
}
