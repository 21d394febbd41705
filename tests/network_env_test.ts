import assert from "node:assert/strict";
import { NETWORK_VARIABLES, serverEnvironment } from "../src/upstream/network_env.ts";

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
