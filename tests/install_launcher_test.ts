/**
 * `deno task install` puts an `mcp-code-mode` command on PATH that serves from any folder, with
 * the launcher's permissions and never `-A`.
 */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  LAUNCHER_FLAGS,
  launcherFolder,
  launcherScript,
  onPath,
} from "../src/commands/install_launcher.ts";
import { childEnv, denoDir, ROOT, SERVE_FLAGS } from "./_helpers.ts";

Deno.test("launcherScript() runs main.ts as deno task serve does, quoted, never with -A", async (t) => {
  await t.step("the flags are deno task serve's", () => {
    assert.deepEqual(LAUNCHER_FLAGS, SERVE_FLAGS);
  });
  await t.step("a POSIX shell script", () => {
    const { file, text } = launcherScript({ deno: "/opt/deno", root: "/src/it's", os: "linux" });
    assert.equal(file, "mcp-code-mode");
    assert.match(text, /^#!\/bin\/sh\n/);
    assert.ok(text.includes(`'/src/it'"'"'s/main.ts' "$@"`), text);
    assert.ok(text.includes(`'--config=/src/it'"'"'s/deno.json'`), text);
    assert.ok(!/-A\b|--allow-all|--allow-net/.test(text), text);
    const [writing, other] = text.split("\n").filter((l) => l.includes("exec "));
    assert.match(writing!, /^case "\$1" in import\|install\|doctor\) exec .*'--allow-write'/);
    assert.ok(!other!.includes("--allow-write"), other);
  });
  await t.step(
    "a newline in the folder's name cannot end the comment and run a command",
    async () => {
      const dir = await Deno.makeTempDir();
      const marker = `${dir}/ran`;
      const root = `${dir}/co\ntouch ${marker} #`;
      const { text } = launcherScript({ deno: "/bin/true", root, os: "linux" });
      await Deno.writeTextFile(`${dir}/launcher`, text);
      const ran = await new Deno.Command("/bin/sh", { args: [`${dir}/launcher`] }).output();
      assert.equal(ran.code, 0);
      assert.equal(await Deno.stat(marker).then(() => true, () => false), false, text);
      await Deno.remove(dir, { recursive: true });
    },
  );
  await t.step("cmd.exe cannot expand a %VAR% in a path", () => {
    const { text } = launcherScript({ deno: "C:/deno.exe", root: "C:/%TEMP%/cm", os: "windows" });
    assert.ok(text.includes('"C:/%%TEMP%%/cm/main.ts"'), text);
  });
  await t.step("a Windows command file", () => {
    const { file, text } = launcherScript({ deno: "C:/deno.exe", root: "C:/cm", os: "windows" });
    assert.equal(file, "mcp-code-mode.cmd");
    const lines = text.split("\r\n");
    assert.match(lines[5]!, /^"C:\/deno.exe" "run" "--no-prompt" .* "C:\/cm\/main.ts" %\*$/);
    assert.ok(!lines[5]!.includes("--allow-write"), text);
    assert.deepEqual(lines.slice(2, 5), [
      'if /i "%~1"=="import" goto write',
      'if /i "%~1"=="install" goto write',
      'if /i "%~1"=="doctor" goto write',
    ]);
    assert.match(lines[8]!, /^"C:\/deno.exe" "run" "--allow-write" "--no-prompt" .* %\*$/);
  });
  await t.step("where it goes", () => {
    const env = (vars: Record<string, string>) => (name: string) => vars[name];
    assert.equal(launcherFolder({ bin: "/b", env: env({ HOME: "/h" }) }), "/b");
    assert.equal(launcherFolder({ env: env({ DENO_INSTALL_ROOT: "/d", HOME: "/h" }) }), "/d/bin");
    assert.equal(launcherFolder({ env: env({ HOME: "/h" }) }), "/h/.local/bin");
    assert.throws(() => launcherFolder({ env: env({}) }), /HOME is not set/);
    assert.equal(onPath("/h/.local/bin", "/usr/bin:/h/.local/bin/"), true);
    assert.equal(onPath("/h/.local/bin", "/usr/bin:/h/.local/bin2"), false);
  });
});

Deno.test("after deno task install, mcp-code-mode serve works from any folder", async () => {
  const home = await Deno.makeTempDir();
  // Deno's cache stays where it is (its default is under HOME).
  const cache = { HOME: home, DENO_DIR: await denoDir() };
  const install = await new Deno.Command(Deno.execPath(), {
    args: ["task", "install"],
    cwd: ROOT,
    env: childEnv(cache),
    clearEnv: true,
  }).output();
  const said = new TextDecoder().decode(install.stdout);
  assert.equal(install.code, 0, said + new TextDecoder().decode(install.stderr));
  const bin = `${home}/.local/bin`;
  assert.match(said, new RegExp(`installed ${bin}/mcp-code-mode`));
  assert.match(said, /is not on PATH/);
  const script = await Deno.readTextFile(`${bin}/mcp-code-mode`);
  assert.ok(!/-A\b|--allow-all/.test(script), script);

  const elsewhere = await Deno.makeTempDir();
  const env = childEnv(cache);
  // Found by name on PATH, as a client config's "command": "mcp-code-mode" is.
  env.PATH = `${bin}:${env.PATH}`;
  const transport = new StdioClientTransport({
    command: "mcp-code-mode",
    args: ["serve"],
    env,
    cwd: elsewhere,
    stderr: "pipe",
  });
  const client = new Client({ name: "test", version: "0" });
  await client.connect(transport);
  try {
    const reply = await client.callTool(
      {
        name: "execute_code",
        arguments: { code: "import os\nprint(6 * 7)\nos.getcwd()" },
      },
      undefined,
      { timeout: 120_000 },
    );
    const result = reply.structuredContent as { success: boolean; stdout: string };
    assert.equal(result.success, true, JSON.stringify(reply));
    assert.equal(result.stdout, "42\n");
  } finally {
    await client.close();
  }
  // doctor checks the snapshot in the cache, which it writes (newcomer 61: it failed so).
  const doctor = await new Deno.Command("mcp-code-mode", {
    args: ["doctor"],
    cwd: elsewhere,
    env,
    clearEnv: true,
  }).output();
  const checks = new TextDecoder().decode(doctor.stdout) +
    new TextDecoder().decode(doctor.stderr);
  assert.equal(doctor.code, 0, checks);
  assert.match(checks, /^ok {4}sandbox /m);
  // import and install write config files: the installed command can, from any folder too.
  const cursorFile = `${elsewhere}/.cursor/mcp.json`;
  await Deno.mkdir(`${elsewhere}/.cursor`);
  await Deno.writeTextFile(cursorFile, JSON.stringify({ mcpServers: {} }));
  const installed = await new Deno.Command("mcp-code-mode", {
    args: ["install", "--client", "cursor", "--scope", "project"],
    cwd: elsewhere,
    env,
    clearEnv: true,
  }).output();
  const out = new TextDecoder().decode(installed.stdout) +
    new TextDecoder().decode(installed.stderr);
  assert.equal(installed.code, 0, out);
  const cursor = JSON.parse(await Deno.readTextFile(cursorFile));
  assert.equal(
    cursor.mcpServers["code-mode"].command,
    `${bin}/mcp-code-mode`,
    JSON.stringify(cursor),
  );
  await Deno.remove(home, { recursive: true });
  await Deno.remove(elsewhere, { recursive: true });
});
