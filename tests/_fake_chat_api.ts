/**
 * A real HTTP server on loopback that speaks the chat-completions API and answers with scripted
 * replies, so the agent is driven through the real `openai` client.
 */

/** A reply's text, an error status, or `"stall"`: headers, then a body that never ends. */
export type ScriptedReply = string | { status: number; body: unknown } | "stall";

export interface FakeChatApi extends AsyncDisposable {
  baseURL: string;
  /** Request bodies received, in order. */
  requests: Record<string, unknown>[];
  /** Stalled replies whose client went away. */
  abandoned: number;
}

export function startFakeChatApi(replies: ScriptedReply[]): FakeChatApi {
  const requests: Record<string, unknown>[] = [];
  const queue = [...replies];
  const api = { abandoned: 0 };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const url = new URL(request.url);
    if (request.method !== "POST" || !url.pathname.endsWith("/chat/completions")) {
      return new Response("not found", { status: 404 });
    }
    const body = await request.json();
    requests.push(body);
    const next = queue.shift();
    if (next === undefined) {
      return Response.json({ error: { message: "no scripted reply left", type: "test" } }, {
        status: 500,
      });
    }
    if (next === "stall") {
      const body = new ReadableStream({
        start: (controller) => controller.enqueue(new TextEncoder().encode("{")),
        cancel: () => void api.abandoned++,
      });
      return new Response(body, { headers: { "content-type": "application/json" } });
    }
    if (typeof next !== "string") return Response.json(next.body, { status: next.status });
    return Response.json({
      id: `chatcmpl-${requests.length}`,
      object: "chat.completion",
      created: 0,
      model: body.model,
      choices: [{ index: 0, message: { role: "assistant", content: next }, finish_reason: "stop" }],
      usage: {
        prompt_tokens: 100 + requests.length,
        completion_tokens: 20,
        total_tokens: 120 + requests.length,
      },
    });
  });
  return {
    baseURL: `http://127.0.0.1:${server.addr.port}/v1`,
    requests,
    get abandoned() {
      return api.abandoned;
    },
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}
