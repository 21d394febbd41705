/**
 * Attack: the host is one thread, and these read text that others write (upstream servers, a
 * model, a sandbox, a script, a client's config for `import`) with regular expressions. Each was rewritten from one that
 * backtracked over the hostile text below, holding the host for seconds to hours; each is
 * checked here for what it reads and for reading the hostile text in one pass (the bound is
 * ample: the old forms took 3 s to hours at these sizes).
 */
import assert from "node:assert/strict";
import { splitWords } from "../src/catalog/search_terms.ts";
import { extractCode } from "../src/agent/code_extraction.ts";
import { requirementName } from "../src/packages/wheels.ts";
import { estimateTokens, TokenCounter } from "../src/catalog/token_count.ts";
import { parseOutputs } from "../src/rpc/sandbox_protocol.ts";
import { shownEnvValue, withoutInlineSecrets } from "../src/clients/secrets.ts";
import { ourServerName, translateEntry } from "../src/clients/translate.ts";
import { parseEntryUrl } from "../src/clients/entry_url.ts";
import { expandPlaceholders, placeholderNames } from "../src/config/placeholders.ts";
import { parseJsonc } from "../src/_util/jsonc.ts";
import { parseConfigFile } from "../src/config/config.ts";
import { closestName } from "../src/config/did_you_mean.ts";
import { unknownArguments } from "../src/host/tools/tool_arguments.ts";
import { Catalog } from "../src/catalog/catalog.ts";
import { functionSpecs } from "../src/catalog/python_stubs.ts";
import { PythonTypes } from "../src/catalog/schema_types.ts";

/** Runs `read` and says how long it took, in ms. */
function timed(read: () => void): number {
  const started = performance.now();
  read();
  return performance.now() - started;
}

const AMPLE_MS = 5000;

