import assert from "node:assert/strict";
import { catalogServerEntry, childEnv, ROOT, runCli, writeConfig } from "./_helpers.ts";
import { VERSION } from "../src/_util/version.ts";
import { startHttp } from "./_http.ts";
import { runCli as runCliInProcess } from "../src/cli.ts";

Deno.test("run FILE.py is a CI smoke-test step: exit 0, 1 or 2", async (t) => {
  const dir = await Deno.makeTempDir();
  const ok = `${dir}/ok.py`;
  const bad = `${dir}/bad.py`;
  await Deno.writeTextFile(ok, "print('smoke ok')\n");
  await Deno.writeTextFile(bad, "print('before')\nraise ValueError('broken')\n");
  await t.step("a passing script exits 0 and prints its output on stdout", async () => {
    const r = await runCli(["run", ok]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "smoke ok\n");
  });
  await t.step("a failing script exits 1 and explains on stderr", async () => {
    const r = await runCli(["run", bad]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, "before\n");
    assert.match(r.stderr, /ValueError: broken/);
  });
  await t.step("what run says about a failure cannot drive the terminal", async () => {
    const hostile = `${dir}/hostile.py`;
    await Deno.writeTextFile(hostile, "raise ValueError('\\x1b[2J\\x1b[31mcleared')\n");
    const r = await runCli(["run", hostile]);
    assert.equal(r.code, 1);
    assert.ok(!r.stderr.includes("\x1b"), r.stderr);
    assert.match(r.stderr, /ValueError: \\u\{1b\}\[2J\\u\{1b\}\[31mcleared/);
  });
  await t.step("--json prints the whole result", async () => {
    const r = await runCli(["run", bad, "--json"]);
    assert.equal(r.code, 1);
    const result = JSON.parse(r.stdout);
    assert.equal(result.success, false);
    assert.equal(result.diagnostics.error_type, "ValueError");
  });
  await t.step("the script can come from stdin", async () => {
    const r = await runCli(["run", "-"], "6 * 7\n");
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "42\n");
  });
  await t.step("bad usage exits 2", async () => {
    assert.equal((await runCli(["run"])).code, 2);
    assert.equal((await runCli(["frobnicate"])).code, 2);
    assert.equal((await runCli(["run", ok, "--bogus"])).code, 2);
    assert.equal((await runCli(["run", `${dir}/missing.py`])).code, 2);
    assert.equal((await runCli(["run", ok, "--profile", "nope"])).code, 2);
  });
  await t.step(
    "a mistake in the arguments is said in one line, the usage only when lost",
    async () => {
      const missing = await runCli(["run", `${dir}/missing.py`]);
      assert.match(
        missing.stderr,
        /^error: cannot read .*missing\.py.*\n\(see --help for the usage\)\n$/,
      );
      const unknown = await runCli(["frobnicate"]);
      assert.match(unknown.stderr, /^error: unknown command "frobnicate"\n[^]*Usage:/);
      const typo = await runCli(["runn"]);
      assert.match(typo.stderr, /^error: unknown command "runn"; did you mean "run"\?\n/);
      const flag = await runCli(["run", ok, "--profil", "x"]);
      assert.match(flag.stderr, /^error: unknown option --profil; did you mean --profile\?\n/);
      // Refused as soon as the config is read: no upstream server is started for it.
      const profile = await runCli(["run", ok, "--profile", "nope"]);
      assert.match(
        profile.stderr,
        /^error: unknown profile "nope" \(known: [^\n]*default[^\n]*\)\n\(see/,
      );
    },
  );
  await t.step("a start-up failure is said once, exit 3", async () => {
    const cfg = `${dir}/cfg`;
    await Deno.mkdir(`${cfg}/permissions`, { recursive: true });
    const profile = JSON.parse(await Deno.readTextFile("permissions/default.json"));
    await Deno.writeTextFile(
      `${cfg}/permissions/default.json`,
      JSON.stringify({ ...profile, preload: ["no-such-package-anywhere"] }),
    );
    const config = await writeConfig(cfg, { settings: { permissions_dir: "permissions" } });
    const r = await runCli(["run", ok, "--config", config]);
    assert.equal(r.code, 3, "could not run: not a failed script");
    const badConfig = await writeConfig(`${dir}`, { settings: { pool_sise: 1 } });
    const refused = await runCli(["run", ok, "--config", badConfig]);
    assert.equal(refused.code, 3, refused.stderr);
    assert.match(refused.stderr, /pool_sise/);
    assert.equal(r.stderr.split("no-such-package-anywhere").length, 2, r.stderr);
    assert.match(
      r.stderr,
      /Cannot preload packages for profile "default": no-such-package-anywhere/,
    );
  });
  await t.step("--help and --version print to stdout", async () => {
    const help = await runCli(["--help"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /Usage:/);
    // Every option the parser takes is in the usage (but the relaunch's own).
    const parsed = [
      ...Deno.readTextFileSync(`${ROOT}src/cli.ts`).matchAll(
        /^ {4}"?([a-z-]+)"?: \{ type: "(?:string|boolean)"/gm,
      ),
    ].map((m) => m[1]!);
    assert.ok(parsed.length > 15, "the option table was read");
    for (const name of parsed.filter((n) => n !== "no-restrict")) {
      assert.match(help.stdout, new RegExp(`--${name}\\b`), `--${name} is in --help`);
    }
    const word = await runCli(["help"]);
    assert.equal(word.code, 0);
    assert.equal(word.stdout, help.stdout);
    const version = await runCli(["--version"]);
    assert.equal(version.stdout.trim(), VERSION);
  });
  await Deno.remove(dir, { recursive: true });
});

Deno.test("the README's first example is examples/try.py, and it runs against the default config", async () => {
  const example = await Deno.readTextFile(new URL("../examples/try.py", import.meta.url));
  const readme = await Deno.readTextFile(new URL("../README.md", import.meta.url));
  const first = /```python\n([\s\S]*?)```/.exec(readme)![1]!;
  assert.equal(example.slice(example.indexOf("\n") + 1), first, "the README and the file differ");
  const r = await runCli(["run", "examples/try.py"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^\[FILE\] hello\.txt\n\[FILE\] numbers\.csv\n\d+\n$/);
});

/**
 * Runs the README's client example that names `transport`, unindented by `indent` spaces and
 * with `replace` applied, from a folder outside the checkout (no config, no lock file of ours).
 */
async function runReadmeClient(
  transport: string,
  indent: number,
  replace: (code: string) => string,
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const readme = await Deno.readTextFile(new URL("../README.md", import.meta.url));
  const block = new RegExp("```ts\\n((?:(?!```)[\\s\\S])*?" + transport + "[\\s\\S]*?)```")
    .exec(readme)?.[1];
  assert.ok(block, `the README shows a client with ${transport}`);
  const dir = await Deno.makeTempDir();
  try {
    const client = `${dir}/client.ts`;
    await Deno.writeTextFile(client, replace(block.replace(new RegExp(`^ {${indent}}`, "gm"), "")));
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--no-lock", client],
      cwd: dir,
      env: childEnv(env),
      stdout: "piped",
      stderr: "piped",
    }).output();
    const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
    return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("the README's own stdio client runs against this checkout", async () => {
  const out = await runReadmeClient(
    "StdioClientTransport",
    0,
    (code) => code.replaceAll("/path/to/repo", ROOT),
  );
  assert.equal(out.code, 0, out.stderr.slice(-2000));
  assert.match(out.stdout, /isError: false/);
  assert.match(out.stdout, /Allowed directories/, out.stdout);
});

Deno.test("the README's own 2026-07-28 HTTP client runs against this checkout", async () => {
  // With the bearer token the README asks for on a shared machine, which the client sends.
  const token = { CODEMODE_HTTP_TOKEN: crypto.randomUUID() };
  await using http = await startHttp([], token);
  const out = await runReadmeClient(
    "StreamableHTTPClientTransport",
    2,
    (code) => code.replace("http://127.0.0.1:8788/mcp", http.url),
    token,
  );
  assert.equal(out.code, 0, out.stderr.slice(-2000));
  assert.match(out.stdout, /result: 42/, out.stdout);
  assert.match(out.stderr, /working on it/, "the live output reached the client");
});

Deno.test("doctor checks everything and exits 1 when something is broken", async () => {
  const good = await runCli(["doctor"]);
  assert.equal(good.code, 0, good.stdout + good.stderr);
  assert.match(good.stdout, /^ok {4}deno/m);
  assert.match(good.stdout, /^ok {4}sandbox +Python 3\.\d+/m);
  assert.match(
    good.stdout,
    /^ok {4}host permissions +read: .*mcp_servers\.json.*; run: .*; net: none$/m,
  );
  assert.match(
    good.stdout,
    /^ok {4}memory limit +enforced \(through the memory watcher process\)/m,
  );
  assert.match(good.stdout, /^ok {4}server filesystem +\d+ tools/m);
  assert.match(good.stdout, /^ok {4}preload +no profile preloads packages$/m);
  // The tests pass on the machine's CA variable (childEnv), which servers need on some networks.
  assert.match(
    good.stdout,
    Deno.env.get("NODE_EXTRA_CA_CERTS")
      ? /^ok {4}network +NODE_EXTRA_CA_CERTS passed on to stdio servers$/m
      : /^ok {4}network +no proxy or CA variables set$/m,
  );
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(
    `${dir}/c.json`,
    JSON.stringify({
      servers: {
        ghost: { command: "/nonexistent/ghost" },
        locked: { command: "/nonexistent/locked", env: { KEY: "${CODEMODE_TEST_UNSET_ZZ}" } },
      },
      settings: { permissions_dir: `${dir}/permissions` },
    }),
  );
  // A preload that cannot be had stops serve's start: doctor says so (operator 51).
  await Deno.mkdir(`${dir}/permissions`);
  await Deno.writeTextFile(`${dir}/permissions/default.json`, "{}");
  await Deno.writeTextFile(
    `${dir}/permissions/pre.json`,
    JSON.stringify({ preload: ["nosuchpkg-zz"] }),
  );
  const bad = await runCli(["doctor", "--config", `${dir}/c.json`]);
  assert.equal(bad.code, 1);
  assert.match(bad.stdout, /^FAIL {2}preload +profile "pre": nosuchpkg-zz: /m);
  assert.match(bad.stdout, /^FAIL {2}server ghost +command "\/nonexistent\/ghost" not found/m);
  // Every entry counted, the one that will not start said so on a line that is not plain "ok".
  assert.match(bad.stdout, /^warn {2}config +\S+: 2 servers \(1 not started\)/m);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("--log-format json writes one JSON object per stderr line, with the execution id", async () => {
  const r = await runCli(
    ["run", "-", "--log-level", "debug", "--log-format", "json"],
    "print('x')\n",
  );
  assert.equal(r.code, 0);
  assert.equal(r.stdout, "x\n");
  // Every line from the server is JSON (Deno itself may print download progress on a cold cache).
  const records = r.stderr.trim().split("\n").filter((line) => !line.startsWith("Download "))
    .map((line) => JSON.parse(line));
  const finished = records.find((rec) => rec.msg === "execution finished");
  assert.match(finished.execution, /^[0-9a-f-]{36}$/);
  assert.equal(finished.level, "debug");
});

Deno.test("serve --http refuses bad --allow-host, --max-http-sessions and --http-idle-s values", async (t) => {
  const cases: [string[], string][] = [
    [
      ["--allow-host", "*.example.test"],
      'error: Cannot allow host "*.example.test": give a host name or IP address, optionally with :PORT (e.g. mcp.example.com)',
    ],
    [
      ["--max-http-sessions", "0"],
      "error: --max-http-sessions must be a whole number from 1 to 65536",
    ],
    [["--http-idle-s", "0"], "error: --http-idle-s must be a whole number from 1 to 86400"],
  ];
  for (const [args, message] of cases) {
    await t.step(args.join(" "), async () => {
      const r = await runCli(["serve", "--http", ...args]);
      assert.equal(r.code, 2);
      assert.equal(r.stderr.split("\n")[0], message);
    });
  }
  await t.step("a port already taken, said before anything starts", async () => {
    using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (taken.addr as Deno.NetAddr).port;
    const r = await runCli(["serve", "--http", "--port", String(port)]);
    assert.equal(r.code, 1, r.stderr);
    assert.doesNotMatch(r.stderr, /warming|sandbox|--help/);
    assert.match(
      r.stderr,
      new RegExp(
        `cannot listen on 127.0.0.1:${port}: the address is in use \\(pick another --port\\)`,
      ),
    );
  });
});

Deno.test("runCli() in process: --version and --help print to the output, bad usage exits 2", async () => {
  const printed: string[] = [];
  const out = (text: string) => void printed.push(text);
  assert.equal(await runCliInProcess(["--version"], out), 0);
  assert.deepEqual(printed, [`${VERSION}\n`]);
  assert.equal(await runCliInProcess(["--help"], out), 0);
  assert.match(printed[1]!, /--http \[--host H\] \[--port P\]/);
  assert.match(printed[1]!, /\(default\s+127\.0\.0\.1:8788\)/, "the defaults the code uses");
  assert.equal(await runCliInProcess(["serve", "--no-restrict", "extra"], out), 2);
  assert.equal(await runCliInProcess(["no-such-command"], out), 2);
  assert.equal(printed.length, 2, "usage errors go to stderr, not the output");
});

Deno.test("tools and doctor escape what upstream servers wrote before the terminal sees it", async () => {
  const dir = Deno.realPathSync(await Deno.makeTempDir());
  const ansi = "\u001b]0;TITLE\u0007\u001b[2J\u001b[31mred";
  await Deno.writeTextFile(
    `${dir}/ansi.json`,
    JSON.stringify({
      server: "ansi",
      tools: [{ name: "show", description: ansi, inputSchema: { type: "object", properties: {} } }],
    }),
  );
  const config = await writeConfig(dir, {
    servers: {
      ansi: catalogServerEntry(`${dir}/ansi.json`),
      dying: {
        command: "deno",
        args: ["eval", `console.error(${JSON.stringify(ansi)}); Deno.exit(3)`],
      },
    },
    settings: { permissions_dir: `${ROOT}tests/fixtures/permissions` },
  });
  for (const args of [["tools"], ["tools", "--index"], ["doctor"]]) {
    const r = await runCli([...args, "--config", config]);
    const raw = r.stdout.includes("\u0007") || r.stdout.includes("\u001b");
    assert.ok(!raw, `${args.join(" ")}: ${JSON.stringify(r.stdout)}`);
  }
  const tools = await runCli(["tools", "--config", config]);
  assert.match(tools.stdout, /\\u\{1b\}\]0;TITLE\\u\{7\}/);
  const doctor = await runCli(["doctor", "--config", config]);
  assert.match(doctor.stdout, /^FAIL {2}server dying .*\\u\{1b\}/m);
  await Deno.remove(dir, { recursive: true });
});
