import assert from "node:assert/strict";
import { extractCode } from "../src/agent/code_extraction.ts";
import { checkAnalysis } from "../src/agent/validation.ts";
import { Catalog } from "../src/catalog/catalog.ts";
import { openAIConfigFromEnv } from "../src/agent/model_config.ts";

Deno.test("extractCode() takes code out of fences, or the reply as is", async (t) => {
  const table: [string, string, string][] = [
    ["a python fence", "Sure:\n```python\nprint(1)\n```\nDone.", "print(1)\n"],
    ["a bare fence", "```\nx = 2\nx\n```", "x = 2\nx\n"],
    ["the first of two fences", "```py\na = 1\n```\n```python\nb = 2\n```", "a = 1\n"],
    ["no fence", "  print('plain')  \n", "print('plain')\n"],
    ["an unclosed fence", "```python\nprint(3)\n", "print(3)\n"],
  ];
  for (const [name, reply, expected] of table) {
    await t.step(name, () => assert.equal(extractCode(reply), expected));
  }
});

Deno.test("checkAnalysis() checks tool calls against the catalog", () => {
  const catalog = new Catalog([{
    server: "files",
    description: "",
    tools: [{
      server: "files",
      name: "read-file",
      inputSchema: {
        type: "object",
        properties: { path: { type: "string" }, limit: { type: "integer" } },
        required: ["path"],
      },
    }],
  }]);
  const call = (over: Record<string, unknown>) => ({
    module: "files",
    function: "read_file",
    positional: 0,
    keywords: ["path"],
    star: false,
    line: 3,
    ...over,
  });
  assert.deepEqual(checkAnalysis({ calls: [call({})], outputs: true, functions: {} }, catalog), []);
  assert.deepEqual(
    checkAnalysis(
      { calls: [call({ function: "read_file_async" })], outputs: true, functions: {} },
      catalog,
    ),
    [],
  );
  assert.deepEqual(
    checkAnalysis(
      { calls: [call({ positional: 1, keywords: [] })], outputs: true, functions: {} },
      catalog,
    ),
    [],
  );
  const problems = checkAnalysis({
    calls: [
      call({ module: "nope" }),
      call({ function: "write_file" }),
      call({ keywords: ["path", "lines"] }),
      call({ keywords: [] }),
      call({ positional: 2, keywords: [] }),
    ],
    outputs: false,
    functions: {},
  }, catalog);
  assert.deepEqual(problems, [
    "line 3: nope.read_file: there is no module mcp_tools.nope (modules: files)",
    "line 3: files.write_file: no such function (files has: read_file)",
    "line 3: files.read_file: unknown argument(s) lines (accepted: path, limit)",
    "line 3: files.read_file: missing required argument(s) path",
    "line 3: files.read_file: 2 positional arguments, but only 1 allowed; pass optional ones by name",
    "the script neither prints anything nor ends with an expression to return",
  ]);
  assert.deepEqual(checkAnalysis({ syntax_error: "SyntaxError at line 1: x" }, catalog), [
    "SyntaxError at line 1: x",
  ]);
});

Deno.test("openAIConfigFromEnv() reads OpenAI-compatible and Azure settings", () => {
  const env = (vars: Record<string, string>) => (name: string) => vars[name];
  assert.equal(openAIConfigFromEnv(env({})), null);
  const openai = openAIConfigFromEnv(
    env({ OPENAI_API_KEY: "sk-test-key", OPENAI_BASE_URL: "http://h/v1", CODEMODE_MODEL: "m" }),
  )!;
  assert.equal(openai.kind, "openai");
  assert.equal(openai.baseURL, "http://h/v1");
  assert.equal(openai.model, "m");
  assert.equal(openai.tokenLimitParam, "auto");
  const azure = openAIConfigFromEnv(env({
    AZURE_OPENAI_API_KEY: "azure-test-key",
    AZURE_OPENAI_ENDPOINT: "https://x.openai.azure.com",
    AZURE_OPENAI_DEPLOYMENT: "d",
  }))!;
  assert.equal(azure.kind, "azure");
  assert.equal(azure.model, "d");
  assert.throws(
    () => openAIConfigFromEnv(env({ AZURE_OPENAI_API_KEY: "azure-test-key" })),
    /AZURE_OPENAI_ENDPOINT/,
  );
  assert.throws(
    () =>
      openAIConfigFromEnv(env({ OPENAI_API_KEY: "sk-test-key", CODEMODE_MAX_TOKENS_PARAM: "x" })),
    /CODEMODE_MAX_TOKENS_PARAM/,
  );
});

Deno.test("openAIConfigFromEnv() refuses an API key too short to scrub, naming the variable", () => {
  const env = (vars: Record<string, string>) => (name: string) => vars[name];
  assert.throws(
    () => openAIConfigFromEnv(env({ OPENAI_API_KEY: "sk-1" })),
    (e: Error) => {
      assert.ok(e instanceof TypeError);
      assert.match(
        e.message,
        /^Cannot use OPENAI_API_KEY: the secret is 4 characters; secrets shorter than 8 characters cannot be scrubbed safely/,
      );
      return true;
    },
  );
  assert.throws(
    () =>
      openAIConfigFromEnv(env({
        AZURE_OPENAI_API_KEY: "k",
        AZURE_OPENAI_ENDPOINT: "https://x.openai.azure.com",
        AZURE_OPENAI_DEPLOYMENT: "d",
      })),
    /^TypeError: Cannot use AZURE_OPENAI_API_KEY: the secret is 1 character;/,
  );
});
