/**
 * Typed stubs end to end: a script written against a stub's TypedDicts runs in the sandbox
 * against a real server; results of a tool without an outputSchema give it an observed return
 * type that survives a restart (and is not recorded when observation is off); a result that
 * breaks a declared outputSchema is reported to the script, not passed on.
 */
import assert from "node:assert/strict";
import { ROOT, startServer, writeConfig } from "./_helpers.ts";

async function typedConfig(dir: string, settings: Record<string, unknown> = {}): Promise<string> {
  // A run id in the command makes this run's server identity (and so its observations) its own.
  const run = crypto.randomUUID();
  return await writeConfig(dir, {
    servers: {
      typed: {
        description: "Tools for the typed stub tests.",
        command: "deno",
        args: ["run", "--no-prompt", "--allow-read", "catalog_server.ts", "typed_tools.json", run],
        cwd: `${ROOT}tests/fixtures`,
      },
      // A server named like a Python builtin: `from mcp_tools import *` must not take it.
      open: {
        command: "deno",
        args: ["run", "--no-prompt", "--allow-read", "catalog_server.ts", "tool_catalog/git.json"],
        cwd: `${ROOT}tests/fixtures`,
      },
      memory: {
        command: "deno",
        args: [
          "run",
          "--no-prompt",
          "--allow-env=MEMORY_FILE_PATH",
          `--allow-read=${dir}`,
          `--allow-write=${dir}`,
          "npm:@modelcontextprotocol/server-memory@2026.8.31",
        ],
        env: { MEMORY_FILE_PATH: `${dir}/memory.jsonl` },
      },
    },
    settings: { pool_size: 1, permissions_dir: `${ROOT}tests/fixtures/permissions`, ...settings },
  });
}

async function docs(
  server: { client: { callTool: (...a: never[]) => Promise<unknown> } },
  name: string,
) {
  const reply = await (server.client.callTool as (
    p: unknown,
  ) => Promise<{ structuredContent: { docs: { stub: string }[] } }>)({
    name: "get_tool_docs",
    arguments: { names: [name] },
  });
  return reply.structuredContent.docs[0]!.stub;
}

