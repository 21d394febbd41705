/**
 * Creates the MCP client transport for one configured upstream server.
 */
import { readEnv } from "../config/environment.ts";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { StreamableHTTPClientTransport, type Transport } from "@modelcontextprotocol/client";
import type { ServerConfig } from "../config/config.ts";
import { denoCommand } from "./deno_command.ts";

export type TransportFactory = (server: ServerConfig) => {
  transport: Transport;
  /** Lines the server writes to stderr (stdio servers only). */
  onStderr?: (listener: (text: string) => void) => void;
};

/**
 * The real transports. `deno` as a command means the Deno running this server. A stdio child
 * gets the SDK's minimal default environment, `DENO_DIR` when set, and its configured `env`.
 */
export const defaultTransportFactory: TransportFactory = (server) => {
  if (server.kind === "http") {
    return {
      transport: new StreamableHTTPClientTransport(new URL(server.url), {
        requestInit: { headers: server.headers },
      }),
    };
  }
  const env: Record<string, string> = { ...getDefaultEnvironment() };
  const denoDir = readEnv("DENO_DIR");
  if (denoDir) env.DENO_DIR = denoDir;
  Object.assign(env, server.env);
  const transport = new StdioClientTransport({
    command: denoCommand(server.command),
    args: server.args,
    env,
    cwd: server.cwd,
    stderr: "pipe",
  });
  return {
    transport,
    onStderr: (listener) => {
      transport.stderr?.on(
        "data",
        (chunk: Uint8Array) => listener(new TextDecoder().decode(chunk)),
      );
    },
  };
};
