/**
 * Behind a proxy: the standard proxy and CA variables reach stdio upstream servers (which
 * download their packages on first start), an entry's `env` can turn them off for one server,
 * and HTTP upstream servers are reached through the proxy. The proxy is a real HTTP proxy on
 * loopback, run by the test; the hosts behind it (`*.codemode.invalid`) exist only there.
 */
import assert from "node:assert/strict";
import { ROOT, startHttpFixture, startServer } from "./_helpers.ts";

const PROXIED = `${ROOT}tests/fixtures/proxied_server.ts`;
const PACKAGE_URL = "http://packages.codemode.invalid/greeting.txt";

/**
 * A forward proxy for plain HTTP: requests for packages.codemode.invalid are answered here,
 * requests for mcp.codemode.invalid go to `mcpPort` on loopback; `seen` lists the hosts asked for.
 */
function startProxy(mcpPort: number) {
  const seen = new Set<string>();
  const auth = new Set<string>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const url = new URL(request.url);
    seen.add(url.host);
    auth.add(request.headers.get("proxy-authorization") ?? "none");
    if (url.host === "packages.codemode.invalid") {
      return new Response("hello through the proxy");
    }
    if (url.host === "mcp.codemode.invalid") {
      return fetch(`http://127.0.0.1:${mcpPort}${url.pathname}${url.search}`, {
        method: request.method,
        headers: request.headers,
        body: request.body,
      });
    }
    return new Response("no such host behind this proxy", { status: 502 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    seen,
    auth,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

Deno.test("upstream servers work through a loopback proxy when the proxy variables are set", async () => {
  await using mcp = await startHttpFixture("http");
  await using proxy = startProxy(mcp.port);
  const dir = await Deno.makeTempDir();
  const path = `${dir}/mcp_servers.json`;
  const stdio = (env: Record<string, string>) => ({
    command: "deno",
    args: ["run", "--no-prompt", "-A", PROXIED, PACKAGE_URL],
    env,
  });
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      servers: {
        proxied: stdio({}),
        // This entry turns the proxy off for its server, which then cannot download.
        direct: stdio({ HTTP_PROXY: "" }),
        remote: { url: "http://mcp.codemode.invalid/mcp" },
      },
      settings: { pool_size: 1 },
    }),
  );
  const caFile = `${dir}/company-ca.pem`;
  // A proxy that wants a password: servers get it, scripts never see it.
  const password = `pw-${crypto.randomUUID()}`;
  const proxyUrl = proxy.url.replace("http://", `http://codemode:${password}@`);
  await using server = await startServer({
    args: ["--config", path],
    env: { HTTP_PROXY: proxyUrl, NO_PROXY: "localhost", SSL_CERT_FILE: caFile },
  });
  const r = await server.execute({
    code: "from mcp_tools import proxied, remote\nimport json\n" +
      "[proxied.greeting(), remote.greet(name='b'), proxied.network_env()]",
  });
  assert.equal(r.success, true, r.text + server.stderr());
  const [greeting, greet, env] = r.result as [string, string, Record<string, string | null>];
  assert.equal(greeting, "hello through the proxy");
  assert.equal(greet, "hello b");
  assert.deepEqual(
    { NO_PROXY: env.NO_PROXY, SSL_CERT_FILE: env.SSL_CERT_FILE },
    { NO_PROXY: "localhost", SSL_CERT_FILE: caFile },
  );
  // The server had the proxy URL (it downloaded through it); the script got it scrubbed.
  assert.ok(env.HTTP_PROXY !== null && env.HTTP_PROXY !== proxyUrl, env.HTTP_PROXY ?? "null");
  assert.ok(!r.text.includes(password) && !JSON.stringify(r).includes(password));
  assert.ok(!server.stderr().includes(password));
  assert.deepEqual([...proxy.seen].sort(), ["mcp.codemode.invalid", "packages.codemode.invalid"]);
  assert.deepEqual([...proxy.auth], [`Basic ${btoa(`codemode:${password}`)}`]);

  const tools = await server.client.listTools();
  const description = (tools.tools as { name: string; description?: string }[])
    .find((t) => t.name === "execute_code")!.description!;
  assert.match(description, /direct: unavailable: .*cannot download/);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("without the proxy variables, a server that must download cannot start", async () => {
  await using mcp = await startHttpFixture("http");
  await using proxy = startProxy(mcp.port);
  const dir = await Deno.makeTempDir();
  const path = `${dir}/mcp_servers.json`;
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      servers: {
        proxied: { command: "deno", args: ["run", "--no-prompt", "-A", PROXIED, PACKAGE_URL] },
      },
      settings: { pool_size: 1 },
    }),
  );
  await using server = await startServer({ args: ["--config", path] });
  const r = await server.execute({ code: "from mcp_tools import proxied\nproxied.greeting()" });
  assert.equal(r.success, false);
  const tools = await server.client.listTools();
  const description = (tools.tools as { name: string; description?: string }[])
    .find((t) => t.name === "execute_code")!.description!;
  assert.match(description, /proxied: unavailable: .*cannot download http:\/\/packages/);
  assert.deepEqual([...proxy.seen], []);
  await Deno.remove(dir, { recursive: true });
});
