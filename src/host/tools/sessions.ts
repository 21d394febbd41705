/**
 * `list_sessions` and `close_session`: the persistent sessions of this connection.
 */
import type { McpServer } from "@modelcontextprotocol/server";
import { z } from "zod";
import { toolArguments } from "./tool_arguments.ts";
import type { SessionManager } from "../../sandbox/sessions.ts";
import { counted } from "../../_util/counted.ts";

export function registerSessionTools(server: McpServer, sessions: SessionManager, owner: string) {
  server.registerTool("list_sessions", {
    title: "List persistent sessions",
    description: "The persistent sessions this connection opened with execute_code's session_id.",
    inputSchema: toolArguments({}),
    annotations: { readOnlyHint: true },
  }, () => {
    const list = sessions.list(owner);
    const text = list.length === 0
      ? "No open sessions."
      : list.map((s) =>
        `${s.session_id} (profile ${s.profile}, ${
          counted(s.executions, "run")
        }, last used ${s.last_used}${s.busy ? ", running" : ""})`
      ).join("\n");
    return {
      content: [{ type: "text" as const, text }],
      structuredContent: { sessions: list },
      isError: false,
    };
  });

  const closeInput = { session_id: z.string().max(64) };
  server.registerTool("close_session", {
    title: "Close a persistent session",
    description: "Closes a session and discards its state (its sandbox process is killed).",
    inputSchema: toolArguments(closeInput),
  }, async (args) => {
    const closed = await sessions.close(owner, args.session_id, "close_session closed its session");
    return {
      content: [{
        type: "text" as const,
        text: closed
          ? `Closed session ${args.session_id}.`
          : `Cannot close session: no session "${args.session_id}"`,
      }],
      isError: !closed,
    };
  });
}
