import assert from "node:assert/strict";
import { NETWORK_VARIABLES, proxySecrets, serverEnvironment } from "../src/upstream/network_env.ts";

const host: Record<string, string> = {
  HTTPS_PROXY: "http://proxy.corp:3128",
  no_proxy: "localhost,.corp",
  NODE_EXTRA_CA_CERTS: "/etc/ssl/corp.pem",
  DENO_CERT: "",
  OPENAI_API_KEY: "sk-not-for-children",
};
const read = (name: string) => host[name];

Deno.test("serverEnvironment() passes the proxy and CA variables on, and the entry's env wins", async (t) => {
  await t.step("the host's network variables reach the child, nothing else of its", () => {
    assert.deepEqual(serverEnvironment({ PATH: "/bin" }, read, {}), {
      PATH: "/bin",
      HTTPS_PROXY: "http://proxy.corp:3128",
      no_proxy: "localhost,.corp",
      NODE_EXTRA_CA_CERTS: "/etc/ssl/corp.pem",
    });
  });
  await t.step("an entry's value replaces the host's", () => {
    const env = serverEnvironment({}, read, { HTTPS_PROXY: "http://other:8080" });
    assert.equal(env.HTTPS_PROXY, "http://other:8080");
  });
  await t.step('an entry\'s "" leaves a network variable out', () => {
    const env = serverEnvironment({}, read, { HTTPS_PROXY: "", NODE_EXTRA_CA_CERTS: "" });
    assert.deepEqual(env, { no_proxy: "localhost,.corp" });
  });
  await t.step('an entry\'s "" for another variable stays ""', () => {
    assert.equal(serverEnvironment({}, read, { MODE: "" }).MODE, "");
  });
  await t.step("the list holds both spellings of each proxy variable", () => {
    for (const name of ["HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "ALL_PROXY"]) {
      assert.ok((NETWORK_VARIABLES as readonly string[]).includes(name));
      assert.ok((NETWORK_VARIABLES as readonly string[]).includes(name.toLowerCase()));
    }
  });
});

Deno.test("proxySecrets() finds the credentials in every form a proxy variable takes", async (t) => {
  const secrets = (vars: Record<string, string>) =>
    proxySecrets((name) => vars[name]).map((s) => s.value);
  await t.step("a URL with a password", () => {
    assert.deepEqual(secrets({ HTTPS_PROXY: "http://alice:LongPassw0rd@proxy:3128" }), [
      "http://alice:LongPassw0rd@proxy:3128",
      "LongPassw0rd",
    ]);
  });
  await t.step("no scheme (Deno and curl read it as http)", () => {
    assert.deepEqual(secrets({ HTTPS_PROXY: "carol:NoSchemePw_99@proxy:9" }), [
      "carol:NoSchemePw_99@proxy:9",
      "NoSchemePw_99",
    ]);
  });
  await t.step("a user name alone (a token)", () => {
    assert.deepEqual(secrets({ http_proxy: "http://tok_UserOnly123@proxy:9" }), [
      "http://tok_UserOnly123@proxy:9",
      "tok_UserOnly123",
    ]);
  });
  await t.step("%-escapes decoded, and kept as written when they do not decode", () => {
    assert.deepEqual(
      secrets({ ALL_PROXY: "socks5h://u:p%40ss-word-1@proxy:1080" })[1],
      "p@ss-word-1",
    );
    assert.deepEqual(secrets({ HTTP_PROXY: "http://u:100%pure_pw@proxy:9" })[1], "100%pure_pw");
  });
  await t.step("no credentials, no secret", () => {
    assert.deepEqual(secrets({ HTTPS_PROXY: "http://proxy:3128", NO_PROXY: "a@b" }), []);
  });
});
