import assert from "node:assert/strict";
import { expandVars, loadConfig, parseConfigFile } from "../src/config/config.ts";
import { ROOT } from "./_helpers.ts";

const ctx = {
  path: "/etc/code-mode/mcp_servers.json",
  env: (name: string) => ({ TOKEN: "s3cret", HOME: "/home/u" } as Record<string, string>)[name],
};

Deno.test("parseConfigFile() resolves stdio and HTTP servers", () => {
  const { servers, settings } = parseConfigFile({
    servers: {
      files: { command: "deno", args: ["run", "${CONFIG_DIR}/x.ts"], env: { KEY: "${TOKEN}" } },
      api: {
        url: "https://api.example/mcp",
        headers: { Authorization: "Bearer ${TOKEN}" },
        protocol: "2026-07-28",
      },
      off: { command: "nope", disabled: true },
    },
    settings: { pool_size: 3 },
  }, ctx);
  assert.deepEqual(servers, [
    {
      kind: "stdio",
      name: "files",
      protocol: "auto",
      command: "deno",
      args: ["run", "/etc/code-mode/x.ts"],
      env: { KEY: "s3cret" },
      cwd: "/etc/code-mode",
      description: "",
    },
    {
      kind: "http",
      name: "api",
      protocol: "2026-07-28",
      url: "https://api.example/mcp",
      headers: { Authorization: "Bearer s3cret" },
      description: "",
    },
  ]);
  assert.equal(settings.pool_size, 3);
});

Deno.test("parseConfigFile() names the file, the server and the field in every error", async (t) => {
  const cases: [string, unknown, RegExp][] = [
    ["not an object", [], /must hold a JSON object/],
    ["unknown top-level field", { serverz: {} }, /unknown top-level field "serverz"/],
    [
      "neither command nor url",
      { servers: { a: {} } },
      /server "a", field "command": give exactly one/,
    ],
    [
      "both command and url",
      { servers: { a: { command: "x", url: "http://h" } } },
      /give exactly one/,
    ],
    [
      "an unknown protocol revision",
      { servers: { a: { command: "x", protocol: "2024-01-01" } } },
      /server "a", field "protocol": must be one of "auto", "2025-11-25", "2026-07-28"/,
    ],
    [
      "args not strings",
      { servers: { a: { command: "x", args: [1] } } },
      /server "a", field "args": must be an array of strings/,
    ],
    [
      "a missing variable",
      { servers: { a: { command: "x", env: { K: "${NOPE}" } } } },
      /server "a", field "env.K": environment variable NOPE is not set/,
    ],
    [
      "a bad URL",
      { servers: { a: { url: "ftp://x" } } },
      /server "a", field "url": "ftp:\/\/x" is not an http\(s\) URL/,
    ],
    [
      "a bad name",
      { servers: { "9lives": { command: "x" } } },
      /server "9lives": the name must start with a letter/,
    ],
    [
      "an unknown server field",
      { servers: { a: { command: "x", cmd: "y" } } },
      /server "a", field "cmd": unknown field/,
    ],
    [
      "a bad setting",
      { settings: { pool_size: -1 } },
      /settings\.pool_size: must be a whole number/,
    ],
    ["an unknown setting", { settings: { turbo: true } }, /settings\.turbo: unknown setting/],
  ];
  for (const [name, raw, message] of cases) {
    await t.step(name, () => {
      assert.throws(() => parseConfigFile(raw, ctx), (e: Error) => {
        assert.ok(e instanceof TypeError);
        assert.match(e.message, /^Cannot load config \/etc\/code-mode\/mcp_servers\.json: /);
        assert.match(e.message, message);
        return true;
      });
    });
  }
});

Deno.test("expandVars() leaves text without variables alone", () => {
  assert.equal(expandVars("plain $HOME {x}", () => undefined, "here"), "plain $HOME {x}");
  assert.equal(expandVars("${HOME}/a", ctx.env, "here"), "/home/u/a");
});

Deno.test("loadConfig() reports a missing or malformed file clearly", async () => {
  await assert.rejects(
    loadConfig({ path: "/nonexistent/mcp_servers.json" }),
    /Cannot read config \/nonexistent\/mcp_servers\.json/,
  );
  const file = await Deno.makeTempFile({ suffix: ".json" });
  await Deno.writeTextFile(file, "{ not json");
  await assert.rejects(loadConfig({ path: file }), /Cannot parse config .*\.json/);
  await Deno.writeTextFile(file, JSON.stringify({ settings: { default_profile: "ghost" } }));
  await assert.rejects(loadConfig({ path: file }), /default_profile "ghost" is not in/);
  await Deno.remove(file);
});

