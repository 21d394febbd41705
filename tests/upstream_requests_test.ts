/**
 * A stdio upstream's own requests cannot flood the host: the SDK answers its pings itself, and
 * the stdio transport kept every answer the child did not read queued in the host (a million
 * pings took the host to 2.7 GB, held; attacker round 24).
 */
import assert from "node:assert/strict";
import type { JSONRPCMessage, Transport } from "@modelcontextprotocol/client";
import { ROOT, startServer, writeConfig } from "./_helpers.ts";
import { TokenBucket } from "../src/_util/token_bucket.ts";
import { answersOnlyWhileRead, requestsAtABoundedRate } from "../src/upstream/upstream_requests.ts";

/** A transport that records what it is asked to send, and delivers what the test says. */
function fakeTransport() {
  const sent: JSONRPCMessage[] = [];
  const transport = {
    start: () => Promise.resolve(),
    close: () => Promise.resolve(),
    send: (message: JSONRPCMessage) => {
      sent.push(message);
      return Promise.resolve();
    },
  } as Transport;
  return { transport, sent };
}

const ping = (id: number): JSONRPCMessage => ({ jsonrpc: "2.0", id, method: "ping" });
const answer = (id: number): JSONRPCMessage => ({ jsonrpc: "2.0", id, result: {} });

Deno.test("answers are not written while the child's stdin is full; requests are", async () => {
  const { transport, sent } = fakeTransport();
  let full = false;
  answersOnlyWhileRead(transport, () => full);
  await transport.send(answer(1));
  full = true;
  await transport.send(answer(2));
  await transport.send(ping(3)); // the host's own request: bounded by its call
  full = false;
  await transport.send(answer(4));
  assert.deepEqual(sent.map((m) => (m as { id: number }).id), [1, 3, 4]);
});

Deno.test("a server's requests beyond the rate never reach the client; the rest do", () => {
  const { transport } = fakeTransport();
  let now = 0;
  requestsAtABoundedRate(transport, new TokenBucket(3, 10, () => now));
  const seen: JSONRPCMessage[] = [];
  transport.onmessage = (message) => seen.push(message); // as the client connects
  for (let id = 0; id < 10; id++) transport.onmessage!(ping(id));
  transport.onmessage!(answer(99)); // answers to the host's requests always pass
  transport.onmessage!({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
  now = 100; // a tenth of a second: one more
  transport.onmessage!(ping(10));
  transport.onmessage!(ping(11));
  assert.deepEqual(
    seen.map((m) => "id" in m ? m.id : (m as { method: string }).method),
    [0, 1, 2, 99, "notifications/tools/list_changed", 10],
  );
});

Deno.test("a stdio server that floods pings and does not read gets few answers", async () => {
  const dir = await Deno.makeTempDir();
  const config = await writeConfig(dir, {
    servers: {
      flood: {
        command: "deno",
        args: ["run", "--no-prompt", `${ROOT}tests/fixtures/ping_flood_server.ts`],
        protocol: "2025-11-25",
      },
    },
    settings: { pool_size: 1, permissions_dir: `${ROOT}permissions` },
  });
  await using server = await startServer({ args: ["--config", config] });
  const sent = 100_000;
  const r = await server.execute({
    code: `from mcp_tools import flood\nflood.flood(n=${sent})`,
    timeout_s: 120,
  });
  assert.equal(r.success, true, r.text);
  const answered = Number(r.result); // the tool's text: how many answers it found waiting
  // The burst and the rate's share of the few seconds it took, not all of them.
  assert.ok(answered > 0 && answered < 2_000, `${answered} of ${sent} pings answered`);
  assert.equal((await server.execute({ code: "6 * 7" })).result, 42, "the host goes on");
  await Deno.remove(dir, { recursive: true });
});
