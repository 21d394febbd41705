/**
 * The tool index in the `execute_code` description: what exists, within a token budget however
 * large the catalog. It shrinks in steps until it fits: one line per tool with its first
 * sentence; then the tools' names per server; then per server its description, its number of
 * tools and as many names as its share of the budget holds, with a pointer to `search_tools`.
 * Pure: token counting is passed in.
 */
import { firstSentence } from "./python_stubs.ts";
import { counted } from "../_util/counted.ts";

/** The most tokens the index may take in the `execute_code` description. */
export const INDEX_TOKEN_BUDGET = 2500;

export interface IndexServer {
  moduleName: string;
  description: string;
  error?: string;
  tools: { pyName: string; description: string }[];
}

export type IndexLevel = "full" | "names" | "summary";

export interface ToolIndex {
  text: string;
  tokens: number;
  level: IndexLevel;
}

export function toolIndex(
  servers: readonly IndexServer[],
  count: (text: string) => number,
  budget = INDEX_TOKEN_BUDGET,
): ToolIndex {
  for (const level of ["full", "names"] as const) {
    const text = render(servers, level);
    const tokens = count(text);
    if (tokens <= budget) return { text, tokens, level };
  }
  const text = summary(servers, count, budget);
  return { text, tokens: count(text), level: "summary" };
}

function header(server: IndexServer, max: number): string {
  const about = server.description ? ` (${firstSentence(server.description, max)})` : "";
  return `${server.moduleName}${about}`;
}

function render(servers: readonly IndexServer[], level: "full" | "names"): string {
  const lines: string[] = [];
  for (const server of servers) {
    if (server.error) {
      lines.push(`${server.moduleName}: unavailable: ${server.error}`);
    } else if (level === "full") {
      lines.push(`${header(server, 100)}:`);
      for (const tool of server.tools) {
        lines.push(`  ${tool.pyName}: ${firstSentence(tool.description, 70)}`);
      }
    } else {
      lines.push(`${header(server, 100)}: ${server.tools.map((t) => t.pyName).join(", ")}`);
    }
  }
  return lines.join("\n");
}

const SUMMARY_NOTE =
  "(Too many tools to list here: each server shows some of its tools. search_tools finds the " +
  "rest by what they do; get_tool_docs gives a whole module.)";

/** Per server: description, number of tools, and the names its share of the budget holds. */
function summary(
  servers: readonly IndexServer[],
  count: (text: string) => number,
  budget: number,
): string {
  const lines = [SUMMARY_NOTE];
  // Room is kept for the line that says how many servers did not fit.
  let used = count(SUMMARY_NOTE) + 20;
  const share = Math.max(0, Math.floor((budget - used) / Math.max(1, servers.length)));
  for (const [i, server] of servers.entries()) {
    let line = server.error
      ? `${server.moduleName}: unavailable: ${server.error.slice(0, 100)}`
      : `${header(server, 60)}: ${counted(server.tools.length, "tool")}`;
    if (!server.error && server.tools.length > 0) {
      const names: string[] = [];
      for (const tool of server.tools) {
        const next = `${line}: ${[...names, tool.pyName].join(", ")}, …`;
        if (count(next) > share && names.length > 0) break;
        names.push(tool.pyName);
      }
      const more = names.length < server.tools.length ? ", …" : "";
      line += `: ${names.join(", ")}${more}`;
    }
    const cost = count(line) + 1;
    if (used + cost > budget) {
      lines.push(`… and ${servers.length - i} more servers: use search_tools.`);
      break;
    }
    lines.push(line);
    used += cost;
  }
  return lines.join("\n");
}
