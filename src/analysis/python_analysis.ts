/**
 * Static analysis of a Python script with Python's own `ast`, run inside a sandbox (never on the
 * host): the `mcp_tools` calls it makes, whether it prints or returns something, and its
 * top-level functions. Used to check generated code and to save skills.
 */
import { ANALYSIS_PY } from "./analysis_py.ts";

export interface CallSite {
  module: string;
  function: string;
  positional: number;
  keywords: string[];
  /** *args or **kwargs used: argument names cannot be checked. */
  star: boolean;
  line: number;
}

export interface FunctionInfo {
  /** `(a, b=1)`: the parameter list as written. */
  signature: string;
  doc: string | null;
  is_async: boolean;
  params: ParamInfo[];
  /** The return annotation as written. */
  returns: string | null;
  /** Parameters passed as they are to a tool: [parameter, module, function, keyword]. */
  passes: [string, string, string, string][];
  /** What each `return` gives: a tool's result, a type its form shows, or unknown (null). */
  results: (["tool", string, string] | ["type", string] | null)[];
}

export interface ParamInfo {
  name: string;
  kind: "posonly" | "positional" | "vararg" | "kwonly" | "kwarg";
  annotation: string | null;
  default: string | null;
  default_type: string | null;
}

export type Analysis =
  | { syntax_error: string }
  | { calls: CallSite[]; outputs: boolean; functions: Record<string, FunctionInfo> };

/** A script that analyses `code` and evaluates to an `Analysis` (see analysis.py). */
export function analysisScript(code: string): string {
  return `${ANALYSIS_PY}\nanalyse(${JSON.stringify(code)})\n`;
}
