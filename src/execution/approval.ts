/**
 * A person's approval of one tool call. A profile's `approve` globs name the tools whose calls
 * wait for it; the tool gate asks an `Approver`, which the MCP handler supplies for the client
 * that sent the script (elicitation for a 2025-11-25 client, an `input_required` round for a
 * 2026-07-28 one; see src/host/approvals.ts). Anything but "approved" denies the call, and the
 * script gets `ToolDenied` saying which.
 */

/** How a question ended. */
export type ApprovalAnswer = "approved" | "declined" | "cancelled" | "timed_out" | "unavailable";

/** What the person is asked: the call, its arguments already scrubbed of secrets. */
export interface ApprovalQuestion {
  server: string;
  tool: string;
  arguments: Record<string, unknown>;
}

/** Asks a person; never throws (a failure to ask is "unavailable"). */
export type Approver = (question: ApprovalQuestion) => Promise<ApprovalAnswer>;

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

/** The largest arguments text shown in a question; longer ones are cut with a marker. */
const MAX_SHOWN_ARGUMENTS = 4000;

/** The question as a person reads it. */
export function approvalMessage(question: ApprovalQuestion): string {
  let shown = JSON.stringify(question.arguments, null, 2);
  if (shown.length > MAX_SHOWN_ARGUMENTS) {
    shown = `${shown.slice(0, MAX_SHOWN_ARGUMENTS)}\n… (${shown.length} characters in all)`;
  }
  return `A script wants to call ${question.server}.${question.tool} with these arguments:\n${shown}\nAllow this call?`;
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
    message: approvalMessage(question),
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
