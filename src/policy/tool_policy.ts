/**
 * Which upstream tools a script may call: the profile's `allowed_tools` globs over
 * `server.tool` names, and which of those wait for a person's approval (its `approve` globs).
 * `*` matches any run of characters (dots and line breaks included); nothing else is special. Decided on the
 * host for every call.
 */

/** Whether `server.tool` matches one of `globs`. */
export function isToolAllowed(server: string, tool: string, globs: readonly string[]): boolean {
  const name = `${server}.${tool}`;
  return globs.some((glob) => globToRegExp(glob).test(name));
}

export function globToRegExp(glob: string): RegExp {
  const body = glob.split("*").map(escapeRegExp).join(".*");
  return new RegExp(`^${body}$`, "s"); // `*` takes line breaks too
}

function escapeRegExp(text: string): string {
  return text.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
}

export type ToolDecision =
  | { allowed: true; needsApproval: boolean }
  | { allowed: false; reason: string };

/** The host's decision on one tool call of an execution. */
export function decideToolCall(
  server: string,
  tool: string,
  policy: { allowed_tools: readonly string[]; approve: readonly string[]; tool_calls: number },
  callsSoFar: number,
): ToolDecision {
  if (callsSoFar >= policy.tool_calls) {
    return {
      allowed: false,
      reason: `the limit of ${policy.tool_calls} tool calls per execution was reached`,
    };
  }
  if (!isToolAllowed(server, tool, policy.allowed_tools)) {
    return { allowed: false, reason: `the profile does not allow ${server}.${tool}` };
  }
  return { allowed: true, needsApproval: isToolAllowed(server, tool, policy.approve) };
}
