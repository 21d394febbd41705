/**
 * Wrapping the request handlers an `McpServer` installs, as it installs them (the startup gate,
 * well-formed answers, tasks). Each wrapper is called before anything is registered, and each
 * handler set afterwards passes through every wrapper in place.
 */
import type { McpServer } from "@modelcontextprotocol/server";

/** A request handler, whatever the method's parameters. */
export type RequestHandler = (...args: unknown[]) => unknown;

/**
 * Makes every handler `server` installs from now on go through `wrap` (which returns it as it
 * is to leave it alone). Returns the way to install a handler that `wrap` does not see.
 */
export function wrapRequestHandlers(
  server: McpServer,
  wrap: (method: string, handler: RequestHandler) => RequestHandler,
): (...args: unknown[]) => void {
  const low = server.server;
  const setRequestHandler = low.setRequestHandler.bind(low) as (...args: unknown[]) => void;
  low.setRequestHandler = ((method: string, ...rest: unknown[]) => {
    rest[rest.length - 1] = wrap(method, rest.at(-1) as RequestHandler);
    setRequestHandler(method, ...rest);
  }) as typeof low.setRequestHandler;
  return setRequestHandler;
}
