/** The server's version, reported by `--version` and in the MCP handshake. */
export const VERSION = "0.1.0";

/** The exact Pyodide version the sandbox runs; must match the `pyodide` pin in deno.json. */
export const PYODIDE_VERSION = "314.0.7";
