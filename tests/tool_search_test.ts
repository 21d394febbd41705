/**
 * Tool search and the token budget, over the catalog of real tools captured from servers on npm
 * (tests/fixtures/tool_catalog/): ranking in process, then through the real server with the
 * captured tool lists served by the fixture server.
 */
import assert from "node:assert/strict";
import { normalizeTerm, splitWords, ToolSearch } from "../src/catalog/tool_search.ts";
import { synonymsOf } from "../src/catalog/search_terms.ts";
import { estimateTokens, TokenCounter } from "../src/catalog/token_count.ts";
import {
  catalogOf,
  indexTokensAt,
  loadCatalogFixtures,
  loadQueries,
  measure,
  ourRanker,
  plainBm25Ranker,
} from "../bench/search_quality.ts";
import { INDEX_TOKEN_BUDGET } from "../src/catalog/tool_index.ts";
import { ROOT, runCli, startServer, writeConfig } from "./_helpers.ts";

const fixtures = loadCatalogFixtures();

Deno.test("splitWords() splits camelCase, snake_case, kebab-case and dotted names", () => {
  assert.deepEqual(splitWords("listPullRequests"), ["list", "Pull", "Requests"]);
  assert.deepEqual(splitWords("git_stash-pop.v2"), ["git", "stash", "pop", "v2"]);
  assert.deepEqual(splitWords("getHTTPResponse"), ["get", "HTTP", "Response"]);
});

Deno.test("search matches whole words, not letters inside other words", () => {
  const search = new ToolSearch([
    {
      id: "a.thinking",
      name: "sequentialthinking",
      description: "Thinking step by step",
      params: "",
      server: "",
    },
    {
      id: "b.circleci",
      name: "circleci_status",
      description: "circleci pipelines",
      params: "",
      server: "",
    },
    {
      id: "c.in_stock",
      name: "in_stock",
      description: "Is an item in stock",
      params: "",
      server: "",
    },
  ]);
  assert.deepEqual(search.search("in", 5), [], "'in' is a stop word and matches nothing");
  assert.deepEqual(search.search("ci", 5).map((h) => h.id), [], "'ci' is not inside 'circleci'");
  assert.equal(normalizeTerm("the"), null);
  assert.ok(synonymsOf(normalizeTerm("Removing")!).includes(normalizeTerm("delete")!));
});

Deno.test("a query word finds its synonyms, below the word itself", () => {
  const search = new ToolSearch([
    {
      id: "a.delete_file",
      name: "delete_file",
      description: "Delete a file",
      params: "",
      server: "",
    },
    { id: "b.remove_tag", name: "remove_tag", description: "Remove a tag", params: "", server: "" },
    { id: "c.read_file", name: "read_file", description: "Read a file", params: "", server: "" },
  ]);
  assert.deepEqual(search.search("remove the file", 3).map((h) => h.id).slice(0, 2), [
    "a.delete_file",
    "b.remove_tag",
  ], "'remove' finds delete_file, and the file matters more than the exact verb");
  assert.deepEqual(search.search("delete", 3).map((h) => h.id), ["a.delete_file", "b.remove_tag"]);
});

Deno.test("a query that names a server finds that server's tools first", () => {
  const doc = (id: string, server: string) => ({
    id,
    name: id.split(".")[1]!,
    description: "Create a page",
    params: "",
    server,
    serverDescription: "Pages and blocks",
  });
  const search = new ToolSearch([doc("a.create_page", "wiki"), doc("b.create_page", "notion")]);
  assert.deepEqual(search.search("create a page in Notion", 2).map((h) => h.id), [
    "b.create_page",
    "a.create_page",
  ]);
  assert.equal(search.search("create a page", 2).length, 2);
});

Deno.test("a tool its description calls deprecated ranks below its replacement", () => {
  const doc = (name: string, description: string) => ({
    id: `filesystem.${name}`,
    name,
    description,
    params: "path head tail",
    server: "filesystem",
  });
  const search = new ToolSearch([
    doc(
      "read_file",
      "Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.",
    ),
    doc("read_text_file", "Read the complete contents of a file from the file system as text."),
    doc("write_file", "Create a new file or completely overwrite an existing file."),
  ]);
  assert.deepEqual(search.search("read a file", 2).map((h) => h.id), [
    "filesystem.read_text_file",
    "filesystem.read_file",
  ]);
});

