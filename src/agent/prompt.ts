/**
 * Everything the agent says to the model, in one place.
 */
import type { ChatMessage } from "./chat_model.ts";

export interface PromptInput {
  task: string;
  /** Python stubs of the tools that matter for the task. */
  stubs: string;
  /** The compact index of every tool (so the model knows what else exists). */
  index: string;
  /** The sandbox's rules and limits, as the execute_code description states them. */
  sandboxRules: string;
  /** Earlier attempts, oldest first. */
  previous: { code: string; error: string }[];
}

const SYSTEM =
  `You write Python 3 scripts that run in a sandbox (Pyodide) and solve the user's task.

Answer with exactly one fenced code block (\`\`\`python ... \`\`\`) and nothing else.

How to write the script:
- Call tools only through the functions listed below: \`from mcp_tools import <module>\` then
  \`<module>.<function>(...)\` with the parameter names shown. Each has an awaitable twin named
  \`<function>_async\` for \`await asyncio.gather(...)\`; top-level \`await\` is allowed.
- A failing tool raises mcp_tools.ToolError; let it propagate unless you can recover.
- print() what the user should see, and end with an expression whose value is the answer.
- Standard library only. No network, no host files or environment unless a tool provides them.`;

/** The conversation for one attempt. */
export function buildMessages(input: PromptInput): ChatMessage[] {
  const context = [
    `Task:\n${input.task.trim()}`,
    `Sandbox:\n${input.sandboxRules.trim()}`,
    input.stubs.trim()
      ? `Tools that look relevant (Python stubs):\n\`\`\`python\n${input.stubs.trim()}\n\`\`\``
      : "No tool matched the task by name; the index below lists every tool.",
    input.index.trim() ? `All tools (module: function: purpose):\n${input.index.trim()}` : "",
  ].filter(Boolean).join("\n\n");
  const messages: ChatMessage[] = [
    { role: "system", content: SYSTEM },
    { role: "user", content: context },
  ];
  for (const attempt of input.previous) {
    messages.push({ role: "assistant", content: "```python\n" + attempt.code.trimEnd() + "\n```" });
    messages.push({
      role: "user",
      content:
        `That script failed:\n${attempt.error.trim()}\n\nFix it and answer with the whole corrected script.`,
    });
  }
  return messages;
}
