/**
 * The Python modules baked into the memory snapshot, in the order they are installed: the
 * exception classes generated from the outcome table, then the prelude (`_codemode`), which
 * imports them. The snapshot key covers their text.
 */
import { toolErrorsModulePy } from "../execution/outcomes.ts";
import { PRELUDE_PY } from "./prelude_py.ts";

export const SNAPSHOT_MODULES: readonly (readonly [name: string, source: string])[] = [
  ["_codemode_errors", toolErrorsModulePy()],
  ["_codemode", PRELUDE_PY],
];
