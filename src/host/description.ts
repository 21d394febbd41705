/**
 * The `execute_code` description an agent reads: what the sandbox can and cannot do, and a
 * compact index of the upstream tools it can call.
 */
import type { Profile } from "../sandbox/profile.ts";

export function describeExecuteCode(profile: Profile, toolIndex: string): string {
  const l = profile.limits;
  const lines = [
    "Run Python 3 (Pyodide, CPython compiled to WebAssembly) in a fresh, isolated sandbox process.",
    "Call many MCP tools from one script instead of one tool call at a time.",
    "",
    "Usage: print() what you want to see; the value of the last expression is returned as `result`.",
    "Top-level `await` works. Call tools as functions: `from mcp_tools import <server>` then",
    "`<server>.<tool>(arg=...)` (blocks until it answers) or `await <server>.<tool>_async(...)`",
    "(combine with asyncio.gather). A failed tool raises mcp_tools.ToolError naming server and tool;",
    "a call the policy refuses raises ToolDenied. Use search_tools / get_tool_docs for signatures.",
    "",
    "The sandbox: Python standard library, plus packages you name in `packages` (their dependencies",
    "come along) when the server can get them: its wheels, or Pyodide's set (numpy, pandas, ...)",
    "where it allows; no pip; no network" +
    (profile.net.length ? ` except ${profile.net.join(", ")}` : "") +
    "; no host files" +
    (profile.folders.length
      ? ` except ${profile.folders.map((f) => `${f.mount} (${f.mode})`).join(", ")}`
      : "") +
    "; no environment variables; no subprocesses.",
    'Every call starts from a clean interpreter, unless you pass session_id "new" (then the',
    "session_id the result gives) to keep variables between calls. files go in; files written to",
    "outputs/ come back.",
    `Limits (profile "${profile.name}"): ${l.timeout_s} s timeout (timeout_s up to ${l.max_timeout_s}),`,
    `${l.memory_mb} MB memory, ${l.output_bytes} bytes per output stream, ${l.tool_calls} tool calls,`,
    `${l.code_chars} characters / ${l.code_lines} lines of code.`,
  ];
  // The index lists every tool; the profile's rules decide which calls go through.
  const everyTool = profile.allowed_tools.includes("*");
  if (!everyTool || profile.approve.length > 0) {
    lines.push(
      `Tool rules (profile "${profile.name}"): ` +
        (everyTool
          ? "every tool may be called"
          : `only ${profile.allowed_tools.join(", ")} may be called (others raise ToolDenied)`) +
        (profile.approve.length
          ? `; ${profile.approve.join(", ")} wait for a person's approval`
          : "") +
        ".",
    );
  }
  if (toolIndex) lines.push("", "Available tools (module.function):", toolIndex);
  return lines.join("\n");
}
