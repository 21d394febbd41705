/**
 * Reads JSON with comments and trailing commas (VS Code's `mcp.json` allows both; the other
 * clients' files are plain JSON, which this reads too).
 */

/**
 * Parses JSONC text; throws `SyntaxError` as `JSON.parse` does. `hadComments` says whether any
 * comments were dropped (a file written back loses them).
 */
export function parseJsonc(text: string): { value: unknown; hadComments: boolean } {
  try {
    return { value: JSON.parse(text), hadComments: false }; // the usual case, and the fast one
  } catch {
    // comments or trailing commas, or broken: read on
  }
  const out: string[] = [];
  let hadComments = false;
  // Index in `out` of a comma followed so far only by whitespace and comments, else -1.
  let pendingComma = -1;
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      // A string whole, escapes included, so "//" inside it is not a comment.
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      out.push(text.slice(i, j + 1));
      pendingComma = -1;
      i = j + 1;
    } else if (c === "/" && text[i + 1] === "/") {
      hadComments = true;
      while (i < text.length && text[i] !== "\n") i++;
    } else if (c === "/" && text[i + 1] === "*") {
      hadComments = true;
      const end = text.indexOf("*/", i + 2);
      i = end === -1 ? text.length : end + 2;
    } else {
      if ((c === "}" || c === "]") && pendingComma !== -1) out[pendingComma] = "";
      if (c === ",") pendingComma = out.length;
      else if (!/\s/.test(c)) pendingComma = -1;
      out.push(c);
      i++;
    }
  }
  return { value: JSON.parse(out.join("")), hadComments };
}
