import assert from "node:assert/strict";
import { Catalog } from "../src/catalog/catalog.ts";
import { PythonTypes } from "../src/catalog/schema_types.ts";
import { assignIdentifiers, toIdentifier } from "../src/catalog/identifiers.ts";
import { functionSpecs, renderModule, renderStub } from "../src/catalog/python_stubs.ts";

Deno.test("toIdentifier() turns MCP names into valid Python identifiers", async (t) => {
  const table: [string, string][] = [
    ["read_file", "read_file"],
    ["get-sum", "get_sum"],
    ["files.read", "files_read"],
    ["2fa-code", "_2fa_code"],
    ["class", "class_"],
    ["from", "from_"],
    ["a--b", "a_b"],
    ["", "tool"],
    ["ünïcode", "_n_code"],
  ];
  for (const [name, expected] of table) {
    await t.step(`${JSON.stringify(name)} -> ${expected}`, () => {
      const id = toIdentifier(name);
      assert.equal(id, expected);
      assert.match(id, /^[A-Za-z_][A-Za-z0-9_]*$/);
    });
  }
});

Deno.test("assignIdentifiers() never gives two names the same identifier", () => {
  const ids = assignIdentifiers(["get-sum", "get_sum", "get.sum", "echo", "echo_async"], {
    withAsync: true,
  });
  assert.equal(ids.get("get_sum"), "get_sum");
  assert.equal(ids.get("echo"), "echo");
  const all = [...ids.values()].flatMap((id) => [id, `${id}_async`]);
  assert.equal(new Set(all).size, all.length, JSON.stringify([...ids]));
});

Deno.test("functionSpecs() renders signatures from JSON Schema", () => {
  const [spec] = functionSpecs([{
    server: "files",
    name: "search-files",
    description: 'Find files. Says """quoted""" and a \\ backslash.',
    inputSchema: {
      type: "object",
      properties: {
        pattern: { type: "string", description: "Glob" },
        "max-results": { type: "integer", default: 10 },
        from: { type: "string" },
        kind: { enum: ["file", "dir"] },
        tags: { type: "array", items: { type: "string" } },
      },
      required: ["pattern"],
    },
  }]);
  const stub = renderStub(spec!);
  assert.match(
    stub,
    /^def search_files\(pattern: str, \*, max_results: int \| None = None, from_: str \| None = None, kind: Literal\["file", "dir"\] \| None = None, tags: list\[str\] \| None = None\) -> Any:/,
  );
  assert.match(stub, /max_results \(optional, default 10, sent as "max-results"\)/);
  const module = renderModule("files", "Files", [spec!]);
  assert.ok(module.includes(stub.split("\n")[0]!), "the module runs the signature the stub shows");
  assert.match(module, /"max-results": max_results/);
  assert.match(module, /async def search_files_async\(/);
  assert.ok(!/[^\\]"""quoted/.test(module), "triple quotes in descriptions are escaped");
});

/** The annotation of a schema (nested objects as TypedDicts of their own). */
function pythonType(schema: Record<string, unknown>): string {
  return new PythonTypes(["Any"]).type(schema, schema, "Shape").annotation;
}

Deno.test("PythonTypes.type() maps JSON Schema types", () => {
  assert.equal(pythonType({ type: "number" }), "float");
  assert.equal(pythonType({ type: ["string", "null"] }), "str | None");
  assert.equal(pythonType({ anyOf: [{ type: "integer" }, { type: "string" }] }), "int | str");
  assert.equal(pythonType({ type: "object" }), "dict[str, Any]");
  assert.equal(
    pythonType({ type: "object", additionalProperties: { type: "integer" } }),
    "dict[str, int]",
  );
  assert.equal(pythonType({ enum: ["a", 1, null] }), 'Literal["a", 1] | None');
  assert.equal(pythonType({ type: "array", items: { const: "x" } }), 'list[Literal["x"]]');
  assert.equal(pythonType({ anyOf: [{ type: "string" }, { type: "null" }] }), "str | None");
  assert.equal(pythonType({}), "Any");
});

Deno.test("Catalog keeps module names unique and reports unavailable servers", () => {
  const catalog = new Catalog([
    { server: "my-server", description: "One.", tools: [] },
    { server: "my_server", description: "Two.", tools: [] },
    { server: "broken", description: "", tools: [], error: "spawn failed" },
  ]);
  const names = catalog.servers.map((s) => s.moduleName);
  assert.equal(new Set(names).size, 3);
  assert.match(catalog.index().text, /broken: unavailable: spawn failed/);
  assert.deepEqual(
    Object.keys(catalog.packages().mcp_tools!).sort(),
    ["__init__", ...names].sort(),
  );
});

Deno.test("Catalog withholds the tools of a server whose module is too large for every sandbox", () => {
  const MIB = 1024 * 1024;
  const server = (name: string, descriptionChars: number) => ({
    server: name,
    description: "",
    tools: [{
      server: name,
      name: "tool",
      description: "d".repeat(descriptionChars),
      inputSchema: { type: "object", properties: {} },
    }],
  });
  const catalog = new Catalog([
    server("huge", 2.5 * MIB),
    ...["a", "b", "c", "d", "e"].map((name) => server(name, 1.9 * MIB)),
  ]);
  const withheld = (name: string) => catalog.server(name)!.error ?? "";
  assert.match(
    withheld("huge"),
    /withheld: their Python module would be 2\.5 MiB, over the 2\.0 MiB/,
  );
  assert.equal(catalog.server("huge")!.specs.length, 0);
  for (const name of ["a", "b", "c", "d"]) assert.equal(catalog.server(name)!.error, undefined);
  assert.match(
    withheld("e"),
    /the modules of the servers listed before it take 7\.6 MiB of the 8\.0 MiB/,
  );
  const sent = Object.values(catalog.packages().mcp_tools!).join("").length;
  assert.ok(sent <= 8 * MIB, `${sent} characters sent`);
  assert.match(catalog.index().text, /huge: unavailable: its tools are withheld/);
});

Deno.test("get_tool_docs names the one function a bare name is, whatever search would find", () => {
  const tool = (server: string, name: string, description: string) => ({
    server,
    name,
    description,
    inputSchema: { type: "object", properties: {} },
  });
  // Words search drops (stop words): only the name itself can lead to the function.
  const catalog = new Catalog([
    { server: "tasks", description: "", tools: [tool("tasks", "do_it", "Runs.")] },
    { server: "other", description: "", tools: [tool("other", "it_does", "Do it, do it again.")] },
  ]);
  const [doc] = catalog.docs(["do_it"]);
  assert.equal(doc!.stub, null);
  assert.equal(doc!.meant, "tasks.do_it");
});
