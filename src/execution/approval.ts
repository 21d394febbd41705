/**
 * A person's approval of one tool call. A profile's `approve` globs name the tools whose calls
 * wait for it; the tool gate asks an `Approver`, which the MCP handler supplies for the client
 * that sent the script (elicitation for a 2025-11-25 client, an `input_required` round for a
 * 2026-07-28 one; see src/host/approvals.ts). Anything but "approved" denies the call, and the
 * script gets `ToolDenied` saying which.
 */
import { escapeUnsafe, shortenSpaces } from "../_util/safe_text.ts";

/** How a question ended. */
export type ApprovalAnswer = "approved" | "declined" | "cancelled" | "timed_out" | "unavailable";

/** What the person is asked: the call, its arguments already scrubbed of secrets. */
export interface ApprovalQuestion {
  server: string;
  tool: string;
  arguments: Record<string, unknown>;
  /** Keys of `arguments` the tool's input schema does not name (marked in the question). */
  undeclared?: readonly string[];
}

/**
 * Asks a person; never throws (a failure to ask is "unavailable"). `withdrawn` aborts when the
 * answer is no longer wanted (the script ended): the question is taken back if it can be, and
 * the answer is "cancelled".
 */
export type Approver = (
  question: ApprovalQuestion,
  withdrawn: AbortSignal,
) => Promise<ApprovalAnswer>;

/** The answer when there is nobody to ask. */
export const nobodyToAsk: Approver = () => Promise.resolve("unavailable");

/** Why a call was denied, for the script's `ToolDenied` and the records. */
export function denialReason(answer: Exclude<ApprovalAnswer, "approved">, timeoutS: number) {
  switch (answer) {
    case "declined":
      return "the person declined the call";
    case "cancelled":
      return "the approval request was cancelled";
    case "timed_out":
      return `no answer to the approval request within ${timeoutS} s`;
    case "unavailable":
      return "the call needs a person's approval and the client cannot ask for it";
  }
}

/**
 * How much of a call's arguments a question shows. A long string is shown by its start and its
 * length (a file's content); anything else is shown whole or not asked about at all: a script
 * must not hide one argument behind another (a path after a long content, an item after many).
 */
export const SHOWN_LIMITS = {
  /** Characters of a string shown before "… [N characters in all]". */
  stringChars: 300,
  /** Items of one array, keys of one object. */
  items: 50,
  keyChars: 200,
  depth: 8,
  /** Characters of the whole rendering. */
  totalChars: 8000,
  /** Lines of the whole rendering (a list of plain values takes one). */
  lines: 400,
};

/**
 * The arguments as a person reads them: every key and item, each long string shortened with a
 * marker; or null when they cannot be shown so (too many items or keys, too deep, too long).
 */
export function shownArguments(
  args: Record<string, unknown>,
  undeclared: readonly string[] = [],
): string | null {
  let hidden = false;
  const shorten = (value: unknown, depth: number): unknown => {
    if (typeof value === "string") {
      return value.length > SHOWN_LIMITS.stringChars
        ? `${value.slice(0, SHOWN_LIMITS.stringChars)}… [${value.length} characters in all]`
        : value;
    }
    if (typeof value !== "object" || value === null) return value;
    const entries = Array.isArray(value)
      ? value.map((v, i) => [i, v] as const)
      : Object.entries(value);
    if (depth >= SHOWN_LIMITS.depth || entries.length > SHOWN_LIMITS.items) {
      hidden = true;
      return null;
    }
    if (Array.isArray(value)) return value.map((v) => shorten(v, depth + 1));
    if (entries.some(([key]) => String(key).length > SHOWN_LIMITS.keyChars)) hidden = true;
    // fromEntries defines own properties, so a "__proto__" key is shown as the key it is.
    return Object.fromEntries(entries.map(([key, v]) => [key, shorten(v, depth + 1)]));
  };
  // Line separators, bidi overrides and invisible characters shown escaped, long runs of spaces
  // counted: none can push one argument out of sight behind another.
  const text = escapeUnsafe(shortenSpaces(render(shorten(args, 0), "", new Set(undeclared))), {
    keepNewlines: true, // the rendering's own line breaks (a string's are escaped by JSON)
  });
  const tooLong = text.length > SHOWN_LIMITS.totalChars ||
    text.split("\n").length > SHOWN_LIMITS.lines;
  return hidden || tooLong ? null : text;
}

