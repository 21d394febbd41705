/**
 * One server entry that cannot start with this environment (a `${VAR}` not set, a secret too
 * short to scrub) leaves out that server only: the others serve, the tool index says why, and a
 * script calling it gets UpstreamUnavailable with the reason. Names a script gets wrong are
 * answered with what exists.
 */
import assert from "node:assert/strict";
import { ROOT, startServer, writeConfig } from "./_helpers.ts";

Deno.test("a server that cannot start with this environment does not stop the others", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "codemode-unavailable-" });
  const dynamic = ["run", "--no-prompt", `${ROOT}tests/fixtures/dynamic_server.ts`, "stdio"];
  const config = await writeConfig(dir, {
    servers: {
      greeter: { command: "deno", args: dynamic, description: "Says hello." },
      github: {
        command: "deno",
        args: dynamic,
        env: { GITHUB_TOKEN: "${CODEMODE_TEST_UNSET_TOKEN}" },
        description: "GitHub.",
      },
      shorty: { command: "deno", args: dynamic, env: { API_KEY: "a1b" } },
    },
  });
  await using server = await startServer({ args: ["--config", config] });

  await t.step("the index lists the others and says why these are missing", async () => {
    const { tools } = await server.client.listTools();
    const description = (tools as { name: string; description?: string }[])
      .find((tool) => tool.name === "execute_code")!.description!;
    assert.match(description, /greeter/);
    assert.match(
      description,
      /github: unavailable: not started: field "env\.GITHUB_TOKEN": environment variable CODEMODE_TEST_UNSET_TOKEN is not set/,
    );
    assert.match(description, /shorty: unavailable: not started: env "API_KEY": the secret is 3/);
  });

  await t.step("calls to the others work; a call to it raises the reason", async () => {
    const result = await server.execute({
      code: [
        "from mcp_tools import greeter, github, UpstreamUnavailable",
        "print(greeter.greet(name='x'))",
        "try:",
        "    github.search_repositories(query='deno')",
        "except UpstreamUnavailable as e:",
        "    print('unavailable:', e)",
      ].join("\n"),
    });
    assert.equal(result.success, true, JSON.stringify(result));
    assert.match(result.stdout, /^hello x\n/);
    assert.match(result.stdout, /unavailable: .*CODEMODE_TEST_UNSET_TOKEN is not set/);
  });

  await t.step("a mistyped module or function is answered with what exists", async () => {
    const module = await server.execute({ code: "from mcp_tools import greeterr" });
    assert.equal(module.success, false);
    assert.match(JSON.stringify(module), /Did you mean: 'greeter'\?/);
    // Nothing close: the modules there are, not Python's bare "cannot import name".
    const listed = await server.execute({ code: "import mcp_tools\n'greeter' in dir(mcp_tools)" });
    assert.equal(listed.result, true, "dir() shows the modules there are");
    const far = await server.execute({ code: "from mcp_tools import zzzz" });
    assert.match(
      far.diagnostics!.message,
      /module 'mcp_tools' has no module 'zzzz'; it has: .*greeter/,
    );
    const fn = await server.execute({
      code: "from mcp_tools import greeter\ngreeter.gret(name='x')",
    });
    assert.equal(fn.success, false);
    assert.match(JSON.stringify(fn), /has no function 'gret'\. Did you mean: 'greet'\?/);
    const twin = await server.execute({
      code: "from mcp_tools import greeter\ngreeter.gret_async(name='x')",
    });
    assert.match(
      JSON.stringify(twin),
      /has no function 'gret_async'\. Did you mean: 'greet_async'\?/,
    );
    // Once: Python's own suggestion is not appended to ours.
    const traceback = fn.diagnostics?.traceback ?? "";
    assert.equal(traceback.split("Did you mean").length, 2, traceback);
  });

  await t.step(
    "a tool called with arguments it does not take is answered with its parameters",
    async () => {
      const wrong = await server.execute({
        code: "from mcp_tools import greeter\ngreeter.greet(who='x')",
      });
      assert.equal(wrong.diagnostics?.error_type, "TypeError");
      const takes =
        /greet\(\) got an unexpected keyword argument 'who' \(it takes: mcp_tools\.greeter\.greet\(\*?,? ?name: str/;
      assert.match(wrong.diagnostics!.message, takes);
      assert.match(
        wrong.diagnostics!.traceback!,
        takes,
        "the traceback, which the text shows, says it too",
      );
      // A function of the script's own, no tool of that name imported: Python's message alone.
      const own = await server.execute({ code: "def greet(a):\n    pass\ngreet(who=1)" });
      assert.doesNotMatch(own.diagnostics!.message, /it takes/);
    },
  );
  await Deno.remove(dir, { recursive: true });
});
