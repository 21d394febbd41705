import assert from "node:assert/strict";
import { PythonTypes, renderTypedDicts } from "../src/catalog/schema_types.ts";
import { functionSpecs, renderModule, renderStub } from "../src/catalog/python_stubs.ts";
import { isFieldName, mergeShapes, scriptValue, shapeOf } from "../src/catalog/result_shapes.ts";
import {
  COUNTS_SHOWN_EVERY_MS,
  MAX_KEPT_CHARS,
  MAX_TOOLS,
  ObservedResults,
  SHAPES_SHOWN,
} from "../src/catalog/observed_results.ts";
import { createLogger } from "../src/_util/log.ts";

/** The annotation of `schema` and the source of the TypedDicts it names. */
function typed(
  schema: Record<string, unknown>,
  hint: string | { full: string; leaf: string } = "Shape",
): [string, string] {
  const types = new PythonTypes(["Any"]);
  const type = types.type(schema, schema, hint);
  return [type.annotation, renderTypedDicts(types.closure(type.uses))];
}

Deno.test("PythonTypes.type() turns JSON Schema into Python types", async (t) => {
  const table: [string, Record<string, unknown>, string][] = [
    ["string", { type: "string" }, "str"],
    ["nullable", { type: ["integer", "null"] }, "int | None"],
    ["enum with null", { enum: ["a", "b", null] }, 'Literal["a", "b"] | None'],
    ["const", { const: 3 }, "Literal[3]"],
    ["long enum", { type: "string", enum: Array.from({ length: 40 }, (_, i) => `v${i}`) }, "str"],
    [
      "anyOf",
      { anyOf: [{ type: "string" }, { type: "array", items: { type: "number" } }] },
      "str | list[float]",
    ],
    ["open object", { type: "object" }, "dict[str, Any]"],
    ["map", { type: "object", additionalProperties: { type: "boolean" } }, "dict[str, bool]"],
    [
      "tuple",
      { type: "array", prefixItems: [{ type: "string" }, { type: "integer" }] },
      "list[str | int]",
    ],
    ["unresolvable ref", { $ref: "#/$defs/missing" }, "Any"],
    ["remote ref", { $ref: "https://example.com/schema.json" }, "Any"],
    ["nothing", {}, "Any"],
  ];
  for (const [name, schema, expected] of table) {
    await t.step(name, () => assert.equal(typed(schema)[0], expected));
  }
});

Deno.test("nested objects become TypedDicts with required and NotRequired keys and field docs", () => {
  const [annotation, source] = typed({
    type: "array",
    items: {
      type: "object",
      properties: {
        oldText: { type: "string", description: "Text to search for" },
        newText: { type: "string" },
        count: { type: "integer" },
      },
      required: ["oldText", "newText"],
    },
  }, { full: "EditFileEdits", leaf: "Edits" });
  assert.equal(annotation, "list[Edit]");
  assert.equal(
    source,
    [
      "class Edit(TypedDict):",
      "    oldText: str",
      '    """Text to search for"""',
      "    newText: str",
      "    count: NotRequired[int]",
      "",
    ].join("\n"),
  );
});

Deno.test("$ref and $defs are followed, and a recursive schema names itself", () => {
  const schema = {
    type: "object",
    properties: { root: { $ref: "#/$defs/Node" } },
    $defs: {
      Node: {
        type: "object",
        properties: {
          name: { type: "string" },
          children: { type: "array", items: { $ref: "#/$defs/Node" } },
          parent: { $ref: "#/$defs/Node" },
        },
        required: ["name"],
      },
    },
  };
  const [annotation, source] = typed(schema, "Tree");
  assert.equal(annotation, "Tree");
  assert.match(
    source,
    /class Node\(TypedDict\):\n {4}name: str\n {4}children: NotRequired\[list\[Node\]\]\n {4}parent: NotRequired\[Node\]/,
  );
  assert.ok(source.indexOf("class Node") < source.indexOf("class Tree"), source);
  // A reference to the whole document is a cycle too.
  const [self] = typed({ type: "object", properties: { next: { $ref: "#" } } }, "Chain");
  assert.match(self, /^\w+$/);
});

