/**
 * The single binary's sandbox mode: the process starts with every permission and drops them all
 * after boot. Proven here under plain `deno run -A` of the same worker entry; and, where Deno's
 * `denort` runtime is available (DENORT_BIN), with a real compiled binary.
 */
import assert from "node:assert/strict";
import { silentLogger } from "../src/_util/log.ts";
import { type RawOutcome, Sandbox } from "../src/sandbox/launcher.ts";
import { DEFAULT_LIMITS, type Profile } from "../src/sandbox/profile.ts";
import { locateRuntime } from "../src/sandbox/runtime.ts";
import { directResidentMemory } from "../src/sandbox/resident_memory.ts";
import { sandboxCommand, snapshotBuildCommand } from "../src/sandbox/sandbox_command.ts";
import { ensureSnapshot } from "../src/sandbox/snapshot.ts";
import { childEnv, ROOT } from "./_helpers.ts";

const profile: Profile = {
  name: "default",
  description: "",
  folders: [],
  net: [],
  allowed_tools: [],
  approve: [],
  limits: { ...DEFAULT_LIMITS },
};

Deno.test("attack: drop mode never builds a snapshot with preloaded packages (their code would keep every permission)", async () => {
  const runtime = locateRuntime(await Deno.makeTempDir(), "drop");
  assert.throws(
    () => snapshotBuildCommand(runtime, "/tmp/out.bin", { specPath: "/s", siteDir: "/d" }),
    /Cannot build a snapshot with preloaded packages in the single binary/,
  );
  assert.ok(snapshotBuildCommand(runtime, "/tmp/out.bin").args.length > 0, "a plain one is built");
  await Deno.remove(runtime.cacheDir, { recursive: true });
});

Deno.test("drop mode: a sandbox started with every permission keeps none of them", async (t) => {
  const runtime = locateRuntime(undefined, "drop");
  const snapshotPath = await ensureSnapshot(runtime, silentLogger);
  const command = sandboxCommand(runtime, snapshotPath, profile);
  assert.ok(command.args.includes("--allow-all"), "this really starts with every permission");
  assert.equal(command.boot.drop_permissions, true);

  let hits = 0;
  await using http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    hits++;
    return new Response("reached");
  });
  const run = async (code: string): Promise<RawOutcome> => {
    await using sandbox = new Sandbox({
      runtime,
      snapshotPath,
      profile,
      log: silentLogger,
      memory: directResidentMemory,
    });
    return await sandbox.execute({
      code,
      timeoutMs: 30_000,
      memoryBytes: 512 * 1024 * 1024,
      outputBytes: 65536,
    }, { callTool: () => Promise.resolve({ error: { kind: "invalid", message: "none" } }) });
  };
  const refused: [string, string][] = [
    ["reading a host file", "import js\njs.Deno.readTextFileSync('/etc/passwd')"],
    ["reading the environment", "import js\njs.Deno.env.get('HOME')"],
    ["starting a process", "import js\njs.Deno.Command.new('/bin/true').outputSync()"],
    ["writing a host file", "import js\njs.Deno.writeTextFileSync('/tmp/dropped.txt', 'x')"],
    ["reaching loopback", `import js\nawait js.fetch('http://127.0.0.1:${http.addr.port}/')`],
    ["reading system information", "import js\njs.Deno.hostname()"],
  ];
  for (const [name, code] of refused) {
    await t.step(name, async () => {
      const outcome = await run(code);
      assert.equal(outcome.reply?.ok, false, JSON.stringify(outcome));
      const error = outcome.reply!.ok ? "" : outcome.reply!.error.message;
      assert.match(error, /NotCapable|Requires/);
    });
  }
  assert.equal(hits, 0);
  await t.step("Python itself still works, standard library included", async () => {
    const outcome = await run(
      "import decimal, email.mime.text, sqlite3\nstr(decimal.Decimal('1.1') * 3)",
    );
    assert.deepEqual(outcome.reply, { ok: true, result: "3.3", outputs: [] });
  });
  await t.step("profiles that grant folders or hosts are refused in this mode", () => {
    assert.throws(
      () =>
        sandboxCommand(runtime, snapshotPath, { ...profile, name: "net", net: ["example.com"] }),
      /profile "net" in the single binary/,
    );
  });
});

const denort = Deno.env.get("DENORT_BIN");
Deno.test({
  name: denort
    ? "deno task compile builds a binary that runs scripts in dropped sandboxes"
    : "deno task compile (skipped: set DENORT_BIN to a denort binary; Deno's download host is unreachable here)",
  ignore: !denort,
  async fn() {
    const built = await new Deno.Command(Deno.execPath(), {
      args: ["task", "compile"],
      cwd: ROOT,
      env: childEnv({ DENORT_BIN: denort! }),
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(built.code, 0, new TextDecoder().decode(built.stderr));
    const binary = `${ROOT}dist/mcp-code-mode`;
    const child = new Deno.Command(binary, {
      args: ["run", "-", "--config", `${ROOT}tests/fixtures/no_servers.json`, "--json"],
      env: childEnv(),
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(
      new TextEncoder().encode(
        "print('from the binary')\nimport js\njs.Deno.readTextFileSync('/etc/passwd')\n",
      ),
    );
    await writer.close();
    const out = await child.output();
    const result = JSON.parse(new TextDecoder().decode(out.stdout));
    assert.equal(result.stdout, "from the binary\n");
    assert.match(result.diagnostics.message, /NotCapable|Requires/);
  },
});
