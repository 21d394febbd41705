import assert from "node:assert/strict";
import type { Config } from "../src/config/config.ts";
import { HOST_ENV } from "../src/config/environment.ts";
import { parseConfigFile } from "../src/config/config.ts";
import { DEFAULT_LIMITS, type Profile } from "../src/sandbox/profile.ts";
import {
  hostFlags,
  hostGrants,
  type HostNeeds,
  modelHost,
  runGrantFor,
} from "../src/relaunch/server_permissions.ts";
import { childPids, delay, isAlive, ROOT, startServer, writeConfig } from "./_helpers.ts";

const CONFIG_TEXT = JSON.stringify({
  servers: {
    files: {
      command: "deno",
      args: ["run", "${CONFIG_DIR}/files.ts"],
      env: { KEY: "${FILES_KEY}" },
    },
    tools: { command: "npx", args: ["tools-server"] },
    api: { url: "https://mcp.example:8443/mcp", headers: { Authorization: "Bearer ${API_TOKEN}" } },
  },
  settings: {
    audit_log: "audit.jsonl",
    permissions_dir: "profiles",
    skills_dir: "/srv/skills",
    package_index: "https://index.example/simple/",
  },
});

function needs(overrides: Partial<HostNeeds> = {}): HostNeeds {
  const parsed = parseConfigFile(JSON.parse(CONFIG_TEXT), {
    path: "/etc/cm/mcp_servers.json",
    env: (name) =>
      ({ FILES_KEY: "files-key-1", API_TOKEN: "api-token-1" } as Record<string, string>)[name],
  });
  const workspace: Profile = {
    name: "workspace",
    description: "",
    folders: [{ host: "/srv/work", mount: "/workspace", mode: "rw" }],
    net: [],
    allowed_tools: [],
    approve: [],
    limits: { ...DEFAULT_LIMITS },
  };
  const config: Config = {
    path: "/etc/cm/mcp_servers.json",
    servers: parsed.servers,
    unavailable: parsed.unavailable,
    settings: parsed.settings,
    profiles: new Map([["workspace", workspace]]),
    unavailableProfiles: new Map(),
    secrets: parsed.secrets,
    notes: parsed.notes,
  };
  return {
    config,
    configText: CONFIG_TEXT,
    denoPath: "/opt/deno/bin/deno",
    pyodideDir: "/cache/deno/npm/pyodide",
    cacheDir: "/cache/cm",
    serverCommands: ["/opt/deno/bin/deno", "npx"],
    auditFolderExists: true,
    model: null,
    http: null,
    extraRead: [],
    ...overrides,
  };
}

Deno.test("hostGrants() grants the host exactly what its config names", () => {
  const grants = hostGrants(needs());
  assert.deepEqual(grants.read, [
    "/etc/cm/mcp_servers.json",
    "/etc/cm/profiles",
    "/cache/deno/npm/pyodide",
    "/cache/cm",
    "/opt/deno/bin/deno",
    "/srv/skills",
    "/srv/work",
  ]);
  // A read-write folder: the host takes back the write access a script gave others there.
  assert.deepEqual(grants.write, [
    "/cache/cm",
    "/srv/skills",
    "/etc/cm/audit.jsonl",
    "/srv/work",
  ]);
  // A missing audit folder is created by the host, so it may write there (it is new and empty).
  assert.deepEqual(hostGrants(needs({ auditFolderExists: false })).write.slice(-1), ["/etc/cm"]);
  assert.deepEqual(grants.run, ["/opt/deno/bin/deno", "npx"]);
  assert.deepEqual(grants.net, ["mcp.example:8443", "index.example"]);
  assert.deepEqual(grants.env, [...HOST_ENV, "FILES_KEY", "API_TOKEN"]);
});

Deno.test("hostGrants() reaches Pyodide's package set only when a profile may, and reads a mirror folder", () => {
  const withProfileNet = (net: string[], pyodide_packages = "") => {
    const base = needs();
    const workspace = base.config.profiles.get("workspace")!;
    return hostGrants({
      ...base,
      config: {
        ...base.config,
        settings: { ...base.config.settings, pyodide_packages },
        profiles: new Map([["workspace", { ...workspace, net }]]),
      },
    });
  };
  assert.ok(!withProfileNet([]).net.some((host) => /jsdelivr/.test(host)));
  assert.deepEqual(withProfileNet(["cdn.jsdelivr.net"]).net.slice(-1), ["cdn.jsdelivr.net"]);
  const mirror = withProfileNet(["mirror.example:8080"], "http://mirror.example:8080/pyodide/");
  assert.deepEqual(mirror.net.slice(-1), ["mirror.example:8080"]);
  const folder = withProfileNet([], "/srv/pyodide");
  assert.ok(folder.read.includes("/srv/pyodide"));
  assert.ok(!folder.net.some((host) => host.includes("pyodide")));
});

