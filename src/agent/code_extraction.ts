/**
 * Takes the Python code out of a model's reply: the first fenced block (```python or bare ```),
 * or the whole reply when it holds no fence.
 */
export function extractCode(reply: string): string {
  // The blanks after the language are inside its group: two runs of blanks side by side
  // backtracked over a reply of spaces (8 MiB are read; 30,000 spaces held the host 3 s).
  const fence = /```[ \t]*(?:(?:python3|python|py)[ \t]*)?\r?\n([\s\S]*?)```/i.exec(reply);
  if (fence) return fence[1]!.trimEnd() + "\n";
  const open = /```[ \t]*(?:(?:python3|python|py)[ \t]*)?\r?\n([\s\S]*)$/i.exec(reply);
  if (open) return open[1]!.trimEnd() + "\n"; // an unclosed fence (the reply was cut short)
  return reply.trim() + "\n";
}