Deno.test("a script written against a stub's types runs, and results teach the stubs their types", async (t) => {
  const dir = Deno.realPathSync(await Deno.makeTempDir());
  const config = await typedConfig(dir);
  try {
    {
      await using server = await startServer({ args: ["--config", config] });

      await t.step("stubs show nested inputs as TypedDicts, recursive ones by name", async () => {
        const stub = await docs(server, "memory.create_entities");
        assert.match(
          stub,
          /class Entity\(TypedDict\):\n {4}name: str\n {4}"""The name of the entity"""/,
        );
        assert.match(
          stub,
          /def create_entities\(entities: list\[Entity\]\) -> CreateEntitiesResult:/,
        );
        const plan = await docs(server, "typed.plan_tree");
        assert.match(
          plan,
          /class Step\(TypedDict\):\n {4}title: str\n {4}"""What to do"""\n {4}kind: NotRequired\[Literal\["task", "milestone"\]\]\n {4}substeps: NotRequired\[list\[Step\]\]/,
        );
        assert.match(plan, /def plan_tree\(plan: Step, \*, from_: str \| None = None\) -> Any:/);
      });

      await t.step("a star import takes no function or module named like a builtin", async () => {
        const r = await server.execute({
          code: [
            "from mcp_tools.typed import *",
            "from mcp_tools import *",
            "from mcp_tools import typed",
            "print('printed by Python')",
            "import mcp_tools",
            "[callable(plan_tree), typed.print(text='x'), open is __builtins__.open,",
            " 'git_status' in dir(mcp_tools.open)]",
          ].join("\n"),
        });
        assert.equal(r.success, true, r.text);
        assert.equal(r.stdout, "printed by Python\n");
        assert.deepEqual(r.result, [true, "typed.print called", true, true]);
        assert.equal(r.tool_calls.count, 1);
      });

      await t.step("the script uses the TypedDicts and the call goes through", async () => {
        const r = await server.execute({
          code: [
            "import typing",
            "from mcp_tools import memory, typed",
            "from mcp_tools.memory import Entity",
            "from mcp_tools.typed import Step",
            'ada: Entity = {"name": "Ada", "entityType": "person", "observations": ["wrote code"]}',
            "made = memory.create_entities(entities=[ada])",
            'plan: Step = {"title": "ship", "substeps": [{"title": "test", "kind": "task"}]}',
            "typed.plan_tree(plan=plan)",
            "hints = typing.get_type_hints(memory.create_entities)",
            "[made['entities'][0]['name'], hints['return'].__name__, sorted(Entity.__required_keys__), sorted(typing.get_type_hints(Step))]",
          ].join("\n"),
        });
        assert.equal(r.success, true, r.text);
        assert.deepEqual(r.result, [
          "Ada",
          "CreateEntitiesResult",
          ["entityType", "name", "observations"],
          ["kind", "substeps", "title"],
        ]);
      });

      await t.step(
        "a tool without outputSchema gets the observed type of its results",
        async () => {
          assert.match(
            await docs(server, "typed.get_user"),
            /-> Any:[\s\S]*no result observed yet/,
          );
          const r = await server.execute({
            code:
              "from mcp_tools import typed\n[typed.get_user(id=1)['name'], typed.get_user(id=2)['roles']]",
          });
          assert.equal(r.success, true, r.text);
          const stub = await docs(server, "typed.get_user");
          assert.match(
            stub,
            /class GetUserResult\(TypedDict\):\n {4}id: int\n {4}name: str\n {4}roles: list\[str\]\n {4}manager: None/,
          );
          assert.match(stub, /-> GetUserResult:/);
          assert.match(stub, /observed in 2 calls; the tool declares no outputSchema/);
          assert.ok(!stub.includes("Ada"), "values are never shown");
          const inSandbox = await server.execute({
            code:
              "import typing\nfrom mcp_tools import typed\ntyping.get_type_hints(typed.get_user)['return'].__name__",
          });
          assert.equal(
            inSandbox.result,
            "GetUserResult",
            "the module the sandbox runs has the type too",
          );
        },
      );

      await t.step("keys a class body cannot hold keep the module importable", async () => {
        const call = await server.execute({
          code: "from mcp_tools import typed\ntyped.odd_names(x={'v': 'a', '__debug__': True})",
        });
        assert.equal(call.success, true, call.text);
        // Its observed return type has __debug__ and __private keys, its parameter's type
        // __debug__ and __classdict__: all written in TypedDict's functional form.
        const r = await server.execute({
          code: [
            "import typing",
            "from mcp_tools.typed import *",
            "from mcp_tools import typed",
            "hints = typing.get_type_hints(typed.odd_names)",
            "x = typing.get_args(hints['x'])[0]  # Optional",
            "[sorted(hints['return'].__annotations__), sorted(x.__annotations__)]",
          ].join("\n"),
        });
        assert.deepEqual(r.result, [
          ["__debug__", "__private", "status"],
          ["__classdict__", "__debug__", "v"],
        ], r.text);
      });

      await t.step(
        "a result that breaks the declared outputSchema is reported, not passed on",
        async () => {
          const r = await server.execute({
            code:
              "from mcp_tools import typed, ToolError\ntry:\n    typed.count_items()\nexcept ToolError as e:\n    print(str(e))",
          });
          assert.equal(r.success, true, r.text);
          assert.match(r.stdout, /typed\.count_items/);
          assert.match(r.stdout, /does not match the tool's output schema/);
          assert.equal(r.tool_calls.calls[0]!.outcome, "error");
          // Patterns are the exception, not checked (an upstream's pattern could hold the
          // host's thread for seconds): the rest of the schema is.
          const tagged = await server.execute({
            code: "from mcp_tools import typed\ntyped.tag_item()",
          });
          assert.deepEqual(tagged.result, { tag: "y" }, tagged.text);
        },
      );
    }

    await t.step("observed types survive a restart", async () => {
      await using again = await startServer({ args: ["--config", config] });
      assert.match(
        await docs(again, "typed.get_user"),
        /-> GetUserResult:[\s\S]*observed in 2 calls/,
      );
    });

    await t.step("with observe_results false, nothing is recorded", async () => {
      const offDir = `${dir}/off`;
      await Deno.mkdir(offDir);
      const off = await typedConfig(offDir, { observe_results: false });
      await using server = await startServer({ args: ["--config", off] });
      const r = await server.execute({
        code: "from mcp_tools import typed\ntyped.get_user(id=1)['id']",
      });
      assert.equal(r.result, 7, r.text);
      assert.match(await docs(server, "typed.get_user"), /-> Any:[\s\S]*no result observed yet/);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
