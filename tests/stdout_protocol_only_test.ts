/**
 * In stdio mode stdout carries JSON-RPC and nothing else: what a library prints with `console`
 * goes to stderr. The MCP SDK's client prints a `console.debug` line when it lists the tools of
 * a server that declares none, which reached stdout (attacker round 16).
 */
import assert from "node:assert/strict";
import { delay, ROOT, spawnServe, writeConfig } from "./_helpers.ts";

Deno.test("consoleToStderr() sends every console method's output to stderr", async () => {
  const script = [
    `import { consoleToStderr } from "${ROOT}src/_util/console_redirect.ts";`,
    "consoleToStderr();",
    'console.log("log-line"); console.debug("debug-line"); console.info("info-line");',
    'console.table([{ a: 1 }]); console.count("counted"); console.dir({ dir: 1 });',
    'console.group("grouped"); console.groupEnd(); console.timeLog("timer");',
  ].join("\n");
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-config", script],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  assert.equal(new TextDecoder().decode(out.stdout), "");
  const stderr = new TextDecoder().decode(out.stderr);
  for (const text of ["log-line", "debug-line", "info-line", "counted: 1", "dir: 1", "grouped"]) {
    assert.ok(stderr.includes(text), `${text} in ${stderr}`);
  }
});

Deno.test("an upstream server that offers no tools leaves stdout to JSON-RPC", async () => {
  const dir = Deno.realPathSync(await Deno.makeTempDir());
  const config = await writeConfig(dir, {
    servers: {
      prompts: {
        command: "deno",
        args: ["run", "--no-prompt", "-A", `${ROOT}tests/fixtures/prompts_only_server.ts`],
      },
    },
    settings: { pool_size: 1, permissions_dir: `${ROOT}tests/fixtures/permissions` },
  });
  const child = spawnServe({ args: ["--config", config], stderr: "piped" });
  const stderr = new Response(child.stderr).text();
  const writer = child.stdin.getWriter();
  const send = (message: unknown) =>
    writer.write(new TextEncoder().encode(JSON.stringify(message) + "\n"));
  await send({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "raw", version: "0" },
    },
  });
  await send({ jsonrpc: "2.0", method: "notifications/initialized" });
  // tools/list waits for the upstream servers to connect (or fail).
  await send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
  const lines: string[] = [];
  let ended = false;
  const reading = (async () => {
    let buffer = "";
    for await (const text of child.stdout.pipeThrough(new TextDecoderStream())) {
      buffer += text;
      const parts = buffer.split("\n");
      buffer = parts.pop()!;
      lines.push(...parts);
    }
    ended = true;
  })();
  while (!ended && !lines.some((line) => line.includes('"id":2'))) {
    await delay(100);
  }
  await writer.close();
  await reading;
  await child.status;
  for (const line of lines) {
    assert.doesNotThrow(() => JSON.parse(line), `not JSON-RPC on stdout: ${line}`);
  }
  // The SDK's notice that the server declares no tools, on stderr.
  assert.match(await stderr, /does not advertise tools capability/);
  const list = JSON.parse(lines.find((line) => line.includes('"id":2'))!);
  const description = list.result.tools.find((t: { name: string }) => t.name === "execute_code")
    .description;
  assert.match(description, /prompts/);
  await Deno.remove(dir, { recursive: true });
});
