/**
 * How a 2026-07-28 HTTP request is answered: a `tools/call` as an event stream from the start
 * (so a client that goes away is noticed at once, see http_server.ts), unless its client cannot
 * take one; everything else as the SDK chooses. Pure: headers in, decision out.
 */

/** Whether this request is a `tools/call` to answer as an event stream from the start. */
export function callAsEventStream(headers: Headers): boolean {
  return headers.get("mcp-method")?.trim() === "tools/call" &&
    acceptsEventStream(headers.get("accept"));
}

/**
 * Whether an `Accept` header takes `text/event-stream` (RFC 9110: media types compared without
 * case, `*` ranges, a `q=0` range refused). No header at all takes anything.
 */
export function acceptsEventStream(accept: string | null): boolean {
  if (accept === null || accept.trim() === "") return true;
  return accept.split(",").some((range) => {
    const [type = "", ...params] = range.split(";").map((part) => part.trim().toLowerCase());
    const q = params.find((p) => /^q\s*=/.test(p));
    const quality = q === undefined ? 1 : Number(q.slice(q.indexOf("=") + 1).trim());
    return quality > 0 && ["text/event-stream", "text/*", "*/*"].includes(type);
  });
}
