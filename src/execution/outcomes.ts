/**
 * The error vocabulary: every outcome the host states, in one table. From it come the
 * TypeScript types (a misspelled outcome does not compile), the audit log's limit names, the
 * error kinds of a tool reply and the Python exception classes a failed tool call raises in a
 * script (`mcp_tools.ToolDenied`, ...).
 *
 * An outcome of an execution is the host's word: a script's own exception never carries one of
 * these names (see `scriptErrorType`), so a result or an audit record that says MEMORY_LIMIT
 * always means the host stopped the sandbox for it.
 */

interface OutcomeEntry {
  /**
   * Whether it ends an execution (a result's error_type) or one tool call (a Python exception the
   * script may catch). TOOL_DENIED is both: the exception, and the execution's outcome when the
   * script lets it escape after the host denied a call (see toDiagnostics).
   */
  readonly of: "execution" | "tool_call";
  /** An execution's limit or refusal the audit log records as `limit_hit` (false for tool calls). */
  readonly limit: boolean;
  /** For a tool call: its kind on the wire and the exception the script sees. */
  readonly raises?: { readonly kind: string; readonly python: string };
  readonly meaning: string;
}

export const OUTCOMES = {
  TIMEOUT: { of: "execution", limit: true, meaning: "The script ran past its time limit." },
  MEMORY_LIMIT: { of: "execution", limit: true, meaning: "The sandbox outgrew its memory limit." },
  OUTPUT_LIMIT: {
    of: "execution",
    limit: true,
    meaning: "The script wrote more output than the limit.",
  },
  POLICY_VIOLATION: {
    of: "execution",
    limit: true,
    meaning: "The request or the sandbox broke a rule of the host.",
  },
  TOOL_DENIED: {
    of: "execution",
    limit: true,
    raises: { kind: "denied", python: "ToolDenied" },
    meaning: "The host's policy refused this tool call.",
  },
  PACKAGE_UNAVAILABLE: {
    of: "execution",
    limit: false,
    meaning: "A requested Python package cannot be installed.",
  },
  CANCELLED: { of: "execution", limit: false, meaning: "The client cancelled the execution." },
  SANDBOX_CRASHED: {
    of: "execution",
    limit: false,
    meaning: "The sandbox process died or failed.",
  },
  BUSY: { of: "execution", limit: true, meaning: "Too many executions are running or waiting." },
  TOOL_FAILED: {
    of: "tool_call",
    limit: false,
    raises: { kind: "tool_error", python: "ToolError" },
    meaning: "An upstream MCP tool failed. Carries the server, the tool and the upstream message.",
  },
  TOOL_NOT_FOUND: {
    of: "tool_call",
    limit: false,
    raises: { kind: "invalid", python: "ToolError" },
    meaning: "No such server or tool.",
  },
  TOOL_TIMEOUT: {
    of: "tool_call",
    limit: false,
    raises: { kind: "timeout", python: "ToolTimeout" },
    meaning: "The upstream tool did not answer within the per-call timeout.",
  },
  UPSTREAM_UNAVAILABLE: {
    of: "tool_call",
    limit: false,
    raises: { kind: "unavailable", python: "UpstreamUnavailable" },
    meaning:
      "The upstream MCP server is not connected (crashed, reconnecting, or failed to start).",
  },
} as const satisfies Record<string, OutcomeEntry>;

export type Outcome = keyof typeof OUTCOMES;

/** The outcomes that end an execution: what `diagnostics.error_type` says when the host stopped it. */
export type HostOutcome = {
  [K in Outcome]: (typeof OUTCOMES)[K]["of"] extends "execution" ? K : never;
}[Outcome];

/** Some of the outcomes `T`, each checked against it (a misspelled name does not compile). */
export type OneOf<T extends string, Some extends T> = Some;

type Raising = { [K in Outcome]: (typeof OUTCOMES)[K] extends { raises: object } ? K : never }[
  Outcome
];

/** How a tool reply names its failure on the wire (`{ error: { kind, message } }`). */
export type ToolErrorKind = (typeof OUTCOMES)[Raising]["raises"]["kind"];

const entries = Object.entries(OUTCOMES) as [Outcome, OutcomeEntry][];

export const HOST_OUTCOMES: readonly HostOutcome[] = entries
  .filter(([, entry]) => entry.of === "execution").map(([name]) => name as HostOutcome);

/** The outcomes the audit log records as `limit_hit`. */
export const LIMIT_OUTCOMES: ReadonlySet<HostOutcome> = new Set(
  entries.filter(([, entry]) => entry.of === "execution" && entry.limit)
    .map(([name]) => name as HostOutcome),
);

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

/** The exception every failed tool call raises (the others derive from it). */
const BASE_EXCEPTION = OUTCOMES.TOOL_FAILED.raises.python;

/** The Python exception classes of `mcp_tools`, base class first. */
export const PYTHON_EXCEPTIONS: readonly string[] = [
  ...new Set([BASE_EXCEPTION, ...entries.flatMap(([, e]) => (e.raises ? [e.raises.python] : []))]),
];

/**
 * The Python module `_codemode_errors`, generated from the table: the exception classes and
 * which one each error kind raises. Baked into the snapshot ahead of the prelude, which imports
 * it; `mcp_tools` re-exports the classes.
 */
export function toolErrorsModulePy(): string {
  const lines = [
    '"""Generated from OUTCOMES in src/execution/outcomes.ts. Do not edit."""',
    "",
    "",
    `class ${BASE_EXCEPTION}(Exception):`,
    `    """${OUTCOMES.TOOL_FAILED.meaning}"""`,
    "",
    `    def __init__(self, server, tool, message, kind="${OUTCOMES.TOOL_FAILED.raises.kind}"):`,
    '        super().__init__(f"{server}.{tool}: {message}")',
    "        self.server = server",
    "        self.tool = tool",
    "        self.message = message",
    "        self.kind = kind",
  ];
  const defined = new Set<string>([BASE_EXCEPTION]);
  for (const [, entry] of entries) {
    if (!entry.raises || defined.has(entry.raises.python)) continue;
    defined.add(entry.raises.python);
    lines.push("", "", `class ${entry.raises.python}(${BASE_EXCEPTION}):`);
    lines.push(`    """${entry.meaning}"""`);
  }
  lines.push("", "");
  lines.push(`for _cls in (${PYTHON_EXCEPTIONS.join(", ")}):`, '    _cls.__module__ = "mcp_tools"');
  lines.push("", "ERROR_CLASSES = {");
  for (const [, entry] of entries) {
    if (entry.raises) lines.push(`    "${entry.raises.kind}": ${entry.raises.python},`);
  }
  lines.push("}", "");
  return lines.join("\n");
}
