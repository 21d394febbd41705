/**
 * A sandbox that may reach hosts trusts the certificates the host trusts: behind a TLS-inspecting
 * gateway, the CA named by DENO_CERT or NODE_EXTRA_CA_CERTS. The runtime reads the file; the
 * script can read neither it nor the variable. A fetch that fails says why.
 *
 * tests/fixtures/tls holds a test CA and a certificate it signed for 127.0.0.1 and localhost
 * (100 years; made with openssl, test use only).
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { startServer, writeConfig } from "./_helpers.ts";

const TLS = fileURLToPath(new URL("./fixtures/tls", import.meta.url));

Deno.test("a sandbox's fetch trusts the host's CA, and a refused certificate says why", async (t) => {
  await using https = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: await Deno.readTextFile(`${TLS}/server.pem`),
    key: await Deno.readTextFile(`${TLS}/server.key`),
    onListen() {},
  }, () => new Response("trusted"));
  const root = Deno.realPathSync(await Deno.makeTempDir());
  await Deno.mkdir(`${root}/permissions`);
  await Deno.writeTextFile(`${root}/permissions/default.json`, "{}");
  await Deno.writeTextFile(
    `${root}/permissions/network.json`,
    JSON.stringify({ net: [`127.0.0.1:${https.addr.port}`] }),
  );
  const config = await writeConfig(root, {
    settings: { pool_size: 1, permissions_dir: `${root}/permissions` },
  });
  const url = `https://127.0.0.1:${https.addr.port}/`;
  const ca = `${TLS}/ca.pem`;

  await t.step(
    "with DENO_CERT set where the server runs, the sandbox's fetch goes through",
    async () => {
      await using server = await startServer({
        args: ["--config", config],
        env: { DENO_CERT: ca },
      });
      const r = await server.execute({
        profile: "network",
        code: [
          "import js, os",
          "from pyodide.http import pyfetch",
          `a = await (await pyfetch('${url}')).text()`,
          `b = await (await js.fetch('${url}')).text()`,
          "seen = []",
          "for attempt in (lambda: js.Deno.env.get('DENO_CERT'), lambda: js.Deno.readTextFileSync(" +
          JSON.stringify(ca) + ")):",
          "    try:",
          "        seen.append(str(attempt()))",
          "    except Exception as e:",
          "        seen.append('refused' if 'NotCapable' in str(e) else str(e))",
          "[a, b, seen, os.environ.get('DENO_CERT')]",
        ].join("\n"),
      });
      assert.equal(r.success, true, r.text);
      assert.deepEqual(r.result, ["trusted", "trusted", ["refused", "refused"], null]);
    },
  );

  await t.step("without it, the fetch fails and names the certificate as the reason", async () => {
    await using server = await startServer({ args: ["--config", config] });
    const r = await server.execute({
      profile: "network",
      code: [
        "from pyodide.http import pyfetch",
        "try:",
        `    await pyfetch('${url}')`,
        "except Exception as e:",
        "    said = f'{type(e).__name__}: {e}'",
        "said",
      ].join("\n"),
    });
    assert.equal(r.success, true, r.text);
    assert.match(String(r.result), /^AbortError: .*fetch failed: .*certificate.*UnknownIssuer/);
  });

  await Deno.remove(root, { recursive: true });
});
