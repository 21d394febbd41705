/**
 * A client's config file used as it is: a Claude Desktop / Claude Code / Cursor file (the
 * `mcpServers` key, `"type"` entries, `${VAR}` placeholders and fields only those clients act
 * on), pasted as mcp_servers.json, starts every server it lists: stdio, Streamable HTTP and the
 * older HTTP+SSE transport, with their headers.
 */
import assert from "node:assert/strict";
import { remoteRefusal } from "../src/upstream/pool.ts";
import { ROOT, startHttpFixture, startServer } from "./_helpers.ts";

const DYNAMIC = `${ROOT}tests/fixtures/dynamic_server.ts`;

Deno.test("a Claude Desktop config pasted as mcp_servers.json starts the servers it lists", async () => {
  const token = crypto.randomUUID();
  await using http = await startHttpFixture("http", token);
  await using sse = await startHttpFixture("sse", token);
  const dir = await Deno.makeTempDir();
  const path = `${dir}/mcp_servers.json`;
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      globalShortcut: "",
      mcpServers: {
        local: {
          command: "deno",
          args: ["run", "--no-prompt", "-A", DYNAMIC, "stdio"],
          env: { GREETING_STYLE: "${GREETING_STYLE:-plain}" },
          alwaysAllow: ["greet"],
          autoApprove: [],
          timeout: 60,
        },
        remote: {
          type: "http",
          url: http.url,
          headers: { Authorization: "Bearer ${FIXTURE_TOKEN}" },
        },
        legacy: {
          type: "sse",
          url: sse.url,
          headers: { Authorization: "Bearer ${FIXTURE_TOKEN}" },
        },
      },
    }),
  );
  await using server = await startServer({
    args: ["--config", path, "--log-level", "debug"],
    env: { FIXTURE_TOKEN: token },
  });
  const r = await server.execute({
    code: "from mcp_tools import local, remote, legacy\n" +
      "[local.greet(name='a'), remote.greet(name='b'), legacy.greet(name='c')]",
  });
  assert.equal(r.success, true, r.text + server.stderr());
  assert.deepEqual(r.result, ["hello a", "hello b", "hello c"]);
  // The client-only fields were ignored, and said so at debug level.
  assert.match(server.stderr(), /server "local": ignored field "alwaysAllow"/);
  assert.match(server.stderr(), /ignored top-level field "globalShortcut"/);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("an HTTP upstream whose header is wrong is reported, not silently dropped", async () => {
  await using sse = await startHttpFixture("sse", crypto.randomUUID());
  const dir = await Deno.makeTempDir();
  const path = `${dir}/mcp_servers.json`;
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      mcpServers: {
        legacy: {
          type: "sse",
          url: sse.url,
          headers: { Authorization: `Bearer ${crypto.randomUUID()}` },
        },
      },
    }),
  );
  await using server = await startServer({ args: ["--config", path] });
  const tools = await server.client.listTools();
  const description = (tools.tools as { name: string; description?: string }[]).find((t) =>
    t.name === "execute_code"
  )!.description!;
  assert.match(description, /legacy: unavailable: .*401/);
  // A token is given, so the advice is to check it; OAuth is not offered.
  assert.match(description, /wants authorization: check the token in the entry's "headers"/);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("remoteRefusal() tells what to do when a remote server wants authorization", () => {
  const config = (headers: Record<string, string>) => ({
    kind: "http" as const,
    name: "notion",
    protocol: "auto" as const,
    transport: "streamable-http" as const,
    url: "https://mcp.example/mcp",
    headers,
    description: "",
  });
  const refused = "Version negotiation failed: the server requires authorization (HTTP 401)";
  assert.match(
    remoteRefusal(refused, config({})),
    /give the entry "headers": \{"Authorization": "Bearer \$\{YOUR_TOKEN\}"\}.*does not sign in with OAuth/,
  );
  assert.match(remoteRefusal(refused, config({ authorization: "x" })), /check the token/);
  assert.equal(
    remoteRefusal("fetch failed: connection refused", config({})),
    "fetch failed: connection refused",
  );
});