Deno.test("the repository's mcp_servers.json and profiles load", async () => {
  const config = await loadConfig({ env: () => undefined });
  assert.deepEqual(config.servers.map((s) => s.name), ["filesystem", "memory"]);
  assert.ok(config.profiles.has("default"));
  assert.deepEqual(config.profiles.get("default")!.folders, []);
  assert.deepEqual(config.profiles.get("default")!.net, []);
});

Deno.test("loadConfig() refuses a secret too short to scrub, naming the server and the variable or header", async (t) => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/mcp_servers.json`;
  const env = (name: string) =>
    ({ API_TOKEN: "t0k3", LONG_TOKEN: "long-enough-token" } as Record<string, string>)[name];
  const write = (servers: Record<string, unknown>) =>
    Deno.writeTextFile(
      path,
      JSON.stringify({
        servers,
        settings: { permissions_dir: `${ROOT}tests/fixtures/permissions` },
      }),
    );
  const url = "https://api.example/mcp";
  const cases: [string, Record<string, unknown>, RegExp][] = [
    [
      "a variable in env",
      { files: { command: "deno", env: { KEY: "${API_TOKEN}" } } },
      /: server "files", env "API_TOKEN": the secret is 4 characters; secrets shorter than 8 characters cannot be scrubbed safely/,
    ],
    [
      "a variable in args",
      { files: { command: "deno", args: ["--token=${API_TOKEN}"] } },
      /: server "files", env "API_TOKEN": the secret is 4 characters;/,
    ],
    [
      "a header value",
      { api: { url, headers: { "X-Key": "abc" } } },
      /: server "api", header "X-Key": the secret is 3 characters;/,
    ],
    [
      "a variable inside a longer header value",
      { api: { url, headers: { Authorization: "Bearer ${API_TOKEN}" } } },
      /: server "api", env "API_TOKEN": the secret is 4 characters;/,
    ],
  ];
  try {
    for (const [name, servers, message] of cases) {
      await t.step(name, async () => {
        await write(servers);
        await assert.rejects(loadConfig({ path, env }), (e: Error) => {
          assert.ok(e instanceof TypeError);
          assert.match(e.message, /^Cannot load config \/.*\/mcp_servers\.json: server /);
          assert.match(e.message, message);
          return true;
        });
      });
    }
    await t.step("long enough secrets load", async () => {
      await write({
        files: { command: "deno", env: { KEY: "${LONG_TOKEN}", DIR: "${CONFIG_DIR}" } },
        api: { url, headers: { Authorization: "Bearer ${LONG_TOKEN}" } },
      });
      const config = await loadConfig({ path, env });
      assert.deepEqual(config.secrets.sort(), ["Bearer long-enough-token", "long-enough-token"]);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("settings.max_sessions_per_connection defaults to half of max_sessions and is checked", async (t) => {
  const perConnection = (settings?: Record<string, unknown>) =>
    parseConfigFile({ settings }, ctx).settings.max_sessions_per_connection;
  await t.step("default: half of the default 4", () => assert.equal(perConnection(), 2));
  await t.step("default: half of max_sessions, rounded up", () => {
    assert.equal(perConnection({ max_sessions: 7 }), 4);
    assert.equal(perConnection({ max_sessions: 1 }), 1);
  });
  await t.step("given", () => {
    assert.equal(perConnection({ max_sessions: 8, max_sessions_per_connection: 8 }), 8);
  });
  for (const bad of [0, 65, 1.5, "2"]) {
    await t.step(`refused: ${JSON.stringify(bad)}`, () => {
      assert.throws(() => perConnection({ max_sessions_per_connection: bad }), {
        name: "TypeError",
        message:
          "Cannot load config /etc/code-mode/mcp_servers.json: settings.max_sessions_per_connection: must be a whole number from 1 to 64",
      });
    });
  }
});

Deno.test("a config error quotes the file's text, not a secret a variable expanded to", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/mcp_servers.json`;
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      servers: { remote: { url: "${REMOTE_URL}" } },
      settings: { permissions_dir: `${ROOT}tests/fixtures/permissions` },
    }),
  );
  const env = (name: string) =>
    name === "REMOTE_URL" ? "htps://mcp.example/mcp?api_key=Sk_live_TopSecret12345" : undefined;
  await assert.rejects(loadConfig({ path, env }), (error: Error) => {
    assert.match(error.message, /"\$\{REMOTE_URL\}" is not an http\(s\) URL/);
    assert.doesNotMatch(error.message, /TopSecret/);
    return true;
  });
  await Deno.remove(dir, { recursive: true });
});
