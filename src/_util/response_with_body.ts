/**
 * `response` with another body (a stream read through a wrapper), keeping what a constructed
 * `Response` cannot be given but a reader of redirects looks at: `url`, `redirected`, `type`.
 */
export function responseWithBody(
  response: Response,
  body: ReadableStream<Uint8Array> | null,
): Response {
  const wrapped = new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  for (const key of ["url", "redirected", "type"] as const) {
    Object.defineProperty(wrapped, key, { value: response[key] });
  }
  return wrapped;
}
