/**
 * Takes the Python code out of a model's reply: the first fenced block (```python or bare ```),
 * or the whole reply when it holds no fence.
 */
export function extractCode(reply: string): string {
  const fence = /```[ \t]*(?:python|py|python3)?[ \t]*\r?\n([\s\S]*?)```/i.exec(reply);
  if (fence) return fence[1]!.trimEnd() + "\n";
  const open = /```[ \t]*(?:python|py|python3)?[ \t]*\r?\n([\s\S]*)$/i.exec(reply);
  if (open) return open[1]!.trimEnd() + "\n"; // an unclosed fence (the reply was cut short)
  return reply.trim() + "\n";
}