Deno.test("attack: text from others is read in one pass", async (t) => {
  await t.step("splitWords(): a run of capitals (upstream descriptions)", () => {
    assert.deepEqual(splitWords("getHTTPResponse"), ["get", "HTTP", "Response"]);
    assert.deepEqual(splitWords("ABCDefGHIj"), ["ABC", "Def", "GH", "Ij"]);
    const ms = timed(() => assert.equal(splitWords("A".repeat(1 << 20)).length, 1));
    assert.ok(ms < AMPLE_MS, `${ms} ms`); // 60,000 capitals took 5.8 s
  });
  await t.step("extractCode(): a fence followed by spaces (a model's reply)", () => {
    assert.equal(extractCode("```python  \nprint(1)\n```"), "print(1)\n");
    assert.equal(extractCode("``` py\t\r\nx = 1\n```"), "x = 1\n");
    assert.equal(extractCode("```python3\nopen = 1"), "open = 1\n");
    const ms = timed(() => extractCode("```" + " ".repeat(1 << 20) + "x"));
    assert.ok(ms < AMPLE_MS, `${ms} ms`); // 30,000 spaces took 3.3 s
  });
  await t.step("requirementName(): a name followed by a line break (a script's PEP 723)", () => {
    const table: [string, string][] = [
      ["pandas>=2", "pandas"],
      ["httpx[http2]; python_version>'3'", "httpx"],
      ["pkg \n>=1", "pkg"],
      ["pkg\n", "pkg"],
      ["pkg >=1\nx", "pkg >=1\nx"],
      ["two words", "two words"],
      [" lead", " lead"],
    ];
    for (const [text, name] of table) assert.equal(requirementName(text), name, text);
    const hostile = "a".repeat(1 << 20) + "\nx\ny";
    const ms = timed(() => assert.equal(requirementName(hostile), hostile));
    assert.ok(ms < AMPLE_MS, `${ms} ms`); // 100,000 characters took 15 s
  });
  await t.step("TokenCounter: short runs of letters (upstream descriptions)", async () => {
    const counter = new TokenCounter();
    await counter.load();
    assert.equal(counter.count("x".repeat(300)), estimateTokens("x".repeat(300)));
    assert.ok(counter.count("a b c") <= 5);
    // 8 MB of words one letter short of a long run, then one: estimated, found in one pass
    // (the run was looked for again at each letter: 7.7 s).
    const text = ("w".repeat(255) + " ").repeat(32_000) + "x".repeat(256);
    let tokens = 0;
    const ms = timed(() => tokens = counter.count(text));
    assert.equal(tokens, estimateTokens(text));
    assert.ok(ms < AMPLE_MS, `${ms} ms`);
  });
  await t.step("withoutInlineSecrets(): lines of spaces in a client's config (import)", () => {
    // Annotations and setting names of several words are still read, and their values hidden.
    const code = withoutInlineSecrets("srv.run(token: Dict[str, str] = 'LEAKZ9')");
    const setting = withoutInlineSecrets("Server=db;My Secret Password = LEAKZ8;Uid=sa");
    assert.ok(!code.includes("LEAKZ9"), code);
    assert.ok(!setting.includes("LEAKZ8"), setting);
    const ms = timed(() => {
      withoutInlineSecrets("a:" + " ".repeat(1 << 20) + "x"); // 3,000 characters took 12.7 s
      withoutInlineSecrets("a" + " ".repeat(1 << 20) + "x"); // 30,000: 3.5 s
    });
    assert.ok(ms < AMPLE_MS, `${ms} ms`);
    const url = shownEnvValue("X", "see https://api.example.com/mcp/abcdef0123456789abcdef/sse");
    assert.equal(url, "see https://api.example.com/mcp/[hidden]/sse");
    const dotted = timed(() => shownEnvValue("NOTE", "a.".repeat(1 << 19))); // 100,000: 8.5 s
    assert.ok(dotted < AMPLE_MS, `${dotted} ms`);
    assert.equal(ourServerName("--my server.v2--"), "my-server-v2");
    assert.equal(ourServerName("@scope/pkg"), "scope-pkg");
    assert.equal(ourServerName("2fa"), "mcp-2fa");
    assert.equal(ourServerName("..."), "mcp");
    const named = timed(() => ourServerName("a" + "-".repeat(1 << 20) + "a!")); // 100,000: 15 s
    assert.ok(named < AMPLE_MS, `${named} ms`);
  });
  await t.step("placeholders, lists and braces never closed (import; the config)", () => {
    // What they read: a list holding a secret, a list of names, ODBC's braces, placeholders.
    const listed = withoutInlineSecrets(`node s.js --opts={"tokens": ["LEAKZ7"], "keys": ["id"]}`);
    assert.ok(!listed.includes("LEAKZ7"), listed);
    assert.match(listed, /"keys": \["id"\]/);
    const braced = withoutInlineSecrets("Driver=x;PWD={LEAKZ6;b}");
    assert.ok(!braced.includes("LEAKZ6"), braced);
    // ODBC's braces may hold a brace, and `}}` for one: the whole value is hidden.
    for (const odbc of ["PWD={p{ss;LEAKZ4}", "--token {abc{def;LEAKZ4}", "PWD={a}}b;LEAKZ4}"]) {
      assert.equal(withoutInlineSecrets(odbc).includes("LEAKZ4"), false, odbc);
    }
    // A list of numbers under a secret's name; a setting nested in settings, past the depth.
    const numbers = withoutInlineSecrets(`--config '{"password": [12345678, 87654321]}'`);
    assert.ok(!numbers.includes("12345678"), numbers);
    const deep = withoutInlineSecrets("--a=--b=--c=--d=TOKEN=LEAKZ3");
    assert.ok(!deep.includes("LEAKZ3"), deep);
    const url = parseEntryUrl("https://${HOST}/mcp?k=${KEY}")!;
    assert.equal(url.show(url.url.href), "https://${HOST}/mcp?k=${KEY}");
    const sources = { configDir: "/c", env: (name: string) => ({ A: "a" })[name] };
    assert.equal(expandPlaceholders("${A}/${B:-b}/${CONFIG_DIR}/${", sources, "x"), "a/b//c/${");
    assert.deepEqual(placeholderNames('"${A}" "${B:-b}" ${C', { required: true }), ["A"]);
    const translated = translateEntry("s", { command: "x", args: ["${env:T}", "${"] }, {
      home: "/h",
      projectRoot: "/nowhere",
      isSet: () => true,
    });
    assert.equal(translated.outcome, "import");
    assert.deepEqual(translated.outcome === "import" && translated.entry.args, ["${T}", "${"]);
    // A close, then openings with none after them: each read to the text's end, quadratic.
    // 131,072 characters each (the old forms: 40,000 took the times given).
    const ms = timed(() => {
      withoutInlineSecrets(",a:[]" + ",a:[".repeat(1 << 15)); // 0.6 s
      withoutInlineSecrets(`{"token": ["${"1".repeat(1 << 17)}]`); // 2.2 s
      withoutInlineSecrets(" a={".repeat(1 << 15)); // 0.46 s
      withoutInlineSecrets(" --a {".repeat(21_845)); // 0.41 s
      parseEntryUrl("${A}" + "${".repeat(1 << 16)); // 0.89 s
      translateEntry("s", { command: "x", args: ["${A}" + "${".repeat(1 << 16)] }, {
        home: "/h",
        projectRoot: "/nowhere",
        isSet: () => true,
      });
      expandPlaceholders("${A}" + "${A:-".repeat(26_214), sources, "x"); // 0.4 s
      placeholderNames("${A}" + "${input:".repeat(1 << 15)); // 0.3 s (262,144: 13 s)
      withoutInlineSecrets("(a=".repeat(1 << 15)); // a setting in each: 24,000 overflowed the stack
    });
    assert.ok(ms < AMPLE_MS, `${ms} ms`);
  });
  await t.step("parseJsonc(): a number's long run of zeros (a client's config; ours)", () => {
    assert.deepEqual(parseJsonc('{"a": 1.50, "b": 1500e-3, "c": 0.10}').lossyNumbers, []);
    assert.deepEqual(parseJsonc('{"a": 0.1000000000000000000001}').lossyNumbers, [
      "a: 0.1000000000000000000001",
    ]);
    const zeros = `{"a": 0.1${"0".repeat(1 << 17)}1}`;
    const ms = timed(() => assert.equal(parseJsonc(zeros).lossyNumbers.length, 1));
    assert.ok(ms < AMPLE_MS, `${ms} ms`); // 80,000 zeros took 8.8 s
  });
  await t.step("a header's value in our config: a long run of spaces inside it", () => {
    const secretsOf = (value: string) =>
      parseConfigFile(
        { servers: { h: { url: "http://127.0.0.1:9/mcp", headers: { A: value } } } },
        { path: "/c/mcp_servers.json", env: () => undefined },
      ).secrets;
    assert.ok(secretsOf(" \tLEAKZ5-long ").includes("LEAKZ5-long"));
    const ms = timed(() => secretsOf("a" + " ".repeat(1 << 17) + "b"));
    assert.ok(ms < AMPLE_MS, `${ms} ms`); // 60,000 spaces: 3 s
  });
  await t.step("closestName(): a client's long or many names against an upstream's", () => {
    assert.equal(closestName("timout_s", ["code", "timeout_s"]), "timeout_s");
    assert.equal(closestName("Profle", ["profile"]), "profile");
    assert.equal(closestName("files", ["code", "timeout_s"]), undefined);
    assert.equal(closestName("ab", ["abcd", "abc"]), "abc");
    const known = ["code", "timeout_s", "profile", "packages", "session_id"];
    const long = timed(() => assert.equal(closestName("a".repeat(9_000_000), known), undefined));
    assert.ok(long < AMPLE_MS, `${long} ms`); // 6.8 s of the host's thread
    // get_tool_docs of 50 names it lacks, 200 characters each, against 4 servers of 300 tools
    // whose 500-character names an upstream chose (each module under its 2 MiB): 88 s.
    const catalog = new Catalog(Array.from({ length: 4 }, (_, s) => ({
      server: `srv${s}`,
      description: "",
      tools: Array.from({ length: 300 }, (_, i) => ({
        server: `srv${s}`,
        name: `t${i}_${"x".repeat(500)}`,
        inputSchema: { type: "object" as const },
      })),
    })));
    assert.ok(catalog.servers.every((e) => e.error === undefined && e.specs.length === 300));
    const names = Array.from({ length: 50 }, (_, i) => `q${i}${"y".repeat(198)}`);
    const docs = timed(() => assert.equal(catalog.docs(names).length, 50));
    assert.ok(docs < AMPLE_MS, `${docs} ms`);
    const typo = `srv2.t7_${"x".repeat(499)}`;
    assert.equal(catalog.docs([typo])[0]?.meant, `srv2.t7_${"x".repeat(500)}`);
  });
  await t.step("unknownArguments(): a few names, each quoted short", () => {
    const many = Array.from({ length: 400_000 }, (_, i) => `k${i}abcdefghij`);
    const text = unknownArguments(many, ["code"]);
    assert.ok(text.length < 1000, `${text.length} characters`);
    assert.match(text, /"k4abcdefghij", and 399995 more: this tool takes only code\./);
    const one = unknownArguments(["a".repeat(9_000_000)], ["code"]);
    assert.ok(one.includes(`"${"a".repeat(64)}..."`) && one.length < 200, one.slice(0, 200));
    assert.equal(
      unknownArguments(["timeout"], ["code", "timeout_s"]),
      'Unknown argument "timeout" (did you mean "timeout_s"?): this tool takes only code, timeout_s.',
    );
  });
  await t.step("type names: an upstream's parameters that all want one name", () => {
    // `a_b`, `a__b`, `a_b_`... all make `AB`: each was numbered counting from 2 again.
    const types = new PythonTypes(["Any"]);
    const object = (field: string) => ({ type: "object", properties: { [field]: {} } });
    const names = [0, 1, 2, 3].map((i) => types.type(object(`f${i}`), {}, "AB").annotation);
    assert.deepEqual(names, ["AB", "AB2", "AB3", "AB4"]);
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 16_000; i++) {
      properties[`a${"_".repeat(1 + i % 50)}b${"_".repeat(Math.floor(i / 50))}`] = {
        type: "object",
        properties: { [`f${i}`]: { type: "integer" } },
      };
    }
    const tool = {
      server: "srv",
      name: "t",
      description: "",
      inputSchema: { type: "object" as const, properties },
    };
    const ms = timed(() => functionSpecs([tool])); // 8,000 took 8 s
    assert.ok(ms < AMPLE_MS, `${ms} ms`);
  });
  await t.step("parseOutputs(): 6 MB of base64 in a sandbox's reply", () => {
    const data = "QUJD".repeat(1_500_000);
    const budget = 5 * 1024 * 1024;
    let files: ReturnType<typeof parseOutputs> = [];
    const ms = timed(() =>
      files = parseOutputs([{ name: "big.bin", size: 4_500_000, data }], budget)
    );
    assert.equal(files[0]?.data?.length, data.length, "a valid file over 5 million characters");
    assert.ok(ms < AMPLE_MS, `${ms} ms`);
    for (const bad of ["QUJ", "QU=D", "Q===", "QUJD\n"]) {
      assert.equal(parseOutputs([{ name: "a", size: 3, data: bad }], budget)[0]?.data, undefined);
    }
    assert.equal(parseOutputs([{ name: "a", size: 2, data: "QUI=" }], budget)[0]?.data, "QUI=");
  });
});