Deno.test("allOf parts are merged into one TypedDict", () => {
  const [, source] = typed({
    allOf: [
      { type: "object", properties: { a: { type: "string" } }, required: ["a"] },
      { $ref: "#/$defs/B" },
    ],
    $defs: { B: { type: "object", properties: { b: { type: "integer" } } } },
  }, "Both");
  assert.match(source, /class Both\(TypedDict\):\n {4}a: str\n {4}b: NotRequired\[int\]/);
});

Deno.test("keys that are not names use the functional TypedDict form, and hostile text stays text", () => {
  const [, source] = typed({
    type: "object",
    description: 'Ends with a quote" and """triple""" \\',
    properties: {
      from: { type: "string", description: "a keyword" },
      'x"]: 1})\nimport os #': { type: "string", description: "line\nbreak" },
      type: { type: "string" },
    },
  }, "Odd");
  assert.match(source, /^# Ends with a quote" and """triple""" \\$/m);
  assert.match(source, /^Odd = TypedDict\("Odd", \{$/m);
  assert.match(source, /^ {4}"x\\"\]: 1\}\)\\nimport os #": "NotRequired\[str\]",$/m);
  assert.ok(!/^import os/m.test(source), source);
  // `type` is a soft keyword: a valid field name in class syntax.
  const [, soft] = typed({ type: "object", properties: { type: { type: "string" } } }, "Soft");
  assert.match(soft, /class Soft\(TypedDict\):\n {4}type: NotRequired\[str\]/);
});

Deno.test("renderStub() shows the TypedDicts a tool names, and the module defines the same", () => {
  const [spec] = functionSpecs([{
    server: "memory",
    name: "create_entities",
    inputSchema: {
      type: "object",
      properties: {
        entities: {
          type: "array",
          items: {
            type: "object",
            properties: {
              name: { type: "string" },
              observations: { type: "array", items: { type: "string" } },
            },
            required: ["name"],
          },
        },
      },
      required: ["entities"],
    },
    outputSchema: {
      type: "object",
      properties: { created: { type: "integer" } },
      required: ["created"],
    },
  }]);
  const stub = renderStub(spec!);
  assert.match(stub, /class Entity\(TypedDict\):/);
  assert.match(stub, /class CreateEntitiesResult\(TypedDict\):\n {4}created: int/);
  assert.match(
    stub,
    /def create_entities\(entities: list\[Entity\]\) -> CreateEntitiesResult:/,
  );
  assert.match(stub, /Returns: CreateEntitiesResult \(the tool's declared outputSchema\)/);
  const module = renderModule("memory", "Memory", [spec!]);
  for (const line of stub.split("\n").filter((l) => /^(class|def) /.test(l))) {
    assert.ok(module.includes(line), `the module defines ${line}`);
  }
});

Deno.test("a nested type takes its own key's name where that is free, else the full one", () => {
  const object = (properties: Record<string, unknown>) => ({ type: "object", properties });
  const entity = object({ name: { type: "string" } });
  const specs = functionSpecs([
    {
      server: "s",
      name: "add",
      inputSchema: object({ entities: { type: "array", items: entity }, options: object({}) }),
    },
    {
      server: "s",
      name: "read",
      inputSchema: object({}),
      outputSchema: object({ entities: { type: "array", items: entity } }),
    },
    {
      server: "s",
      name: "tag",
      // Another shape under a name already taken; keys that would name Python's builtins.
      inputSchema: object({
        entities: { type: "array", items: object({ id: { type: "integer" } }) },
        exceptions: { type: "array", items: object({ code: { type: "integer" } }) },
        none: object({ x: { type: "integer" } }),
        resource: object({ uri: { type: "string" } }),
      }),
    },
  ]);
  const [add, read, tag] = specs.map((spec) => renderStub(spec));
  assert.match(add!, /def add\(\*, entities: list\[Entity\] \| None = None, options: dict/);
  // The same shape met again keeps its name (a result that lists what an input took).
  assert.match(
    read!,
    /class ReadResult\(TypedDict\):\n {4}entities: NotRequired\[list\[Entity\]\]/,
  );
  assert.match(tag!, /entities: list\[TagEntity\]/);
  assert.match(tag!, /exceptions: list\[TagException\]/);
  assert.match(tag!, /none: TagNone/);
  assert.match(tag!, /resource: TagResource/);
  assert.doesNotMatch(renderModule("s", "S", specs), /^class (Exception|None|Resource)\b/m);
});

Deno.test("an observed result shape becomes the return type, marked with its call count", () => {
  const tool = {
    server: "s",
    name: "get_user",
    inputSchema: { type: "object", properties: {} },
  };
  const [unknown] = functionSpecs([tool]);
  assert.match(renderStub(unknown!), /-> Any:/);
  assert.match(renderStub(unknown!), /no outputSchema, and no result observed yet/);
  const schema = shapeOf({ id: 1, name: "x", tags: ["a"] });
  const [observed] = functionSpecs([tool], () => ({ schema, calls: 3 }));
  const stub = renderStub(observed!);
  assert.match(
    stub,
    /class GetUserResult\(TypedDict\):\n {4}id: int\n {4}name: str\n {4}tags: list\[str\]/,
  );
  assert.match(stub, /-> GetUserResult:/);
  assert.match(stub, /observed in 3 calls; the tool declares no outputSchema/);
});

Deno.test("shapeOf() and mergeShapes() keep keys and types, never values", async (t) => {
  await t.step("values do not appear", () => {
    const shape = JSON.stringify(
      shapeOf({ token: "s3cr3t-value", n: 42, nested: [{ id: "abc" }] }),
    );
    assert.ok(!shape.includes("s3cr3t") && !shape.includes("42") && !shape.includes("abc"), shape);
  });
  await t.step("keys that look like data become a mapping", () => {
    const byEmail = shapeOf({ "bob@example.com": 1, "eve@example.com": 2 });
    assert.deepEqual(byEmail, { type: "object", additionalProperties: { type: "integer" } });
    const many = shapeOf(Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, i])));
    assert.equal(many.properties, undefined);
  });
  await t.step(
    "ids, tokens and timestamps are data; names with digits and acronyms are names",
    () => {
      const data = [
        "f47ac10b-58cc-4372-a567-0e02b2c3d479", // a UUID
        "cus_N9x7Y2kLm3Qp", // a Stripe id
        "sk_live_51Hx9aBcD",
        "user_12345",
        "t1700000000",
        "AKIAIOSFODNN7EXAMPLE",
        "prod-7f9c2ba4e88f",
        "kLmQpXyZ",
        "cus_NffrFeUfNV2Hib",
        "sg-a7fec171",
        "UA1B2C3D4E", // a Slack id
        "example-corp.com",
        "README.md",
        "MDQ6VXNlcjE", // a GitHub node id
        // Attacker 49: domains and file names in any case, prefixed tokens, a JWT, numbers.
        "payroll-db.internal",
        "vpn.corp.local",
        "Q3_Layoffs_List.XLSX",
        "photo.JPG",
        "notes.markdown",
        "sk-livedeadbeefcafe",
        "xoxb-123-456-abc",
        "tok_1MqLxX2eZvKYlo2C",
        "ghp_abcdefghij",
        "dop_v1_abcdef0123",
        "sess_abcdefghijklmnop",
        "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",
        "acme.international",
        "example.xn--p1ai",
        "eyJhbGciOiJIUzI1NiJ9",
        "ssn-078-05-1120",
        "user_1234",
        "user1234",
        "ip_10_0_0_1",
      ];
      for (const key of data) {
        assert.equal(isFieldName(key), false, key);
        assert.equal(shapeOf({ [key]: 1 }).properties, undefined, key);
      }
      const names = [
        "id",
        "createdAt",
        "node_id",
        "HTTPStatusCode",
        "ipv4Address",
        "x509Certificate",
        "sha256",
        "OAuth2Token",
        "userID",
        "MAX_RETRIES",
        "address2",
        "X-RateLimit-Remaining",
        "$schema",
        "@type",
        "iso8601Date",
        "key_id",
        "skip_count",
        "token_type",
        "sha3_hash",
        "v2",
        "sk_id",
        "pk_id",
        "tok_count",
        "http_200",
        "soil_moisture_100_to_255cm",
        "x509Certificate",
      ];
      for (const key of names) assert.equal(isFieldName(key), true, key);
      // Ids of letters alone pass for names; results keyed by different ones are a mapping.
      const merged = mergeShapes(shapeOf({ deadbeef: { n: 1 } }), shapeOf({ cafebabe: { n: 2 } }));
      assert.equal(merged.properties, undefined, JSON.stringify(merged));
      assert.deepEqual(merged.additionalProperties, {
        type: "object",
        properties: { n: { type: "integer" } },
        required: ["n"],
      });
      // Names of people and projects overlap from one result to the next: still a mapping.
      const quotas = [
        { "alice.nguyen": 1, bob: 2 },
        { bob: 3, mallory: 4, "secret-project-apollo": 5 },
        { mallory: 6, "acme-merger-2026": 7 },
      ].map((q) => shapeOf({ quotas: q })).reduce(mergeShapes);
      const quotasShape = (quotas.properties as Record<string, { properties?: unknown }>).quotas!;
      assert.equal(quotasShape.properties, undefined, JSON.stringify(quotasShape));
      // A record whose optional fields come and go stays a record.
      const record = [{ id: 1, name: "a" }, { id: 2, name: "b", email: "x" }, { id: 3, name: "c" }]
        .map((r) => shapeOf(r)).reduce(mergeShapes);
      assert.deepEqual(Object.keys(record.properties!), ["id", "name", "email"]);
    },
  );
  await t.step("a key missing from one result becomes optional; types widen", () => {
    const merged = mergeShapes(shapeOf({ a: 1, b: "x" }), shapeOf({ a: 1.5 }));
    assert.deepEqual(merged, {
      type: "object",
      properties: { a: { type: "number" }, b: { type: "string" } },
      required: ["a"],
    });
    assert.deepEqual(mergeShapes(shapeOf("x"), shapeOf(null)), {
      anyOf: [{ type: "string" }, { type: "null" }],
    });
  });
  await t.step("the script's value: structured content, else one text item (JSON parsed)", () => {
    assert.deepEqual(scriptValue({ structuredContent: { a: 1 }, content: [] }), {
      value: { a: 1 },
    });
    assert.deepEqual(scriptValue({ content: [{ type: "text", text: " [1, 2]" }] }), {
      value: [1, 2],
    });
    assert.deepEqual(scriptValue({ content: [{ type: "text", text: "{not json" }] }), {
      value: "{not json",
    });
    assert.equal(
      scriptValue({ content: [{ type: "image", data: "", mimeType: "image/png" }] }),
      undefined,
    );
  });
});

Deno.test("attack: a new result shape at every call rebuilds the catalog a few times", () => {
  // Each new shape shown rebuilds the catalog: 1,700 tools called once each (or a key more in
  // every result) cost 45 ms of the host's thread a call.
  let now = 0;
  const observed = new ObservedResults(null, createLogger("error"), undefined, () => now);
  let rebuilds = 0;
  let seen = observed.version;
  for (let i = 0; i < 100; i++) {
    observed.record("api", `tool${i}`, { structuredContent: { id: i } });
    if (observed.version !== seen) {
      rebuilds++;
      seen = observed.version;
    }
  }
  assert.equal(rebuilds, SHAPES_SHOWN.burst, "the first ones show at once, the rest wait");
  now += 3000;
  assert.notEqual(observed.version, seen, "those waiting show together after 3 s");
  assert.equal(observed.get("api", "tool99")?.calls, 1);
});

Deno.test("ObservedResults keeps shapes across restarts, by server identity", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/observed.json`;
  const log = createLogger("error");
  try {
    let now = 0;
    const first = new ObservedResults(path, log, (s) => `${s}@v1`, () => now);
    await first.load();
    const v0 = first.version;
    first.record("api", "get", { structuredContent: { id: 987654 } });
    assert.ok(first.version > v0, "a new shape shows at once");
    const v1 = first.version;
    first.record("api", "get", { structuredContent: { id: 123456 } });
    assert.equal(first.version, v1, "a new count waits for settle()");
    await first.settle();
    assert.ok(first.version > v1);
    assert.equal(first.get("api", "get")?.calls, 2);
    // Each new count shown rebuilds the catalog: after the first, at most once a minute.
    const v2 = first.version;
    first.record("api", "get", { structuredContent: { id: 1 } });
    await first.settle();
    now += COUNTS_SHOWN_EVERY_MS - 1;
    assert.equal(first.version, v2, "a count shown again within the minute");
    now += 1;
    assert.ok(first.version > v2, "the count waiting is shown after the minute");
    first.record("api", "get", { structuredContent: { id: "a string now" } });
    assert.ok(first.version > v2 + 1, "a new shape still shows at once");
    await first.settle();
    const kept = await Deno.readTextFile(path);
    assert.ok(kept.includes('"id"') && !/987654|123456/.test(kept), "keys are kept, values not");

    const again = new ObservedResults(path, log, (s) => `${s}@v1`);
    await again.load();
    assert.deepEqual(again.get("api", "get"), first.get("api", "get"));
    const other = new ObservedResults(path, log, (s) => `${s}@v2`);
    await other.load();
    assert.equal(other.get("api", "get"), undefined, "another version of the server starts afresh");

    await Deno.writeTextFile(path, "{ not json");
    const corrupt = new ObservedResults(path, log);
    await corrupt.load();
    assert.equal(corrupt.get("api", "get"), undefined);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("attack: one server that keeps renaming its tools, with large shapes, cannot grow the file", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/observed.json`;
  const log = createLogger("error");
  try {
    // About 30 KB of shape a result: 36 keys of 24 integer keys each (under MAX_SHAPE_CHARS).
    const large = Object.fromEntries(
      Array.from({ length: 36 }, (_, i) => [
        `k_${i}`,
        Object.fromEntries(Array.from({ length: 24 }, (_, j) => [`f${j}`, j])),
      ]),
    );
    const observed = new ObservedResults(path, log);
    observed.record("other", "kept_a_while", { structuredContent: { id: 1 } });
    for (let i = 0; i < 600; i++) {
      observed.record("one_server", `renamed_${i}`, { structuredContent: large });
    }
    await observed.settle();
    const size = (await Deno.stat(path)).size;
    assert.ok(size <= MAX_KEPT_CHARS + 64 * 1024, `a file of ${size} bytes`);
    assert.ok(observed.get("one_server", "renamed_599"), "the last recorded is kept");
    assert.equal(observed.get("one_server", "renamed_0"), undefined, "the first is forgotten");
    assert.equal(observed.get("other", "kept_a_while"), undefined, "least recent first");
    // Small shapes: forgotten by count, the one recording's own oldest among them.
    const many = new ObservedResults(null, log);
    for (let i = 0; i < MAX_TOOLS + 10; i++) {
      many.record("one_server", `t${i}`, { structuredContent: { id: i } });
    }
    many.record("one_server", "t5", { structuredContent: { id: 5 } }); // recorded again
    assert.equal(many.get("one_server", "t4"), undefined);
    assert.ok(many.get("one_server", "t5"), "recording a tool again makes it recent");
    assert.ok(many.get("one_server", `t${MAX_TOOLS + 9}`));
    // A file kept by an older version, past the bounds, is cut as it is read.
    const old = new ObservedResults(path, log);
    const tools = Object.fromEntries(
      Array.from({ length: 300 }, (_, i) => [`t${i}`, { schema: shapeOf(large), calls: 1 }]),
    );
    await Deno.writeTextFile(path, JSON.stringify({ version: 1, tools: { one_server: tools } }));
    await old.load();
    assert.equal(old.get("one_server", "t0"), undefined);
    assert.ok(old.get("one_server", "t299"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a result's keys named like Object's own (toString, constructor) keep their types", () => {
  const merged = mergeShapes(
    shapeOf({ toString: "a", constructor: 1, id: 1 }),
    shapeOf({ id: 2, valueOf: true, constructor: 2 }),
  );
  assert.deepEqual(merged.properties, {
    toString: { type: "string" },
    constructor: { type: "integer" },
    id: { type: "integer" },
    valueOf: { type: "boolean" },
  });
  // Keys one result has count as such: two results sharing one key of three are a mapping.
  const apart = mergeShapes(shapeOf({ toString: "a", id: 1 }), shapeOf({ id: 2, other: 3 }));
  assert.equal(apart.properties, undefined, JSON.stringify(apart));
});

Deno.test("a small schema that would render exponentially many times is cut short", () => {
  // An attacker's corpus: six levels of a 40-entry type list, 2.3 KB, took 12 s of the host's
  // one thread to render (each entry renders the whole schema below it again).
  // Four levels of 12 stay within the depth limit: in full, 12 ** 4 renders.
  let schema: Record<string, unknown> = { type: "string" };
  for (let i = 0; i < 4; i++) {
    schema = { type: Array(12).fill("object"), properties: { a: schema } };
  }
  const types = new PythonTypes([]);
  types.type(schema, schema, "Arg");
  const fields = [...types.definitions().values()].flatMap((def) => def.fields);
  // Rendered in full every field is a TypedDict or `str`; cut short, some are `Any`.
  assert.ok(fields.some((field) => field.annotation === "str"), JSON.stringify(fields));
  assert.ok(fields.some((field) => field.annotation === "Any"), JSON.stringify(fields));
});

Deno.test("a tool's observed result shape stays small however its results branch", () => {
  // An attacker's corpus: each result filled a new branch of a 40x40x40 object; the merged
  // shape, saved after every execution, passed 100 MB.
  const observed = new ObservedResults("/nonexistent/observed.json", createLogger("error"));
  const level = (n: number, leaf: unknown) =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}`, leaf]));
  for (let call = 0; call < 30; call++) {
    const value = { [`k${call}`]: level(20, level(20, level(20, 1))) };
    observed.record("api", "get", { structuredContent: value });
  }
  const shape = JSON.stringify(observed.get("api", "get")!.schema);
  assert.ok(shape.length <= 32_768, `the recorded shape is ${shape.length} characters`);
  // A record whose results each add a field (kept a record, not taken for a mapping), each
  // field an object of objects: merged, 40 KB of shape, past the bound, so left open.
  const words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike " +
    "november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu";
  const fields = words.split(" ");
  const nested = (n: number, leaf: unknown) =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`field${i}`, leaf]));
  for (let call = 0; call < fields.length; call++) {
    const value = Object.fromEntries(
      fields.slice(0, call + 1).map((f) => [f, nested(8, nested(8, 1))]),
    );
    observed.record("api", "grow", { structuredContent: value });
  }
  const grown = JSON.stringify(observed.get("api", "grow")!.schema);
  assert.ok(grown.length <= 32_768, `the recorded shape is ${grown.length} characters`);
  assert.equal(shapeOf(level(20, level(20, level(20, 1)))).properties !== undefined, true);
  assert.ok(JSON.stringify(shapeOf(level(20, level(20, level(20, 1))))).length < 100_000);
});

Deno.test("anyOf and allOf that would copy their keys many times are cut short", () => {
  // An attacker's corpus: 3,000 properties beside 3,000 alternatives (85 KB) cost 2 s of the
  // host's thread, at every catalog rebuild; so did an allOf of 5,000 one-property parts.
  const properties = Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`p${i}`, {}]));
  const wide = { properties, anyOf: Array.from({ length: 3000 }, () => ({})) };
  const types = new PythonTypes([]);
  assert.equal(types.type(wide, wide, "Arg").annotation, "Any");
  const parts = {
    allOf: Array.from({ length: 5000 }, (_, i) => ({ properties: { [`q${i}`]: {} } })),
  };
  assert.equal(types.type(parts, parts, "Arg").annotation, "Any");
  assert.equal(types.definitions().size, 0, "nothing was rendered before the budget said no");
  // Ordinary ones are not: a few alternatives beside a few shared keys.
  const ordinary = {
    type: "object",
    properties: { id: { type: "string" } },
    anyOf: [{ required: ["id"] }, {}],
  };
  assert.notEqual(new PythonTypes([]).type(ordinary, ordinary, "Arg").annotation, "Any");
});

Deno.test("a schema that names one subschema many times is rendered within the budget", () => {
  // Five levels of ten properties that all point at the same schema: 10 ** 5 renders in full.
  let schema: Record<string, unknown> = { type: "string" };
  for (let i = 0; i < 5; i++) {
    const properties = Object.fromEntries(Array.from({ length: 10 }, (_, n) => [`f${n}`, schema]));
    schema = { type: "object", properties };
  }
  const types = new PythonTypes([]);
  types.type(schema, schema, "Arg");
  const fields = [...types.definitions().values()].flatMap((def) => def.fields);
  assert.ok(fields.some((field) => field.annotation === "Any"), "cut short");
});

Deno.test("a module stays valid Python whatever an upstream's names and descriptions hold", () => {
  const nul = "before\u0000after";
  const specs = functionSpecs([{
    server: "s",
    name: "odd",
    description: nul,
    inputSchema: {
      type: "object",
      description: nul,
      properties: {
        x: { $ref: "#/$defs/none" },
        y: { $ref: "#/$defs/True" },
        z: {
          type: "object",
          description: nul,
          properties: { "a-b": { type: "string", description: nul } },
        },
      },
      $defs: {
        none: { type: "object", description: nul, properties: { v: { type: "string" } } },
        True: { type: "object", properties: { w: { type: "string", description: nul } } },
      },
    },
  }]);
  const module = renderModule("s", nul, specs);
  const stub = renderStub(specs[0]!);
  for (const text of [module, stub]) {
    assert.ok(!text.includes("\u0000"), "a NUL in the source");
    assert.match(text, /before\\x00after/);
    assert.doesNotMatch(text, /^class (None|True|False)\b|^(None|True|False) = TypedDict/m);
  }
  assert.match(stub, /x: None2 \| None = None, y: True2 \| None = None/);
});

Deno.test("a chain of definitions, each a union of wrappers of the last, stays small", () => {
  // Each $ref's annotation is reused as it is: without a bound, six-fold a link (an attacker's
  // 5 KB schema ended the host with a string longer than V8 allows).
  const defs: Record<string, unknown> = {
    D0: { type: "object", properties: { x: { type: "string" } } },
  };
  for (let k = 1; k <= 30; k++) {
    const r = { $ref: `#/$defs/D${k - 1}` };
    defs[`D${k}`] = {
      anyOf: [
        { type: "array", items: r },
        { type: "array", items: { type: "array", items: r } },
        { type: "object", additionalProperties: r },
        { type: "object", additionalProperties: { type: "array", items: r } },
        { type: "array", items: { type: "object", additionalProperties: r } },
        { type: "object", additionalProperties: { type: "object", additionalProperties: r } },
      ],
    };
  }
  const properties = Object.fromEntries(
    Array.from({ length: 30 }, (_, i) => [`p${i + 1}`, { $ref: `#/$defs/D${i + 1}` }]),
  );
  const specs = functionSpecs([{
    server: "s",
    name: "t",
    inputSchema: { type: "object", properties, $defs: defs },
  }]);
  const module = renderModule("s", "", specs);
  assert.ok(module.length < 20_000, `${module.length} characters`);
  assert.match(module, /p30: Any/);
});

Deno.test("a long enum is Any, and one module's annotations are bounded however often a $ref is used", () => {
  const module = (values: number, length: number, properties: number) => {
    const defs = {
      Lit: { enum: Array.from({ length: values }, (_, i) => String(i).padEnd(length, "x")) },
    };
    const props = Object.fromEntries(
      Array.from({ length: properties }, (_, i) => [`p${i}`, { $ref: "#/$defs/Lit" }]),
    );
    return renderModule(
      "s",
      "",
      functionSpecs([{
        server: "s",
        name: "t",
        inputSchema: { type: "object", properties: props, $defs: defs },
      }]),
    );
  };
  // 30 values of 1,000 characters: past MAX_ANNOTATION, so Any, as a parameter or as a field.
  assert.match(module(30, 1000, 3), /p0: Any/);
  const [, field] = typed({
    type: "object",
    properties: { f: { enum: Array.from({ length: 30 }, (_, i) => String(i).padEnd(1000, "x")) } },
  }, "Holder");
  assert.match(field, /^class Holder\(TypedDict\):\n {4}f: NotRequired\[Any\]/m);
  // Each annotation within bounds (about 300 characters), referenced 10,000 times: without a
  // bound for the module, 6 MB of annotations (an attacker's variant ended the host).
  const many = module(20, 12, 10_000);
  assert.match(many, /p0: Literal\[/);
  assert.match(many, /p9999: Any/);
  assert.ok(many.length < 4_000_000, `${many.length} characters`);
  // The same as the fields of objects: 13 objects of 19,000 fields each (an attacker's 7.8 MB
  // tool list made a module of 98 MiB, and took 0.7 s and 500 MB at every catalog rebuild).
  const lit = { enum: Array.from({ length: 28 }, (_, i) => `v${i}_qqqqqq`) };
  const objects = Object.fromEntries(Array.from({ length: 13 }, (_, p) => [`p${p}`, {
    type: "object",
    properties: Object.fromEntries(
      Array.from({ length: 19_000 }, (_, f) => [`f${p}_${f}`, { $ref: "#/$defs/Lit" }]),
    ),
  }]));
  const fields = renderModule(
    "s",
    "",
    functionSpecs([{
      server: "s",
      name: "t",
      inputSchema: { type: "object", properties: objects, $defs: { Lit: lit } },
    }]),
  );
  assert.match(fields, /f0_0: NotRequired\[Literal\[/);
  assert.match(fields, /f0_18999: NotRequired\[Any\]/);
  assert.match(fields, /p12: Any = None/);
  assert.ok(fields.length < 4_000_000, `${fields.length} characters`);
});