Deno.test("hostGrants() adds the model API host, the HTTP bind address and a script file", () => {
  const model = {
    kind: "openai" as const,
    apiKey: "k",
    model: "m",
    baseURL: "http://127.0.0.1:9999/v1",
    tokenLimitParam: "auto" as const,
    timeoutMs: 1000,
  };
  const grants = hostGrants(needs({ model, http: { host: "127.0.0.1", port: 8788 } }));
  assert.deepEqual(grants.net.slice(-2), ["127.0.0.1:9999", "127.0.0.1:8788"]);
  assert.deepEqual(hostGrants(needs({ extraRead: ["/ci/smoke.py"] })).read.slice(-1), [
    "/ci/smoke.py",
  ]);
  // A system-picked port cannot be named in advance: the host alone is granted.
  assert.deepEqual(hostGrants(needs({ http: { host: "::1", port: 0 } })).net.slice(-1), ["[::1]"]);
});

Deno.test("modelHost() covers OpenAI's default, a compatible base URL, and Azure", () => {
  const base = { apiKey: "k", model: "m", tokenLimitParam: "auto" as const, timeoutMs: 1 };
  assert.equal(modelHost({ ...base, kind: "openai" }), "api.openai.com");
  assert.equal(
    modelHost({ ...base, kind: "openai", baseURL: "http://llm.local:8000/v1" }),
    "llm.local:8000",
  );
  assert.equal(
    modelHost({ ...base, kind: "azure", endpoint: "https://r.openai.azure.com/", apiVersion: "x" }),
    "r.openai.azure.com",
  );
});

Deno.test("hostFlags() never turns an empty list into a grant of everything", () => {
  const flags = hostFlags({
    read: ["/a", "/b"],
    write: [],
    run: ["/deno"],
    env: ["HOME"],
    net: [],
  });
  assert.deepEqual(flags, ["--allow-read=/a,/b", "--allow-run=/deno", "--allow-env=HOME"]);
  assert.ok(!flags.some((f) => /^--allow-(write|net)/.test(f)));
});

Deno.test("hostFlags() refuses a path Deno's comma-separated lists cannot express", () => {
  assert.throws(
    () => hostFlags({ read: ["/data/a,b"], write: [], run: [], env: [], net: [] }),
    /read "\/data\/a,b".*--no-restrict/,
  );
});

Deno.test("runGrantFor() makes relative command paths absolute from the server's cwd", () => {
  assert.equal(runGrantFor("./bin/server", "/srv/mcp"), "/srv/mcp/bin/server");
  assert.equal(runGrantFor("bin/server", "/srv/mcp"), "/srv/mcp/bin/server");
  assert.equal(runGrantFor("/usr/bin/node", "/srv/mcp"), "/usr/bin/node");
  assert.equal(runGrantFor("npx", "/srv/mcp"), "npx"); // found on PATH by Deno
});

function cmdline(pid: number): string[] {
  return Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0");
}

Deno.test("deno task serve's host runs without --allow-all and watches memory through a helper", async () => {
  await using server = await startServer();
  const host = cmdline(server.pid);
  assert.ok(host.includes("--no-restrict"), host.join(" "));
  assert.ok(!host.some((a) => a === "-A" || a === "--allow-all"), host.join(" "));
  for (const kind of ["read", "write", "run", "env"]) {
    assert.ok(host.some((a) => a.startsWith(`--allow-${kind}=`)), `no --allow-${kind}= list`);
  }
  // Nothing the default config does not need: no network, no FFI, no system information.
  assert.ok(!host.some((a) => /^--allow-(net|ffi|sys|import)/.test(a)), host.join(" "));
  // Started with the rest of the service, which may come after the handshake's answer.
  const findWatcher = () =>
    childPids(server.pid).find((pid) => cmdline(pid).some((a) => a.endsWith("memory_watcher.ts")));
  let watcher = findWatcher();
  for (let i = 0; i < 200 && watcher === undefined; i++) {
    await delay(50);
    watcher = findWatcher();
  }
  assert.ok(watcher !== undefined, "no memory watcher under the host");
  const bomb = await server.execute({ code: "x = bytearray(900 * 1024 * 1024)\nlen(x)" });
  assert.equal(bomb.diagnostics?.error_type, "MEMORY_LIMIT", bomb.text);
  assert.match(
    bomb.diagnostics!.message,
    /exceeded the limit of \d+\.\d MB \(limits\.memory_mb of profile "/,
  );

  await server.client.close();
  for (let i = 0; i < 200 && (isAlive(server.pid) || isAlive(watcher)); i++) await delay(50);
  assert.equal(isAlive(server.pid), false, "the host outlived its launcher's client");
  assert.equal(isAlive(watcher), false, "the memory watcher outlived the host");
});

Deno.test("a stdio server started by a relative path runs under the restricted host", async () => {
  const dir = Deno.realPathSync(await Deno.makeTempDir());
  await Deno.mkdir(`${dir}/bin`);
  await Deno.writeTextFile(
    `${dir}/bin/dynamic.sh`,
    `#!/bin/sh\nexec "${Deno.execPath()}" run --no-prompt -A "${ROOT}tests/fixtures/dynamic_server.ts" stdio\n`,
  );
  await Deno.chmod(`${dir}/bin/dynamic.sh`, 0o755);
  const config = await writeConfig(dir, {
    servers: { dynamic: { command: "./bin/dynamic.sh", cwd: dir } },
    settings: { pool_size: 1, permissions_dir: `${ROOT}permissions` },
  });
  try {
    await using server = await startServer({ args: ["--config", config] });
    const r = await server.execute({
      code: "from mcp_tools import dynamic\ndynamic.greet(name='relative')",
    });
    assert.equal(r.result, "hello relative", r.text);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
