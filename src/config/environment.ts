/**
 * Every environment variable the server reads, in one table: what it is for. Code reads them
 * only through `readEnv`, whose argument must be a name in this table (reading another does not
 * compile), and the restricted relaunch grants `--allow-env` for exactly these (`HOST_ENV`),
 * plus the names a config's `${VAR}` placeholders use.
 *
 * Not here: `OTEL_DENO` and the `OTEL_*` exporter settings. Deno's runtime reads those itself at
 * start, whatever `--allow-env` says, and its exporter needs no `--allow-net` (tracing.ts); our
 * code never reads them. Sandboxes are started with a cleared environment, so they never export.
 */

export const ENVIRONMENT = {
  // Our own settings.
  CODEMODE_CONFIG: "the mcp_servers.json to use when --config is not given",
  CODEMODE_CACHE_DIR: "where the Pyodide snapshot and downloaded wheels are kept",
  CODEMODE_HTTP_TOKEN: "the bearer token HTTP clients must send (required off loopback)",
  CODEMODE_NESTING: "how many code mode servers started this one (set for stdio servers)",
  CODEMODE_UNAVAILABLE_PROFILES:
    "set by the restricted relaunch for its child: the profiles it found unavailable, and why",
  // The agent's model (generate_and_execute, `agent`).
  OPENAI_API_KEY: "the OpenAI-compatible API's key",
  OPENAI_BASE_URL: "the OpenAI-compatible API's address",
  OPENAI_API_VERSION: "the Azure OpenAI API version",
  AZURE_OPENAI_API_KEY: "the Azure OpenAI key",
  AZURE_OPENAI_ENDPOINT: "the Azure OpenAI endpoint",
  AZURE_OPENAI_DEPLOYMENT: "the Azure OpenAI deployment",
  CODEMODE_MODEL: "the model name (default gpt-4.1-mini)",
  CODEMODE_MAX_TOKENS_PARAM: "which token-limit parameter the API takes",
  CODEMODE_MODEL_TIMEOUT_S: "how long one model request may take",
  // Locating caches and data: Deno's, ours, and the platform defaults.
  DENO_INSTALL_ROOT: "where deno task install puts the mcp-code-mode command (in its bin/)",
  DENO_DIR: "Deno's cache (passed on to stdio servers started with deno)",
  HOME: "the default place of caches and saved skills",
  XDG_CACHE_HOME: "the default cache folder",
  XDG_DATA_HOME: "the default folder of saved skills",
  LOCALAPPDATA: "Deno's cache folder on Windows",
  XDG_CONFIG_HOME: "where import and install look for Claude Desktop's and VS Code's configs",
  APPDATA: "where import and install look for Claude Desktop's and VS Code's configs on Windows",
  USERPROFILE: "the home folder on Windows",
  // Handed to stdio servers by the MCP SDK's default environment.
  PATH: "finding a stdio server's command",
  USER: "passed on to stdio servers",
  LOGNAME: "passed on to stdio servers",
  SHELL: "passed on to stdio servers",
  TERM: "passed on to stdio servers",
  // Proxies and private CAs, passed on to stdio servers (src/upstream/network_env.ts); Deno's
  // own fetch (HTTP upstream servers) reads the proxy variables and DENO_CERT itself.
  HTTPS_PROXY: "the proxy for https URLs",
  https_proxy: "the proxy for https URLs",
  HTTP_PROXY: "the proxy for http URLs",
  http_proxy: "the proxy for http URLs",
  NO_PROXY: "hosts reached without the proxy",
  no_proxy: "hosts reached without the proxy",
  ALL_PROXY: "the proxy for any URL",
  all_proxy: "the proxy for any URL",
  SSL_CERT_FILE: "a CA bundle (OpenSSL-based tools)",
  SSL_CERT_DIR: "a folder of CA certificates (OpenSSL-based tools)",
  DENO_CERT: "a CA certificate file for Deno",
  DENO_TLS_CA_STORE: "which CA stores Deno trusts",
  REQUESTS_CA_BUNDLE: "a CA bundle (Python's requests, for uvx and pip servers)",
  NODE_EXTRA_CA_CERTS: "extra CA certificates for Node and Deno",
  NODE_USE_ENV_PROXY: "makes Node use the proxy variables",
  // Read at import time by Deno's Node-compatibility code.
  OSTYPE: "Node compatibility (command lookup)",
  PATHEXT: "Node compatibility (command lookup on Windows)",
  "NODE_*": "Node compatibility (child processes, debugging)",
  NO_COLOR: "plain output",
} as const;

/** A variable the server may read. */
export type EnvName = Exclude<keyof typeof ENVIRONMENT, `${string}*`>;

/** Reads the server's environment (injected where a test needs another). */
export type Env = (name: EnvName) => string | undefined;

export const readEnv: Env = (name) => Deno.env.get(name);

/** The `--allow-env` list of the restricted relaunch (a trailing `*` is a prefix, Deno's syntax). */
export const HOST_ENV: readonly string[] = Object.keys(ENVIRONMENT);

/**
 * Reads a variable a config's `${VAR}` placeholder names: any name, chosen by whoever writes the
 * config (the relaunch grants these names too, read from the config's text).
 */
export const readConfigVariable = (name: string): string | undefined => Deno.env.get(name);
