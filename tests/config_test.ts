import { createRedactor } from "../src/policy/redaction.ts";
import assert from "node:assert/strict";
import { loadConfig, parseConfigFile, SECRET_NAME } from "../src/config/config.ts";
import { replacedParts } from "../src/config/literal_secrets.ts";
import { expandPlaceholders, placeholderNames } from "../src/config/placeholders.ts";
import { hostGrants } from "../src/relaunch/server_permissions.ts";
import { ROOT } from "./_helpers.ts";

const ctx = {
  path: "/etc/code-mode/mcp_servers.json",
  env: (name: string) =>
    ({ TOKEN: "s3cret-value", HOME: "/home/u" } as Record<string, string>)[name],
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
      env: { KEY: "s3cret-value" },
      cwd: "/etc/code-mode",
      description: "",
    },
    {
      kind: "http",
      name: "api",
      protocol: "2026-07-28",
      transport: "streamable-http",
      url: "https://api.example/mcp",
      headers: { Authorization: "Bearer s3cret-value" },
      description: "",
    },
  ]);
  assert.equal(settings.pool_size, 3);
});

Deno.test("parseConfigFile() refuses a file whose shape or settings are wrong, naming the field", async (t) => {
  const cases: [string, unknown, RegExp][] = [
    ["not an object", [], /must hold a JSON object/],
    ["servers not an object", { mcpServers: [] }, /"mcpServers" must be an object/],
    [
      "one name in both lists",
      { servers: { a: { command: "x" } }, mcpServers: { a: { command: "y" } } },
      /server "a" is in both "servers" and "mcpServers"/,
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

Deno.test("parseConfigFile() leaves out an entry with a mistake, naming the field; the rest start", async (t) => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    [
      "an unknown transport type",
      { mcpServers: { a: { type: "websocket", url: "ws://h" } } },
      /^field "type": must be one of "stdio", "http"/,
    ],
    [
      "a type that contradicts the entry",
      { mcpServers: { a: { type: "http", command: "x" } } },
      /^field "type": "http" needs "url"/,
    ],
    [
      "a stdio type with a url",
      { mcpServers: { a: { transportType: "stdio", url: "http://h" } } },
      /^field "transportType": "stdio" needs "command"/,
    ],
    [
      "neither command nor url",
      { servers: { a: {} } },
      /^field "command": give exactly one/,
    ],
    [
      "both command and url",
      { servers: { a: { command: "x", url: "http://h" } } },
      /give exactly one/,
    ],
    [
      "an unknown protocol revision",
      { servers: { a: { command: "x", protocol: "2024-01-01" } } },
      /^field "protocol": must be one of "auto", "2025-11-25", "2026-07-28"/,
    ],
    [
      "args not strings",
      { servers: { a: { command: "x", args: [1] } } },
      /^field "args": must be an array of strings/,
    ],
    [
      "a bad URL",
      { servers: { a: { url: "ftp://x" } } },
      /^field "url": "ftp:\/\/x" is not an http\(s\) URL/,
    ],
    [
      "a bad name",
      { servers: { "9lives": { command: "x" } } },
      /^the name must start with a letter/,
    ],
  ];
  for (const [name, raw, message] of cases) {
    await t.step(name, () => {
      const lists = raw as Record<string, Record<string, unknown>>;
      const list = lists.servers ? "servers" : "mcpServers";
      const good = { [list]: { ...lists[list], good: { command: "deno" } } };
      const parsed = parseConfigFile(good, ctx);
      assert.deepEqual(parsed.servers.map((s) => s.name), ["good"]);
      assert.equal(parsed.unavailable.length, 1);
      assert.match(parsed.unavailable[0]!.reason, message);
      const bad = parsed.unavailable[0]!.name;
      assert.ok(
        parsed.notes.some((n) => n.level === "warn" && n.message.startsWith(`server "${bad}"`)),
      );
    });
  }
});

Deno.test("expandPlaceholders() reads the placeholder forms of the common MCP clients", async (t) => {
  const sources = { configDir: "/etc/code-mode", env: ctx.env };
  const cases: [string, string, string][] = [
    ["text without placeholders", "plain $HOME {x} ${} ${1X}", "plain $HOME {x} ${} ${1X}"],
    ["ours and Claude Code's ${NAME}", "${HOME}/a", "/home/u/a"],
    ["VS Code's ${env:NAME}", "${env:HOME}/a", "/home/u/a"],
    ["Claude Code's default, unused", "${HOME:-/tmp}", "/home/u"],
    ["Claude Code's default, used", "${NOPE:-/tmp/x}", "/tmp/x"],
    ["an empty default", "[${NOPE:-}]", "[]"],
    ["the config's folder", "${CONFIG_DIR}/x", "/etc/code-mode/x"],
    ["VS Code's workspace folder", "${workspaceFolder}/x", "/etc/code-mode/x"],
  ];
  for (const [name, value, expected] of cases) {
    await t.step(name, () => assert.equal(expandPlaceholders(value, sources, "here"), expected));
  }
  await t.step("a missing variable", () => {
    assert.throws(
      () => expandPlaceholders("${env:NOPE}", sources, "here"),
      /^TypeError: here: environment variable NOPE is not set \(where code mode starts/,
    );
  });
  await t.step("a VS Code input", () => {
    assert.throws(
      () => expandPlaceholders("${input:api-key}", sources, "here"),
      /\$\{input:api-key\} asks the user for a value/,
    );
  });
  await t.step("names for the relaunch's env grant", () => {
    assert.deepEqual(
      placeholderNames('"${A}${env:B}${C:-x}${CONFIG_DIR}${workspaceFolder}${input:D}${A}"'),
      ["A", "B", "C"],
    );
  });
});

Deno.test("parseConfigFile() takes a client's config as it is: mcpServers, type, client fields", () => {
  // A Claude Desktop / Claude Code / Cursor file, with fields only those clients act on.
  const parsed = parseConfigFile({
    globalShortcut: "Ctrl+Space",
    mcpServers: {
      files: {
        type: "stdio",
        command: "npx",
        args: ["-y", "server-filesystem", "${workspaceFolder}"],
        env: { KEY: "${TOKEN:-none}" },
        alwaysAllow: ["read_file"],
        autoApprove: [],
        timeout: 60,
      },
      remote: { type: "http", url: "https://api.example/mcp", headers: { "X-Key": "${TOKEN}" } },
      legacy: { type: "sse", url: "https://old.example/sse" },
      asks: { command: "x", env: { KEY: "${input:key}" } },
      typo: { command: "y", args: ["1"], argz: ["1"], envFile: "${workspaceFolder}/.env" },
      off: { command: "z", enabled: false },
      narrowed: { command: "w", excludeTools: ["delete_everything"] },
    },
    servers: { ours: { command: "z" } },
  }, ctx);
  assert.deepEqual(parsed.servers.map((s) => [s.name, s.kind]), [
    ["ours", "stdio"],
    ["files", "stdio"],
    ["remote", "http"],
    ["legacy", "http"],
    ["typo", "stdio"],
    ["narrowed", "stdio"],
  ]);
  const files = parsed.servers[1]!;
  assert.ok(files.kind === "stdio");
  assert.deepEqual(files.args, ["-y", "server-filesystem", "/etc/code-mode"]);
  assert.deepEqual(files.env, { KEY: "s3cret-value" });
  const transports = parsed.servers.flatMap((s) => s.kind === "http" ? [s.transport] : []);
  assert.deepEqual(transports, ["streamable-http", "sse"]);
  assert.deepEqual(parsed.secrets, ["s3cret-value"]);
  assert.deepEqual(parsed.notes, [
    { level: "debug", message: 'ignored top-level field "globalShortcut" (used by MCP clients)' },
    {
      level: "debug",
      message: 'server "files": ignored field "alwaysAllow" (used by some MCP clients)',
    },
    {
      level: "debug",
      message: 'server "files": ignored field "autoApprove" (used by some MCP clients)',
    },
    {
      level: "debug",
      message: 'server "files": ignored field "timeout" (used by some MCP clients)',
    },
    {
      level: "warn",
      message: 'server "asks": not started: it uses a VS Code ${input:...} value, which only ' +
        "VS Code can ask for (put the value in an environment variable and write ${NAME} instead)",
    },
    { level: "warn", message: 'server "typo": ignored unknown field "argz"; did you mean "args"?' },
    {
      level: "warn",
      message:
        'server "typo": ignored field "envFile": put the variables the server needs in "env"',
    },
    {
      level: "warn",
      message:
        'server "narrowed": ignored field "excludeTools": every tool of this server may be ' +
        "called unless a permission profile's allowed_tools says otherwise (see permissions/)",
    },
  ]);
});

Deno.test("parseConfigFile() warns about an unknown top-level field, and refuses a misspelt list or settings", () => {
  const { notes, servers } = parseConfigFile({ theme: "dark", servers: {} }, ctx);
  assert.deepEqual(servers, []);
  assert.deepEqual(notes, [{ level: "warn", message: 'ignored unknown top-level field "theme"' }]);
  // Ignored, these would start no servers, or drop the settings the file means to have.
  assert.throws(
    () => parseConfigFile({ serverz: { a: { command: "x" } } }, ctx),
    /unknown top-level field "serverz"; did you mean "servers"\?/,
  );
  assert.throws(
    () => parseConfigFile({ servers: {}, setings: { allowed_profiles: ["default"] } }, ctx),
    /unknown top-level field "setings"; did you mean "settings"\?/,
  );
});

Deno.test("loadConfig() reports a missing or malformed file clearly", async () => {
  await assert.rejects(
    loadConfig({ path: "/nonexistent/mcp_servers.json" }),
    /Cannot read config \/nonexistent\/mcp_servers\.json/,
  );
  await assert.rejects(
    loadConfig({ path: "conf/mcp_servers.json" }),
    (e: Error) => e.message.includes(`(a relative path starts from ${Deno.cwd()}): `),
  );
  const file = await Deno.makeTempFile({ suffix: ".json" });
  await Deno.writeTextFile(file, "{ not json");
  await assert.rejects(loadConfig({ path: file }), /Cannot parse config .*\.json/);
  await Deno.writeTextFile(file, JSON.stringify({ settings: { default_profile: "ghost" } }));
  await assert.rejects(loadConfig({ path: file }), /default_profile "ghost" is not in/);
  // Callers may use only "workspace": every call naming no profile would be refused at run time
  // (operator 51), so the file is refused at start.
  const permissions = new URL("../permissions", import.meta.url).pathname;
  await Deno.writeTextFile(
    file,
    JSON.stringify({
      settings: { permissions_dir: permissions, allowed_profiles: ["workspace"] },
    }),
  );
  await assert.rejects(
    loadConfig({ path: file }),
    /settings\.default_profile "default" is not in settings\.allowed_profiles, so every call that names no profile would be refused/,
  );
  await Deno.writeTextFile(
    file,
    JSON.stringify({
      settings: {
        permissions_dir: permissions,
        allowed_profiles: ["workspace"],
        default_profile: "workspace",
      },
    }),
  );
  assert.equal((await loadConfig({ path: file })).settings.default_profile, "workspace");
  // An empty list offered every profile, as if it were left out (attacker 56).
  await Deno.writeTextFile(
    file,
    JSON.stringify({ settings: { permissions_dir: permissions, allowed_profiles: [] } }),
  );
  await assert.rejects(
    loadConfig({ path: file }),
    /settings\.allowed_profiles.*: is empty; leave it out/,
  );
  await Deno.remove(file);
});

Deno.test("loadConfig() reads a VS Code mcp.json as it is: comments and trailing commas", async () => {
  const file = await Deno.makeTempFile({ suffix: ".json" });
  await Deno.writeTextFile(
    file,
    `{
      // the team's servers
      "servers": {
        "docs": { "type": "stdio", "command": "node", "args": ["docs.js",], }, /* one */
      },
      "settings": { "permissions_dir": "${ROOT}tests/fixtures/permissions" },
    }`,
  );
  const config = await loadConfig({ path: file, env: () => undefined });
  assert.deepEqual(config.servers.map((s) => s.kind === "stdio" && s.args), [["docs.js"]]);
  await Deno.remove(file);
});

Deno.test("the repository's mcp_servers.json and profiles load", async () => {
  const config = await loadConfig({ env: () => undefined });
  assert.deepEqual(config.servers.map((s) => s.name), ["filesystem", "memory"]);
  assert.ok(config.profiles.has("default"));
  assert.deepEqual(config.profiles.get("default")!.folders, []);
  assert.deepEqual(config.profiles.get("default")!.net, []);
});

Deno.test("parseConfigFile() leaves out a server whose variable is not set, and starts the rest", () => {
  const parsed = parseConfigFile({
    servers: {
      a: { command: "x", env: { K: "${NOPE}" }, description: "the a server" },
      b: { command: "y", env: { K: "${TOKEN}" } },
    },
  }, ctx);
  assert.deepEqual(parsed.servers.map((s) => s.name), ["b"]);
  assert.deepEqual(parsed.unavailable, [{
    name: "a",
    description: "the a server",
    reason: 'field "env.K": environment variable NOPE is not set (where code mode starts: for a ' +
      'server an MCP client starts, in the "env" of its entry)',
  }]);
  assert.ok(
    parsed.notes.some((n) => n.level === "warn" && /server "a" not started/.test(n.message)),
  );
  assert.deepEqual(parsed.secrets, ["s3cret-value"]);
});

Deno.test("loadConfig() leaves out a server with a secret too short to scrub, naming the variable or header", async (t) => {
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
      /^\$\{API_TOKEN\}: the secret is 4 characters; secrets shorter than 8 characters cannot be scrubbed safely.*one that is not can be written into the config as it is\)$/,
    ],
    [
      "a variable in args",
      { files: { command: "deno", args: ["--token=${API_TOKEN}"] } },
      /^\$\{API_TOKEN\}: the secret is 4 characters;/,
    ],
    [
      "a header value",
      { api: { url, headers: { "X-Key": "abc" } } },
      /^header "X-Key": the secret is 3 characters;/,
    ],
    [
      "a literal under a name that says it is a secret (as client configs write tokens)",
      { files: { command: "deno", env: { GITHUB_PERSONAL_ACCESS_TOKEN: "ghp_1" } } },
      /^env "GITHUB_PERSONAL_ACCESS_TOKEN": the secret is 5 characters;/,
    ],
    [
      "a variable inside a longer header value",
      { api: { url, headers: { Authorization: "Bearer ${API_TOKEN}" } } },
      /^\$\{API_TOKEN\}: the secret is 4 characters;/,
    ],
  ];
  try {
    for (const [name, servers, message] of cases) {
      await t.step(name, async () => {
        await write({ ...servers, other: { command: "deno", env: { K: "${LONG_TOKEN}" } } });
        const config = await loadConfig({ path, env });
        assert.deepEqual(config.servers.map((s) => s.name), ["other"]);
        assert.equal(config.unavailable.length, 1);
        assert.equal(config.unavailable[0]!.name, Object.keys(servers)[0]);
        assert.match(config.unavailable[0]!.reason, message);
        // The short value is used nowhere, so it is not a secret to scrub (it would mangle text).
        assert.deepEqual(config.secrets, ["long-enough-token"]);
      });
    }
    await t.step("long enough secrets load", async () => {
      await write({
        files: {
          command: "deno",
          env: {
            KEY: "${LONG_TOKEN}",
            DIR: "${CONFIG_DIR}",
            API_KEY: "literal-api-key-1",
            MODE: "${NOPE:-fallback-not-secret}",
          },
        },
        api: { url, headers: { Authorization: "Bearer ${LONG_TOKEN}" } },
      });
      const config = await loadConfig({ path, env });
      assert.deepEqual(config.secrets.sort(), [
        "Bearer long-enough-token",
        "literal-api-key-1",
        "long-enough-token",
      ]);
    });
    await t.step(
      "a proxy password: scrubbed when long enough, refused when too short",
      async () => {
        await write({});
        const proxyEnv = (proxy: string) => (name: string) =>
          ({ HTTPS_PROXY: proxy } as Record<string, string>)[name];
        const config = await loadConfig({ path, env: proxyEnv("u:LongPassw0rd@proxy:3128") });
        assert.deepEqual(config.secrets, ["u:LongPassw0rd@proxy:3128", "LongPassw0rd"]);
        await assert.rejects(
          loadConfig({ path, env: proxyEnv("http://bob:Sh0rt@proxy:3128") }),
          /: environment variable HTTPS_PROXY, the proxy's password: the secret is 5 characters;/,
        );
      },
    );
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
          "Cannot load config /etc/code-mode/mcp_servers.json: settings.max_sessions_per_connection: must be a whole number from 1 to 64, not " +
          JSON.stringify(bad),
      });
    });
  }
});

