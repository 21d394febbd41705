/**
 * The outcomes only the host can state: limits it enforced, refusals, crashes. A script's own
 * exception never carries one of these names (see `scriptErrorType`), so a result or an audit
 * record that says MEMORY_LIMIT always means the host stopped the sandbox for it.
 */
export const HOST_OUTCOMES = [
  "TIMEOUT",
  "MEMORY_LIMIT",
  "OUTPUT_LIMIT",
  "POLICY_VIOLATION",
  "TOOL_DENIED",
  "PACKAGE_UNAVAILABLE",
  "CANCELLED",
  "SANDBOX_CRASHED",
  "BUSY",
] as const;

export type HostOutcome = typeof HOST_OUTCOMES[number];

const HOST_OUTCOME_SET: ReadonlySet<string> = new Set(HOST_OUTCOMES);

export function isHostOutcome(name: string): name is HostOutcome {
  return HOST_OUTCOME_SET.has(name);
}

/**
 * The error type a result shows for an exception the script raised: its class name, unless the
 * name is one of the host's own outcomes, which a script may not claim.
 */
export function scriptErrorType(name: string): string {
  return isHostOutcome(name) ? "ScriptError" : name;
}
