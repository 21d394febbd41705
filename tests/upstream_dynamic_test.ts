/**
 * Upstream behaviour with a test server of our own: tools that appear at run time, a server
 * reached over Streamable HTTP, a server that cannot start, and calls the host gives up on.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { delay, ROOT, startHttpFixture, startServer, writeConfig } from "./_helpers.ts";
import { MAX_UPSTREAM_CALLS_AT_ONCE } from "../src/execution/tool_gate.ts";

Deno.test("upstream servers: list_changed, Streamable HTTP, and a broken server", async (t) => {
  await using http = await startHttpFixture();
  await using server = await startServer({
    args: ["--config", `${ROOT}tests/fixtures/dynamic_servers.json`],
    env: { DYNAMIC_HTTP_URL: http.url },
  });

  await t.step("a server that cannot start is reported; the others work", async () => {
    const r = await server.execute({
      code:
        "from mcp_tools import dynamic, remote\n[dynamic.greet(name='a'), remote.greet(name='b')]",
    });
    assert.equal(r.success, true, r.text);
    assert.deepEqual(r.result, ["hello a", "hello b"]);
    const tools = await server.client.listTools();
    const description = (tools.tools as { name: string; description?: string }[])
      .find((tool) => tool.name === "execute_code")!.description!;
    assert.match(
      description,
      /broken: unavailable: .*"deno" ended before it answered the MCP handshake/,
    );
    const broken = await server.execute({
      code: "import _codemode\n_codemode.call_tool('broken', 'anything', {})",
    });
    assert.equal(broken.success, false);
    assert.match(broken.diagnostics!.message, /broken.*not connected/);
    // Its module has no functions yet: any name asks the host, by keyword or not.
    const calls = await server.execute({
      code: [
        "from mcp_tools import broken",
        "def said(call):",
        "    try:",
        "        call()",
        "    except Exception as e:",
        "        return f'{type(e).__name__}: {e}'",
        "[said(lambda: broken.anything(x=1)), said(lambda: broken.anything('x'))]",
      ].join("\n"),
    });
    // Its docs and a search that finds nothing say it is down, and why.
    const text = async (name: string, args: Record<string, unknown>) =>
      ((await server.client.callTool({ name, arguments: args })).content as { text: string }[])[0]!
        .text;
    assert.match(
      await text("get_tool_docs", { names: ["broken"] }),
      /# broken\n# its server is unavailable: .*ended before it answered/,
    );
    assert.match(
      await text("search_tools", { query: "zzqqxx" }),
      /No tool matches "zzqqxx"\..* Not searched, being unavailable: broken /,
    );
    const [keyword, positional] = calls.result as string[];
    assert.match(keyword!, /^UpstreamUnavailable: .*broken.*not connected/);
    // A positional call cannot be sent (the parameters' names are not known), but the reason
    // the server is down comes first.
    assert.match(
      positional!,
      /^UpstreamUnavailable: broken\.anything: server 'broken' had no tools when this script started: .*ended before it answered.*mcp_tools\.broken\.anything\(\) takes name=value arguments only$/,
    );
  });

  await t.step("a tool added upstream at run time becomes callable (list_changed)", async () => {
    const add = await server.execute({
      code: "from mcp_tools import dynamic\ndynamic.add_tool(name='late-comer')",
    });
    assert.equal(add.success, true, add.text);
    let r;
    for (let i = 0; i < 50; i++) {
      r = await server.execute({ code: "from mcp_tools import dynamic\ndynamic.late_comer()" });
      if (r.success) break;
      await delay(100);
    }
    assert.equal(r?.result, "I am late-comer", r?.text);
    const docs = await server.client.callTool({
      name: "get_tool_docs",
      arguments: { names: ["dynamic.late_comer"] },
    });
    assert.match(
      (docs.content as { text: string }[])[0]!.text,
      /def late_comer\(\) -> str:[\s\S]*observed in \d+ calls?/,
    );
  });

  await t.step("a flood of list_changed costs one tools/list per gap, not one each", async () => {
    const r = await server.execute({
      code: [
        "import time",
        "from mcp_tools import dynamic",
        "before = int(dynamic.lists_served())",
        "dynamic.flood(count=200)",
        "time.sleep(1)",
        "int(dynamic.lists_served()) - before",
      ].join("\n"),
    });
    assert.equal(r.success, true, r.text);
    // The first list at once, the merged rest after the gap (2 s): at most one so far.
    assert.ok((r.result as number) <= 1, `${r.result} lists for 200 notifications`);
    await delay(2500);
    const later = await server.execute({
      code: "from mcp_tools import dynamic\nint(dynamic.lists_served())",
    });
    assert.ok((later.result as number) >= 1, later.text);
  });

  await t.step(
    "a session's leftover task calls tools during its next execution, recorded there",
    async () => {
      const first = await server.execute({
        session_id: "new",
        code: [
          "import asyncio",
          "from mcp_tools import dynamic",
          "async def later():",
          "    await asyncio.sleep(0.5)",
          "    return await dynamic.greet_async(name='later')",
          "task = asyncio.ensure_future(later())",
          "'left'",
        ].join("\n"),
      });
      assert.equal(first.result, "left", first.text);
      assert.equal(first.tool_calls.count, 0);
      // Frozen between executions, the task sleeps on only while the next one runs.
      await delay(1500);
      const second = await server.execute({
        session_id: first.session_id,
        code: "import asyncio\nawait asyncio.sleep(1.5)\n(task.done(), task.result())",
      });
      assert.deepEqual(second.result, [true, "hello later"], second.text);
      assert.deepEqual(
        second.tool_calls.calls.map((c) => [c.server, c.tool, c.outcome]),
        [["dynamic", "greet", "ok"]],
      );
      await server.client.callTool({
        name: "close_session",
        arguments: { session_id: first.session_id },
      });
    },
  );

  await t.step(
    "a call still running 5 s after its script ended is cancelled upstream",
    async () => {
      await using dir = await tempDir();
      const marker = join(dir.path, "left-running");
      const r = await server.execute({
        code: [
          "import asyncio",
          "from mcp_tools import dynamic",
          `asyncio.ensure_future(dynamic.wait_for_cancel_async(marker=${JSON.stringify(marker)}))`,
          "await asyncio.sleep(0.5)",
          "'ended'",
        ].join("\n"),
      });
      assert.equal(r.result, "ended", r.text);
      assert.deepEqual(r.tool_calls.calls.map((c) => c.outcome), ["unfinished"]);
      // Long before the server's own 60 s per-call timeout, which would cancel it too.
      assert.equal(await markerSays(marker, "cancelled", 20_000), true, "the server was not told");
    },
  );

  await t.step(
    `a script's calls go upstream ${MAX_UPSTREAM_CALLS_AT_ONCE} at a time; the others wait their turn`,
    async () => {
      const r = await server.execute({
        code: [
          "import asyncio",
          "from mcp_tools import dynamic",
          "peaks = await asyncio.gather(*[dynamic.overlap_async(ms=300) for _ in range(25)])",
          "max(int(p) for p in peaks)",
        ].join("\n"),
      });
      assert.equal(r.result, MAX_UPSTREAM_CALLS_AT_ONCE, r.text);
      assert.deepEqual(new Set(r.tool_calls.calls.map((c) => c.outcome)), new Set(["ok"]));
      assert.equal(r.tool_calls.count, 25);
    },
  );

  await t.step("calls still waiting their turn when the script ends are never sent", async () => {
    await using dir = await tempDir();
    const markers = Array.from({ length: 14 }, (_, i) => join(dir.path, `m${i}`));
    const r = await server.execute({
      code: [
        "import asyncio",
        "from mcp_tools import dynamic",
        `for m in ${JSON.stringify(markers)}:`,
        "    asyncio.ensure_future(dynamic.wait_for_cancel_async(marker=m))",
        "await asyncio.sleep(0.5)",
        "'ended'",
      ].join("\n"),
    });
    assert.equal(r.result, "ended", r.text);
    // The result says which were sent (and given up on) and which were never sent.
    const outcomes = r.tool_calls.calls.map((c) => c.outcome);
    assert.equal(outcomes.filter((o) => o === "unfinished").length, MAX_UPSTREAM_CALLS_AT_ONCE);
    const unsent = r.tool_calls.calls.filter((c) => c.outcome === "denied");
    assert.equal(unsent.length, markers.length - MAX_UPSTREAM_CALLS_AT_ONCE, `${outcomes}`);
    for (const c of unsent) assert.match(c.error ?? "", /never sent/);
    // Those sent are told to stop; those that waited reached no server.
    const read = () => Promise.all(markers.map((m) => Deno.readTextFile(m).catch(() => null)));
    const deadline = Date.now() + 20_000;
    let seen = await read();
    while (seen.filter((text) => text === "cancelled").length < MAX_UPSTREAM_CALLS_AT_ONCE) {
      assert.ok(Date.now() < deadline, `not all told to stop: ${seen}`);
      await delay(100);
      seen = await read();
    }
    assert.equal(
      seen.filter((text) => text !== null).length,
      MAX_UPSTREAM_CALLS_AT_ONCE,
      `${seen}`,
    );
  });

  await t.step("cancelling an execution cancels its upstream calls at once", async () => {
    await using dir = await tempDir();
    const marker = join(dir.path, "cancelled-run");
    const controller = new AbortController();
    const call = server.client.callTool(
      {
        name: "execute_code",
        arguments: {
          code: `from mcp_tools import dynamic\ndynamic.wait_for_cancel(marker=${
            JSON.stringify(marker)
          })`,
        },
      },
      undefined,
      { signal: controller.signal },
    );
    assert.equal(await markerSays(marker, "started", 30_000), true, "the call never started");
    controller.abort();
    await assert.rejects(call);
    // Without waiting out the 5 s grace a script that ended on its own gets.
    assert.equal(await markerSays(marker, "cancelled", 4_000), true, "the server was not told");
  });

  await t.step("a client that cancels during the grace does not wait it out", async () => {
    await using dir = await tempDir();
    const marker = join(dir.path, "cancelled-in-grace");
    const controller = new AbortController();
    const call = server.client.callTool(
      {
        name: "execute_code",
        arguments: {
          code: [
            "import asyncio",
            "from mcp_tools import dynamic",
            `asyncio.ensure_future(dynamic.wait_for_cancel_async(marker=${
              JSON.stringify(marker)
            }))`,
            "await asyncio.sleep(0.5)",
          ].join("\n"),
        },
      },
      undefined,
      { signal: controller.signal },
    );
    assert.equal(await markerSays(marker, "started", 30_000), true, "the call never started");
    await delay(1000); // the script has ended: the host waits out the grace for its call
    controller.abort();
    await assert.rejects(call);
    // Well before the 5 s grace would have ended.
    assert.equal(await markerSays(marker, "cancelled", 2500), true, "the server was not told");
  });

  await t.step("closing a session under a running call cancels the call at once", async () => {
    await using dir = await tempDir();
    const marker = join(dir.path, "closed-session");
    const opened = await server.execute({ code: "1", session_id: "new" });
    const run = server.execute({
      session_id: opened.session_id,
      code: `from mcp_tools import dynamic\ndynamic.wait_for_cancel(marker=${
        JSON.stringify(marker)
      })`,
    });
    assert.equal(await markerSays(marker, "started", 30_000), true, "the call never started");
    await server.client.callTool({
      name: "close_session",
      arguments: { session_id: opened.session_id },
    });
    // The script was stopped: nobody will read the call's answer, so no grace is waited out.
    assert.equal(await markerSays(marker, "cancelled", 4_000), true, "the server was not told");
    const r = await run;
    assert.equal(r.diagnostics?.error_type, "CANCELLED", r.text);
    assert.deepEqual(r.tool_calls.calls.map((c) => c.outcome), ["unfinished"]);
  });
});

/** Whether the file at `path` holds `text` within `ms`. */
async function markerSays(path: string, text: string, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await Deno.readTextFile(path).catch(() => "") === text) return true;
    await delay(50);
  }
  return false;
}

async function tempDir(): Promise<{ path: string } & AsyncDisposable> {
  const path = await Deno.makeTempDir();
  return { path, [Symbol.asyncDispose]: () => Deno.remove(path, { recursive: true }) };
}

Deno.test("a call waiting for its server's first connect when its script is given up on is never sent", async () => {
  await using dir = await tempDir();
  const config = await writeConfig(dir.path, {
    servers: {
      // Never answers the MCP handshake: its first connect takes the 30 s connect timeout.
      mute: { command: "deno", args: ["eval", "await new Promise((r) => setTimeout(r, 60_000))"] },
    },
    settings: { pool_size: 1, permissions_dir: `${ROOT}tests/fixtures/permissions` },
  });
  await using server = await startServer({ args: ["--config", config] });
  const r = await server.execute({
    code: "import _codemode\n_codemode.call_tool('mute', 'anything', {})",
    timeout_s: 1,
  });
  assert.equal(r.diagnostics?.error_type, "TIMEOUT", r.text);
  assert.deepEqual(r.tool_calls.calls.map((c) => c.outcome), ["denied"], r.text);
  assert.match(
    r.tool_calls.calls[0]!.error ?? "",
    /before the call's server was ready; it was never sent/,
  );
});
