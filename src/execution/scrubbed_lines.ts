/**
 * A script's live output on its way to the client, scrubbed of secrets as it flows.
 */
import type { Redactor } from "../policy/redaction.ts";

/**
 * Live output, scrubbed of secrets a whole line at a time (a chunk may end inside a secret),
 * as the result's stdout and stderr are scrubbed whole. A partial line is held until its end or
 * the end of the run, however long: the sandbox's output cap bounds it. When a secret spans
 * lines, as many lines as it has breaks are held too, and scrubbed again with the next: a
 * secret that starts in a line sent is then whole in what was scrubbed.
 */
export function scrubbedLines(
  redact: Redactor,
  emit: (stream: "stdout" | "stderr", text: string) => void,
) {
  const held = { stdout: "", stderr: "" };
  const send = (stream: "stdout" | "stderr", text: string) => {
    if (text !== "") emit(stream, redact.text(text));
  };
  return {
    write(stream: "stdout" | "stderr", text: string): void {
      // No line ends in it: nothing can be sent yet. (Looking through all that is held for a
      // line break at every write made a flood of one-character writes quadratic.)
      const end = text.lastIndexOf("\n");
      if (end === -1) {
        held[stream] += text;
        return;
      }
      const joined = held[stream] + text;
      const lines = held[stream].length + end + 1;
      const scrubbed = redact.text(joined.slice(0, lines));
      const cut = lastLinesStart(scrubbed, redact.lineBreaks);
      if (cut > 0) emit(stream, scrubbed.slice(0, cut));
      held[stream] = scrubbed.slice(cut) + joined.slice(lines);
    },
    flush(): void {
      for (const stream of ["stdout", "stderr"] as const) {
        send(stream, held[stream]);
        held[stream] = "";
      }
    },
  };
}

/**
 * Where the last `n` lines of `text` begin (the last may lack its line break, where a secret
 * that ended with one was replaced); 0 when it has no more.
 */
export function lastLinesStart(text: string, n: number): number {
  let at = text.length;
  for (let i = 0; i < n && at > 0; i++) at = at === 1 ? 0 : text.lastIndexOf("\n", at - 2) + 1;
  return at;
}
