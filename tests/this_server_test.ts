/**
 * A config that lists code mode itself (as a client's config does, beside its servers) must not
 * make each start of the server start another one without end: the entry is left out when it is
 * recognisable, and a chain the entry's text hides stops at depth.
 */
import assert from "node:assert/strict";
import { parseConfigFile } from "../src/config/config.ts";
import { childNesting, isThisServer, nestingRefusal } from "../src/config/this_server.ts";
import {
  countProcesses,
  delay,
  MAIN,
  ROOT,
  SERVE_FLAGS,
  startServer,
  writeConfig,
} from "./_helpers.ts";

Deno.test("an entry that starts code mode itself is left out, with a warning", () => {
  const parsed = parseConfigFile({
    mcpServers: {
      "code-mode": { command: "mcp-code-mode", args: ["serve"] },
      "by-path": { command: "deno", args: ["run", "-A", `${ROOT}/main.ts`, "serve"] },
      "by-task": { command: "deno", args: ["task", "--cwd", ROOT, "serve"] },
      other: { command: "deno", args: ["run", "-A", "/elsewhere/main.ts", "serve"] },
    },
  }, { path: "/tmp/mcp_servers.json", env: () => undefined });
  assert.deepEqual(parsed.servers.map((s) => s.name), ["other"]);
  const warned = parsed.notes.filter((n) =>
    n.level === "warn" && /code mode itself/.test(n.message)
  );
  assert.equal(warned.length, 3, JSON.stringify(parsed.notes));
  assert.equal(isThisServer({ command: "C:\\bin\\mcp-code-mode.cmd" }, ROOT), true);
});

Deno.test("nesting: one code mode under another is allowed, a chain is refused", () => {
  assert.equal(childNesting(undefined), "1");
  assert.equal(childNesting("1"), "2");
  assert.equal(childNesting("junk"), "1");
  assert.equal(nestingRefusal(undefined), null);
  assert.equal(nestingRefusal("1"), null);
  assert.match(nestingRefusal("2")!, /refusing to start/);
});

Deno.test("a config that starts this server through a wrapper does not multiply it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "codemode-self-" });
  const config = `${dir}/mcp_servers.json`;
  // `sh -c` hides what it starts from the entry's text: only the nesting stops the chain.
  const line = [Deno.execPath(), "run", ...SERVE_FLAGS, MAIN, "serve", "--config", config];
  // Only the default profile: the workspace profile's folder is inside the checkout, which an
  // upstream server that runs the checkout's files may not share with a writable sandbox.
  await Deno.mkdir(`${dir}/permissions`);
  await Deno.copyFile(`${ROOT}/permissions/default.json`, `${dir}/permissions/default.json`);
  await writeConfig(dir, {
    servers: { wrapped: { command: "sh", args: ["-c", `exec ${line.join(" ")}`] } },
    settings: { permissions_dir: `${dir}/permissions` },
  });
  await using server = await startServer({ args: ["--config", config] });
  let most = 0;
  for (let i = 0; i < 16; i++) {
    most = Math.max(most, countProcesses((argv) => argv.some((a) => a.includes(config))));
    await delay(500);
  }
  // This server and the one it wraps, each a launcher and its restricted host, plus at most
  // one refused third start in flight. Without the limit: dozens within these 8 seconds.
  assert.ok(most <= 6, `${most} processes name ${config}`);
  const result = await server.execute({ code: "print(1)" });
  assert.equal(result.stdout, "1\n", JSON.stringify(result));
  await Deno.remove(dir, { recursive: true });
});
