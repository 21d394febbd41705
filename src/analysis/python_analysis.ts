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
}

export type Analysis =
  | { syntax_error: string }
  | { calls: CallSite[]; outputs: boolean; functions: Record<string, FunctionInfo> };

/** A script that analyses `code` and evaluates to an `Analysis` (see analysis.py). */
export function analysisScript(code: string): string {
  return `${ANALYSIS_PY}\nanalyse(${JSON.stringify(code)})\n`;
}