/**
 * JSON as a person reads it: one key or item a line, except a list of plain ASCII values
 * (numbers, strings, empty lists or objects), which takes one line, so padding cannot push the
 * rest of the arguments hundreds of lines down (right-to-left text keeps one item a line: on one
 * line it would reorder the items around it). Keys are shown in ASCII, so two keys that look the
 * same cannot pass for one, and a key the tool's schema does not name is marked.
 */
function render(value: unknown, indent: string, undeclared: ReadonlySet<string>): string {
  const plain = (v: unknown) =>
    (typeof v !== "object" || v === null || Object.keys(v).length === 0) &&
    /^[\x20-\x7e]*$/.test(JSON.stringify(v));
  if (typeof value !== "object" || value === null || Object.keys(value).length === 0) {
    return JSON.stringify(value);
  }
  const none = new Set<string>();
  const inner = indent + "  ";
  if (Array.isArray(value)) {
    if (value.every(plain)) return `[${value.map((v) => JSON.stringify(v)).join(", ")}]`;
    return `[\n${value.map((v) => inner + render(v, inner, none)).join(",\n")}\n${indent}]`;
  }
  const entries = Object.entries(value).map(([key, v]) => {
    const mark = undeclared.has(key) ? " (not in the tool's schema)" : "";
    return `${inner}${asciiKey(key)}${mark}: ${render(v, inner, none)}`;
  });
  return `{\n${entries.join(",\n")}\n${indent}}`;
}

/** A key as a JSON string with every character beyond printable ASCII as `\u{hex}`. */
function asciiKey(key: string): string {
  return JSON.stringify(key).replace(
    /[^\x20-\x7e]/gu,
    (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`,
  );
}

/**
 * Whether two keys of one object in `value`, down to the levels a question shows, read alike
 * once scrubbed (`scrub`): a question would show them as `[REDACTED]` and `[REDACTED] 2`, and a
 * person could not tell which one holds a secret and which the script named so (pure). Deeper
 * levels are not looked at: arguments that deep cannot be shown at all (a script's 100,000
 * levels overflowed the host's stack here).
 */
export function keysScrubbedAlike(
  value: unknown,
  scrub: (text: string) => string,
  depth = 0,
): boolean {
  if (typeof value !== "object" || value === null || depth > SHOWN_LIMITS.depth) return false;
  if (!Array.isArray(value)) {
    const keys = Object.keys(value);
    if (new Set(keys.map(scrub)).size < keys.length) return true;
  }
  return Object.values(value).some((v) => keysScrubbedAlike(v, scrub, depth + 1));
}

/** Why a call cannot be put to a person, or null when its arguments can be shown. */
export function unshowableReason(question: ApprovalQuestion): string | null {
  if (shownArguments(question.arguments, question.undeclared) !== null) return null;
  const l = SHOWN_LIMITS;
  return `its arguments cannot be shown to a person whole (at most ${l.items} items or keys per ` +
    `list or object, ${l.depth} levels, ${l.totalChars} characters or ${l.lines} lines shown); ` +
    "split the call";
}

/** The question as a person reads it (for a question whose arguments can be shown). */
export function approvalMessage(question: ApprovalQuestion): string {
  const shown = shownArguments(question.arguments, question.undeclared) ?? "(not shown)";
  const tool = escapeUnsafe(`${question.server}.${question.tool}`);
  return `A script wants to call ${tool} with these arguments:\n${shown}\nAllow this call?`;
}

/** The form the person fills in: one yes/no field. */
export const APPROVAL_FORM = {
  type: "object" as const,
  properties: {
    approve: { type: "boolean" as const, title: "Allow this tool call", default: false },
  },
  required: ["approve"],
};

/** The elicitation that asks a person about `question` (the same for both protocol eras). */
export function approvalRequest(question: ApprovalQuestion) {
  return {
    mode: "form" as const,
    // Half a surrogate pair (from a script's arguments) as U+FFFD: see well_formed_answers.ts.
    message: approvalMessage(question).toWellFormed(),
    requestedSchema: APPROVAL_FORM,
  };
}

/** An elicitation answer (`action`, `content`) read as an approval answer. */
export function readElicitAnswer(answer: unknown): ApprovalAnswer {
  const { action, content } = (answer ?? {}) as { action?: unknown; content?: unknown };
  if (action === "accept") {
    return (content as { approve?: unknown } | undefined)?.approve === true
      ? "approved"
      : "declined";
  }
  if (action === "decline") return "declined";
  return "cancelled";
}
