/**
 * Tool schemas an upstream chooses to break the generated Python (attacker 38): a malformed
 * `$ref` escape ended the host, a description ending in triple quotes made the server's module a
 * SyntaxError (and with it every `from mcp_tools import *`), and a schema the generator cannot
 * render must cost that server its tools, never the catalog.
 */
import assert from "node:assert/strict";
import { Catalog } from "../src/catalog/catalog.ts";
import { catalogServerEntry, ROOT, startServer, writeConfig } from "./_helpers.ts";

const HOSTILE_TOOLS = [
  {
    name: "bad_ref",
    description: "A parameter whose $ref holds a malformed percent-escape.",
    inputSchema: {
      type: "object",
      properties: { a: { $ref: "#/%" }, b: { $ref: "#/$defs/%zz" } },
      $defs: {},
    },
  },
  {
    name: "nameless",
    description: "A union definition whose key has no ASCII letter to make a class name of.",
    inputSchema: {
      type: "object",
      properties: { who: { $ref: "#/$defs/用户" } },
      $defs: {
        "用户": {
          oneOf: [
            { type: "object", properties: { id: { type: "integer" } } },
            { type: "object", properties: { email: { type: "string" } } },
          ],
        },
      },
    },
  },
  {
    name: "quotes",
    description: 'Ends with triple quotes """',
    inputSchema: {
      type: "object",
      properties: {
        spec: {
          type: "object",
          description: 'Python source, e.g. """',
          properties: {
            one: { type: "string", description: 'ends with one quote"' },
            two: { type: "string", description: 'ends with two quotes""' },
            four: { type: "string", description: 'four """" and a backslash\\' },
            escaped: { type: "string", description: 'an escaped quote at the end \\"' },
          },
        },
      },
    },
  },
];

Deno.test("an upstream's hostile tool schemas leave its module valid Python and the host up", async () => {
  const dir = Deno.realPathSync(await Deno.makeTempDir());
  try {
    const fixture = `${dir}/hostile.json`;
    await Deno.writeTextFile(fixture, JSON.stringify({ server: "hostile", tools: HOSTILE_TOOLS }));
    const config = await writeConfig(dir, {
      servers: {
        hostile: catalogServerEntry(fixture),
        git: catalogServerEntry(`${ROOT}tests/fixtures/tool_catalog/git.json`),
      },
      settings: { pool_size: 1, permissions_dir: `${ROOT}tests/fixtures/permissions` },
    });
    await using server = await startServer({ args: ["--config", config] });
    const r = await server.execute({
      code: [
        "from mcp_tools import *",
        "from mcp_tools import hostile",
        "import inspect",
        "doc = inspect.getdoc(hostile.quotes)",
        "fields = hostile.Spec.__annotations__",
        "[hostile.bad_ref(a=1, b=2), sorted(fields), hostile.Spec.__doc__, 'git_status' in dir(git),",
        " str(inspect.signature(hostile.nameless))]",
      ].join("\n"),
    });
    assert.equal(r.success, true, r.text);
    const [called, fields, doc, gitToo, nameless] = r.result as [
      string,
      string[],
      string,
      boolean,
      string,
    ];
    assert.equal(called, "hostile.bad_ref called");
    assert.deepEqual(fields, ["escaped", "four", "one", "two"]);
    assert.equal(doc, 'Python source, e.g. """', "the docstring says what the schema says");
    assert.equal(gitToo, true, "the other server's module is there too");
    assert.match(
      nameless,
      /who: mcp_tools\.hostile\.Shape1 \| mcp_tools\.hostile\.Shape2/,
      `classes named with a letter first: ${nameless}`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a server whose schemas the generator cannot render loses its tools, not the catalog", () => {
  // A default value nested past the stack (an array in an array, 8,000 deep): its rendering
  // recurses once per level. (Such a tools/list cannot come over the wire whole, as the SDK's
  // parser overflows first: the catalog must not rely on that.)
  let deep: unknown = 1;
  for (let i = 0; i < 8_000; i++) deep = [deep];
  const catalog = new Catalog([
    {
      server: "deep",
      description: "",
      tools: [{
        server: "deep",
        name: "t",
        inputSchema: { type: "object", properties: { a: { type: "array", default: deep } } },
      }],
    },
    {
      server: "plain",
      description: "",
      tools: [{ server: "plain", name: "ok", inputSchema: { type: "object" } }],
    },
  ]);
  const [deepEntry, plainEntry] = catalog.servers;
  assert.deepEqual(deepEntry!.specs, []);
  assert.match(deepEntry!.error ?? "", /its tools could not be made into Python \(RangeError/);
  assert.match(deepEntry!.source, /could not be made into Python/);
  assert.deepEqual(plainEntry!.specs.map((s) => s.tool), ["ok"]);
  assert.equal(catalog.hasTool("plain", "ok"), true);
});

Deno.test("a schema's costs an upstream chooses are charged to the budget of its rendering", async (t) => {
  /** The annotations of a tool's parameters, one per property of `inputSchema`. */
  const annotations = (inputSchema: Record<string, unknown>) =>
    new Catalog([{
      server: "s",
      description: "",
      tools: [{ server: "s", name: "t", inputSchema }],
    }])
      .servers[0]!.specs[0]!.params.map((p) => p.annotation);
  const annotationOf = (schema: Record<string, unknown>) =>
    annotations({ type: "object", properties: { p: schema } })[0];
  await t.step("a required list is copied into every alternative of an anyOf beside it", () => {
    // Attacker 39: 100,000 names beside 6,000 alternatives took 54 s of the host's thread.
    const alternatives = Array.from({ length: 5 }, (_, i) => ({
      type: "object",
      properties: { [`k${i}`]: { type: "string" } },
    }));
    const names = Array.from({ length: 5_000 }, (_, i) => `r${i}`);
    assert.notEqual(annotationOf({ anyOf: alternatives }), "Any", "five alternatives render");
    assert.equal(annotationOf({ anyOf: alternatives, required: names }), "Any");
  });
  await t.step("a definition is rendered once however its pointer is spelt", () => {
    const spelt = annotations({
      type: "object",
      properties: {
        a: { $ref: "#/$defs/Item" },
        b: { $ref: "#/%24defs/Item" },
        c: { $ref: "#/$defs/%49tem" },
      },
      $defs: { Item: { type: "object", properties: { x: { type: "string" } } } },
    });
    assert.deepEqual(spelt, ["Item", "Item", "Item"]);
  });
});