Deno.test("search_tools' ranking finds the right real tool for task queries", async (t) => {
  const catalog = catalogOf(fixtures);
  const rank = ourRanker(catalog);
  const cases: [string, string][] = [
    ["take a screenshot of the current page", "playwright.browser_take_screenshot"],
    ["list open pull requests in a repo", "github.list_pull_requests"],
    ["shelve my uncommitted work", "git.git_stash"],
    ["post a message to a slack channel", "slack.slack_post_message"],
    ["get driving directions between two addresses", "google_maps.maps_directions"],
  ];
  for (const [query, wanted] of cases) {
    await t.step(`"${query}" -> ${wanted} in the top 5`, () => {
      const got = rank(query).slice(0, 5);
      assert.ok(got.includes(wanted), `${wanted} not in ${got.join(", ")}`);
    });
  }
  await t.step("over the labelled queries it beats plain BM25 on names and descriptions", () => {
    const queries = loadQueries();
    assert.ok(queries.length >= 100, `${queries.length} queries`);
    const ours = measure(rank, queries);
    const plain = measure(plainBm25Ranker(fixtures), queries);
    assert.ok(ours.recallAt5 > plain.recallAt5, `recall@5 ${ours.recallAt5} vs ${plain.recallAt5}`);
    assert.ok(ours.mrr > plain.mrr, `MRR ${ours.mrr} vs ${plain.mrr}`);
  });
});

Deno.test("the tool index keeps within its token budget at 500 tools", async () => {
  const tokens = new TokenCounter();
  await tokens.load();
  const count = (text: string) => tokens.count(text);
  const small = indexTokensAt(fixtures, 10, count);
  assert.equal(small.level, "full", "a small catalog gets one line per tool");
  const large = indexTokensAt(fixtures, 500, count);
  assert.equal(large.tools, 500);
  assert.ok(large.tokens <= INDEX_TOKEN_BUDGET, `${large.tokens} tokens`);
  assert.notEqual(large.level, "full");
});

Deno.test("search_tools and tools --index over captured real servers served by the fixture server", async (t) => {
  const dir = Deno.realPathSync(await Deno.makeTempDir());
  const servers: Record<string, unknown> = {};
  for (const name of ["github", "git", "playwright", "kubernetes"]) {
    const fixture = fixtures.find((f) => f.server === name)!;
    servers[name] = {
      description: fixture.description,
      command: "deno",
      args: [
        "run",
        "--no-prompt",
        "--allow-read",
        "catalog_server.ts",
        `tool_catalog/${name}.json`,
      ],
      cwd: `${ROOT}tests/fixtures`,
    };
  }
  const config = await writeConfig(dir, {
    servers,
    settings: { pool_size: 0, permissions_dir: `${ROOT}tests/fixtures/permissions` },
  });
  try {
    await t.step("search_tools ranks the captured tools and states the token cost", async () => {
      await using server = await startServer({ args: ["--config", config] });
      const reply = await server.client.callTool({
        name: "search_tools",
        arguments: { query: "list the pods in a namespace", limit: 3 },
      });
      const data = reply.structuredContent as { matches: { name: string }[]; tokens: number };
      assert.equal(data.matches.length, 3);
      assert.ok(
        data.matches.some((m) => m.name === "kubernetes.kubectl_get"),
        JSON.stringify(data.matches),
      );
      const text = (reply.content as { text: string }[])[0]!.text;
      assert.match(text, new RegExp(`^# 3 matches, ${data.tokens} tokens\\n`));
      assert.ok(data.tokens > 50);
    });
    await t.step("tools --index prints the index with its token counts", async () => {
      const out = await runCli(["tools", "--index", "--config", config]);
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stdout, /^github \(GitHub: /m);
      assert.match(
        out.stdout,
        /^# 102 tools: index \d+ tokens \(budget 2500, full\); all stubs \d+ tokens/m,
      );
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a long run without a space is estimated, not encoded", async () => {
  // An attacker's corpus: encoding a 250,000-letter tool name took 20 s of the host's thread.
  const counter = new TokenCounter();
  await counter.load();
  const letters = Array.from({ length: 20_000 }, (_, i) => "abcdefghij"[(i * 7) % 10]).join("");
  assert.equal(counter.count(letters), estimateTokens(letters));
  assert.notEqual(
    counter.count("hello world"),
    estimateTokens("hello world"),
    "short text is encoded",
  );
});