Deno.test("a server left out for its URL is named by the file's text, not a secret a variable expanded to", async () => {
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
  const config = await loadConfig({ path, env });
  assert.deepEqual(config.servers, []);
  const reason = config.unavailable[0]!.reason;
  assert.match(reason, /"\$\{REMOTE_URL\}" is not an http\(s\) URL/);
  assert.doesNotMatch(reason + JSON.stringify(config.notes), /TopSecret/);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("attack: a header value is scrubbed as fetch quotes it too, trimmed of spaces at its ends", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/mcp_servers.json`;
  const value = "Bearer SeCrEtHeaderValue0123\u0000 ";
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      servers: { remote: { url: "http://127.0.0.1:9/mcp", headers: { Authorization: value } } },
      settings: { permissions_dir: `${ROOT}tests/fixtures/permissions` },
    }),
  );
  const config = await loadConfig({ path, env: () => undefined });
  // Fetch refuses the NUL and quotes the value without the trailing space.
  const quoted = await fetch("http://127.0.0.1:9/", { headers: { Authorization: value } })
    .then(() => "", (error) => String(error));
  assert.match(quoted, /SeCrEtHeaderValue0123/);
  const scrubbed = createRedactor(config.secrets).text(quoted);
  assert.doesNotMatch(scrubbed, /SeCrEt/, scrubbed);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("attack: a package index's or Pyodide mirror's credentials are secrets; a folder's @ is not", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/mcp_servers.json`;
  const write = (settings: Record<string, string>) =>
    Deno.writeTextFile(
      path,
      JSON.stringify({
        servers: {},
        settings: { permissions_dir: `${ROOT}tests/fixtures/permissions`, ...settings },
      }),
    );
  await write({
    package_index: "https://__token__:pypi-IndexTok3nSecret@pypi.example/simple/",
    pyodide_packages: "https://deploy:S3cretMirrorPw@mirror.example/pyodide/",
  });
  const config = await loadConfig({ path, env: () => undefined });
  assert.ok(config.secrets.includes("pypi-IndexTok3nSecret"), String(config.secrets));
  assert.ok(config.secrets.includes("S3cretMirrorPw"), String(config.secrets));
  const scrubbed = createRedactor(config.secrets).text(
    "index pypi-IndexTok3nSecret mirror S3cretMirrorPw",
  );
  assert.doesNotMatch(scrubbed, /Secret|S3cret/);
  await Deno.mkdir(`${dir}/me@host/pkgs`, { recursive: true });
  await write({ pyodide_packages: `${dir}/me@host/pkgs` });
  assert.deepEqual((await loadConfig({ path, env: () => undefined })).secrets, []);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("attack: a URL written out that cannot be read is named without its query or user info", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/mcp_servers.json`;
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      servers: {
        spaced: { url: "https://exa mple.com/mcp?api_key=Sk_live_TopSecret12345" },
        ftp: { url: "ftp://alice:hunter2TopSecret@example.com/mcp" },
        slash: { url: "https://admin:Zm9v/TopSecret#x?y@mcp.example.com/mcp" },
        bare: { url: "mcp.example.com/sk-live-TopSecret1234567890/mcp" },
      },
      settings: { permissions_dir: `${ROOT}tests/fixtures/permissions` },
    }),
  );
  const config = await loadConfig({ path, env: () => undefined });
  const reasons = config.unavailable.map((u) => u.reason);
  assert.equal(reasons.length, 4);
  assert.match(reasons[0]!, /"https:\/\/exa mple\.com…" is not an http\(s\) URL/);
  assert.match(reasons[1]!, /"ftp:\/\/…@example\.com…" is not an http\(s\) URL/);
  assert.match(reasons[2]!, /"https:\/\/…@mcp\.example\.com…" is not an http\(s\) URL/);
  assert.match(reasons[3]!, /"mcp\.example\.com…" is not an http\(s\) URL/);
  assert.doesNotMatch(reasons.join() + JSON.stringify(config.notes), /TopSecret/);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("SECRET_NAME tells secret-holding variable names from others", () => {
  const secret = [
    "GITHUB_TOKEN",
    "api_key",
    "OPENAI_API_KEY",
    "DB_PASS",
    "DATABASE_PASSWORD",
    "NOTION_AUTH",
    "AUTH_HEADER",
    "AWS_SECRET_ACCESS_KEY",
    "GH_PAT",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "MYSQL_PWD",
    "SSH_PASSPHRASE",
  ];
  const other = [
    "PATH",
    "HOME",
    "GIT_AUTHOR_NAME",
    "KEYBOARD",
    "COMPASS_DIR",
    "LOG_LEVEL",
    "PWD",
    "OLDPWD",
  ];
  assert.deepEqual(secret.filter((n) => !SECRET_NAME.test(n)), []);
  assert.deepEqual(other.filter((n) => SECRET_NAME.test(n)), []);
});

Deno.test("parseConfigFile() names every wrong setting at once, with what it was given", () => {
  assert.throws(
    () =>
      parseConfigFile(
        { settings: { pool_sise: 1, tool_timeout_s: "60", pool_size: 2 } },
        { path: "/c/mcp_servers.json", env: () => undefined },
      ),
    {
      name: "TypeError",
      message:
        'Cannot load config /c/mcp_servers.json: settings.pool_sise: unknown setting; did you mean "pool_size"?; settings.tool_timeout_s: must be a positive number, not "60"',
    },
  );
});

Deno.test("attack: a mistyped index or mirror URL is quoted without its token", () => {
  for (const key of ["package_index", "pyodide_packages"]) {
    assert.throws(
      () =>
        parseConfigFile(
          { settings: { [key]: "htps://deploy:glpat-Zx9secretTOKENvalue@pypi.corp.example/s/" } },
          { path: "/c/mcp_servers.json", env: () => undefined },
        ),
      (error: Error) => {
        assert.match(error.message, /, not "htps:\/\/…@pypi\.corp\.example…"$/);
        assert.ok(!error.message.includes("glpat"), error.message);
        return true;
      },
    );
  }
});

Deno.test("parseConfigFile() suggests the field a typo meant", () => {
  const parsed = parseConfigFile({
    server: {},
    servers: {
      a: { command: "x", arg: ["y"] },
      b: { command: "x", args: ["y"], descripton: "z" },
    },
  }, ctx);
  const warnings = parsed.notes.map((n) => n.message);
  assert.ok(warnings.includes('ignored unknown top-level field "server"; did you mean "servers"?'));
  // Started without its args, "a" would be a bare `x`: it is left out, with the reason.
  assert.deepEqual(parsed.servers.map((s) => s.name), ["b"]);
  assert.match(
    parsed.unavailable[0]!.reason,
    /^unknown field "arg"; did you mean "args"\? \(the server is not started without/,
  );
  assert.ok(
    warnings.includes(
      'server "b": ignored unknown field "descripton"; did you mean "description"?',
    ),
    JSON.stringify(warnings),
  );
  assert.match(
    parseConfigFile({ servers: { a: { comand: "x" } } }, ctx).unavailable[0]!.reason,
    /give exactly one of "command" \(stdio\) or "url" \(HTTP\) \(found "comand"; did you mean "command"\?\)/,
  );
  assert.throws(
    () => parseConfigFile({ settings: { pool_sise: 2 } }, ctx),
    /settings\.pool_sise: unknown setting; did you mean "pool_size"\?/,
  );
});

Deno.test("parseConfigFile() leaves out a server whose URL a variable's value makes invalid", () => {
  const parsed = parseConfigFile({
    servers: {
      tenant: { url: "https://${TENANT}.example.com/mcp" },
    },
  }, { ...ctx, env: (name) => name === "TENANT" ? "no spaces allowed here" : undefined });
  assert.deepEqual(parsed.unavailable.map((u) => u.name), ["tenant"]);
  assert.match(parsed.unavailable[0]!.reason, /is not an http\(s\) URL with this environment's/);
});

Deno.test("parseConfigFile() scrubs tokens written into args and a URL's query", () => {
  const parsed = parseConfigFile({
    servers: {
      supabase: {
        command: "npx",
        args: ["server", "--access-token=sbp_0123456789abcdef", "--api-key", "lin_api_0123456789"],
      },
      short: { command: "x", args: ["--auth-type", "basic"] },
      remote: { url: "https://mcp.example/mcp?api_key=k_0123456789abcdef&region=eu" },
    },
  }, ctx);
  assert.deepEqual(parsed.servers.map((s) => s.name), ["supabase", "short", "remote"]);
  assert.deepEqual(parsed.secrets.sort(), [
    "k_0123456789abcdef",
    "lin_api_0123456789",
    "sbp_0123456789abcdef",
  ]);
});

Deno.test("attack: secrets written into a config in the forms import hides are scrubbed too", () => {
  // Each of these reached the client and the logs in a failed server's stderr (attacker 49).
  const parsed = parseConfigFile({
    servers: {
      docker: {
        command: "docker",
        args: [
          "run",
          "-e",
          "GITHUB_TOKEN=ghp_Literal1234567890abcdef",
          "--password:PwColon98765",
          "--keyfile:C:/keys/a.pem",
          "image",
        ],
        env: {
          DATABASE_URL: "postgres://app:DbPassw0rd42@db.internal/app",
          MYSQL_PWD: "MysqlPwd7777",
          ODBC: "Driver=x;Pwd=OdbcSecret1234;Server=y",
          NODE_OPTIONS: "--api-key=NodeOpt12345",
          PWD: "/home/u/project",
        },
      },
      shell: {
        command: "sh",
        args: ["-c", "API_KEY=Shell12345678 node s.js --token 'Quoted12345'"],
      },
      zapier: { url: "https://mcp.example/api/mcp/sk-ak-Q7wErTyUiOpAsDfGh1234567890/sse" },
      remote: { url: "https://bob:UrlPassw0rd99@mcp.example/mcp#access_token=Fragment12345" },
    },
  }, ctx);
  assert.deepEqual(parsed.unavailable, []);
  assert.deepEqual(parsed.secrets.sort(), [
    "DbPassw0rd42",
    "Fragment12345",
    "MysqlPwd7777",
    "NodeOpt12345",
    "OdbcSecret1234",
    "PwColon98765",
    "Quoted12345",
    "Shell12345678",
    "UrlPassw0rd99",
    "ghp_Literal1234567890abcdef",
    "sk-ak-Q7wErTyUiOpAsDfGh1234567890",
  ]);
});

Deno.test("attack: the close variants real pasted configs use are scrubbed too", () => {
  // Attacker 50: each leaked to the tool index in a failed server's stderr, or was not found.
  const parsed = parseConfigFile({
    servers: {
      remote: {
        command: "npx",
        args: [
          "mcp-remote",
          "https://mcp.example.com/sse?access_token=TokQuery123456789",
          "--header",
          "Authorization: Bearer HdrBearer123456789",
          "--header",
          "X-Api-Key: HdrKey123456789",
        ],
        env: { JDBC_URL: "jdbc:postgresql://db:5432/app?user=app&password=JdbcPw123456" },
      },
      tavily: { url: "https://mcp.tavily.com/mcp/?tavilyApiKey=tvly-dev-AbCdEf123456" },
      shell: {
        command: "bash",
        args: ["-c", 'API_KEY="Quoted 12345678" TOKEN="QuotedDQ12345678" X=1&&node s.js'],
        env: { CONN: "Server=x; Password = OdbcSp123456; Db=y" },
      },
      docker: { command: "docker", args: ["run", "--env=GITHUB_TOKEN=ghp_EnvEq1234567890", "i"] },
      java: { command: "java", args: ["-Djavax.net.ssl.keyStorePassword=JavaKs123456789"] },
      smithery: { command: "npx", args: ["cli", "--config", '{"braveApiKey":"Brave123456789"}'] },
    },
  }, ctx);
  assert.deepEqual(parsed.unavailable, []);
  assert.deepEqual(parsed.secrets.sort(), [
    "Brave123456789",
    "HdrBearer123456789",
    "HdrKey123456789",
    "JavaKs123456789",
    "JdbcPw123456",
    "OdbcSp123456",
    "Quoted 12345678",
    "QuotedDQ12345678",
    "TokQuery123456789",
    "ghp_EnvEq1234567890",
    "tvly-dev-AbCdEf123456",
  ]);
});

Deno.test("attack: tokens in pasted configs of proxies and gateways are scrubbed", () => {
  // Attacker 51: supergateway, mcp-proxy and Smithery forms, and a percent-encoded password.
  const parsed = parseConfigFile({
    servers: {
      gateway: { command: "npx", args: ["supergateway", "--oauth2Bearer", "afk_Q8wN3zLp7RtY2v"] },
      proxy: {
        command: "uvx",
        args: [
          "mcp-proxy",
          "--headers",
          "x-api-key",
          "sk-LfQ8wN3zLp7RtY",
          "-H",
          "Authorization",
          "Bearer lin_Q8wN3zLp7R",
        ],
      },
      smithery: { command: "npx", args: ['--config={"apiKey":"cfgQ8wN3zLp7RtY"}'] },
      wrapped: { command: "sh", args: ["-c", "mcp-proxy -H X-Api-Key tok_InOneArg123 http://x"] },
      headers: { command: "node", env: { HEADERS: '{"Authorization":"lin_api_Q8wN3zLp"}' } },
      db: { command: "node", args: ["postgresql://app:Pa%24%24w0rd%40Prod@db.internal/app"] },
      aws: {
        command: "docker",
        args: ["-e", "AWS_SECRET_ACCESS_KEY=/wJalrXUtnFEMIK7MDENGbPxRfiCYEX"],
      },
      // Attacker 52: base64 that starts with `/` and holds another is no path.
      base64: {
        command: "node",
        args: ["--aws-secret-access-key", "/k3Jd8QwZp1Lm9Xr/Tb7Vn2Hc5Gf0Ys"],
      },
    },
  }, ctx);
  assert.deepEqual(parsed.unavailable, []);
  assert.deepEqual(parsed.secrets.sort(), [
    "/k3Jd8QwZp1Lm9Xr/Tb7Vn2Hc5Gf0Ys",
    "/wJalrXUtnFEMIK7MDENGbPxRfiCYEX",
    "Pa$$w0rd@Prod",
    "Pa%24%24w0rd%40Prod",
    "afk_Q8wN3zLp7RtY2v",
    "cfgQ8wN3zLp7RtY",
    "lin_Q8wN3zLp7R",
    "lin_api_Q8wN3zLp",
    "sk-LfQ8wN3zLp7RtY",
    "tok_InOneArg123",
  ]);
});

Deno.test("settings under secret-sounding names are neither scrubbed nor a reason to refuse", () => {
  // Attacker 50: these stopped their servers, or took common words out of every result.
  const parsed = parseConfigFile({
    servers: {
      hf: {
        command: "node",
        args: [
          "--sort-key",
          "created_at",
          "--auth-mode=readonly",
          "--token-env",
          "GITHUB_TOKEN",
          "--partition-key",
          "customerId",
          "--max-tokens",
          "100000000",
          "--auth-mode",
          "ReadOnly",
        ],
        env: {
          TOKENIZERS_PARALLELISM: "false",
          MAX_TOKENS: "4096",
          DISABLE_AUTH: "True",
          AUTH_TYPE: "Bearer",
          AUTH_PROVIDER: "oauth2",
          TOKEN_URL: "https://oauth2.example.com/token",
        },
      },
      keyed: {
        command: "node",
        args: ["--private-key", "/home/me/.ssh/id_ed25519", "-e", "SSH_KEY=id_ed25519.pub"],
      },
      short: { command: "node", env: { API_KEY: "abc123" } },
    },
  }, ctx);
  assert.deepEqual(parsed.servers.map((s) => s.name), ["hf", "keyed"]);
  assert.deepEqual(parsed.secrets, []);
  // A short value that is no plain word or number is still refused.
  assert.match(parsed.unavailable[0]!.reason, /^env "API_KEY": the secret is 6 characters/);
});

Deno.test("replacedParts() finds what a substitution hid, or takes the whole text", () => {
  const hide = (words: string[]) => (text: string, marker: string) =>
    words.reduce((t, w) => t.replaceAll(w, marker), text);
  assert.deepEqual(replacedParts("a=one b=two", hide(["one", "two"])), ["one", "two"]);
  assert.deepEqual(replacedParts("x-one-x", hide(["one"])), ["one"]);
  assert.deepEqual(replacedParts("nothing here", hide(["one"])), []);
  // Side by side, the two cannot be told apart: the whole text is scrubbed instead.
  assert.deepEqual(replacedParts("onetwo!", hide(["one", "two"])), ["onetwo!"]);
});

Deno.test("attack: a profile left out of allowed_profiles gets the host nothing, and builds nothing", async () => {
  // An operator allows "default" only; the folder also holds a read-write profile and one
  // whose preload cannot be had. Neither may reach the host's grants, its start or a listing.
  const dir = await Deno.makeTempDir();
  const permissions = `${dir}/permissions`;
  await Deno.mkdir(permissions);
  await Deno.mkdir(`${dir}/shared`);
  await Deno.writeTextFile(`${permissions}/default.json`, "{}");
  await Deno.writeTextFile(
    `${permissions}/team.json`,
    JSON.stringify({ folders: [{ host: `${dir}/shared`, mount: "/shared", mode: "rw" }] }),
  );
  await Deno.writeTextFile(`${permissions}/data.json`, JSON.stringify({ preload: ["missing"] }));
  const file = `${dir}/mcp_servers.json`;
  const write = (allowed?: string[]) =>
    Deno.writeTextFile(
      file,
      JSON.stringify({ settings: { permissions_dir: permissions, allowed_profiles: allowed } }),
    );
  await write(["default"]);
  const config = await loadConfig({ path: file });
  assert.deepEqual([...config.profiles.keys()], ["default"]);
  assert.deepEqual([...config.unavailableProfiles.keys()], []);
  const grants = hostGrants({
    config,
    configText: await Deno.readTextFile(file),
    denoPath: Deno.execPath(),
    pyodideDir: "/pyodide",
    cacheDir: "/cache",
    serverCommands: [],
    auditFolderExists: true,
    model: null,
    http: null,
    extraRead: [],
  });
  const shared = await Deno.realPath(`${dir}/shared`);
  for (const list of [grants.read, grants.write]) {
    assert.ok(!list.some((path) => path.includes("shared")), `${list} reaches ${shared}`);
  }
  // Left out, every profile of the folder may be used.
  await write(undefined);
  const all = await loadConfig({ path: file });
  assert.deepEqual([...all.profiles.keys()].sort(), ["data", "default", "team"]);
  await Deno.remove(dir, { recursive: true });
});
