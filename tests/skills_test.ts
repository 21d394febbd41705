/**
 * Skills: saved once through MCP, imported by later scripts, versioned, deleted, checked before
 * saving, and marked stale when a tool they call disappears.
 */
import assert from "node:assert/strict";
import { delay, ROOT, startServer, type TestServer, writeConfig } from "./_helpers.ts";
import { SKILL_LIMITS, SkillLimitError, SkillStore } from "../src/skills/skill_store.ts";
import { LockTimeoutError } from "../src/skills/file_lock.ts";
import { Catalog } from "../src/catalog/catalog.ts";
import { silentLogger } from "../src/_util/log.ts";

const emptyCatalog = new Catalog([]);

async function setUp() {
  const root = Deno.realPathSync(await Deno.makeTempDir());
  await Deno.mkdir(`${root}/files`);
  await Deno.mkdir(`${root}/skills`);
  await Deno.writeTextFile(`${root}/files/poem.txt`, "roses are red\nviolets are blue\n");
  await Deno.writeTextFile(`${root}/skills/broken.json`, "{ this is not json");
  const config = await writeConfig(root, {
    servers: {
      filesystem: {
        command: "deno",
        args: [
          "run",
          "--no-prompt",
          "--allow-env",
          `--allow-read=${root}/files`,
          "npm:@modelcontextprotocol/server-filesystem@2026.8.31",
          `${root}/files`,
        ],
        cwd: ROOT,
      },
      dynamic: {
        command: "deno",
        args: ["run", "--no-prompt", "-A", `${ROOT}tests/fixtures/dynamic_server.ts`, "stdio"],
        cwd: ROOT,
      },
    },
    settings: { pool_size: 1, skills_dir: "skills", permissions_dir: `${ROOT}permissions` },
  });
  return { root, config };
}

async function call(server: TestServer, name: string, args: Record<string, unknown>) {
  const reply = await server.client.callTool({ name, arguments: args }, undefined, {
    timeout: 60_000,
  });
  return {
    isError: reply.isError === true,
    text: (reply.content as { text: string }[])[0]!.text,
    data: reply.structuredContent as Record<string, unknown> | undefined,
  };
}

const FIRST_LINE_V1 = `from mcp_tools import filesystem

def first_line(path):
    """The first line of a text file."""
    return filesystem.read_text_file(path=path)["content"].splitlines()[0]
`;

Deno.test("skills: save, import, overwrite, search, delete", async (t) => {
  const { root, config } = await setUp();
  await using server = await startServer({ args: ["--config", config] });
  const poem = JSON.stringify(`${root}/files/poem.txt`);

  await t.step("a corrupt skill file is reported and skipped", async () => {
    const list = await call(server, "list_skills", {});
    assert.equal(list.isError, false);
    assert.match(list.text, /skipped: Cannot load skill file .*broken\.json/);
  });

  await t.step("a saved skill that reads a file is importable from a new execution", async () => {
    const saved = await call(server, "save_skill", {
      name: "first_line",
      code: FIRST_LINE_V1,
      description: "Returns the first line of a text file.",
    });
    assert.equal(saved.isError, false, saved.text);
    assert.deepEqual(saved.data, {
      name: "first_line",
      version: 1,
      tools: [{
        server: "filesystem",
        tool: "read_text_file",
        schema: (saved.data!.tools as { schema: string }[])[0]!.schema,
      }],
    });
    const r = await server.execute({ code: `from skills import first_line\nfirst_line(${poem})` });
    assert.equal(r.success, true, r.text);
    assert.equal(r.result, "roses are red");
    assert.equal(
      r.tool_calls.calls[0]!.tool,
      "read_text_file",
      "the skill's tool call went through the host",
    );
  });

  await t.step("a skill or tool module used without its import says which import", async () => {
    const cases: [string, RegExp][] = [
      [`first_line(${poem})`, /a saved skill: write `from skills import first_line` first/],
      [
        "filesystem.list_allowed_directories()",
        /a tool module: write `from mcp_tools import filesystem` first/,
      ],
      ["from skills import first_lines", /Did you mean: 'first_line'\?/],
    ];
    for (const [code, message] of cases) {
      const r = await server.execute({ code });
      assert.equal(r.success, false, code);
      assert.match(r.diagnostics!.message, message);
      assert.match(r.text, message, "the traceback's last line says it too");
    }
  });

  await t.step("saving over a skill makes a new version and keeps the old one", async () => {
    const saved = await call(server, "save_skill", {
      name: "first_line",
      code: FIRST_LINE_V1.replace("[0]\n", "[0].upper()\n"),
      description: "Returns the first line, shouted.",
    });
    assert.equal(saved.data!.version, 2, saved.text);
    const r = await server.execute({ code: `import skills\nskills.first_line(${poem})` });
    assert.equal(r.result, "ROSES ARE RED", r.text);
    const archived = JSON.parse(await Deno.readTextFile(`${root}/skills/first_line.v1.json`));
    assert.equal(archived.version, 1);
    const got = await call(server, "get_skill", { name: "first_line" });
    assert.match(got.text, /\.upper\(\)/);
  });

  await t.step("skills show up in search_tools", async () => {
    const found = await call(server, "search_tools", { query: "first line shouted" });
    assert.match(found.text, /# skills\.first_line\ndef first_line\(path: str\) -> Any:/);
  });

  await t.step("a skill's stub carries the types its code and its calls show", async () => {
    const saved = await call(server, "save_skill", {
      name: "read_head",
      code: [
        "from mcp_tools import filesystem",
        "",
        "def read_head(path, lines=5, *, label=None, dry: bool = False):",
        '    """The head of a text file."""',
        "    if dry:",
        "        return f'{label}: {path}'",
        "    return filesystem.read_text_file(path=path, head=lines)",
        "",
      ].join("\n"),
      description: "The head of a text file.",
    });
    assert.equal(saved.isError, false, saved.text);
    const found = await call(server, "search_tools", { query: "head of a text file" });
    assert.match(
      found.text,
      /def read_head\(path: str, lines: float = 5, \*, label=None, dry: bool = False\) -> mcp_tools\.filesystem\.ReadTextFileResult \| str:/,
    );
    const r = await server.execute({ code: `from skills import read_head\nread_head(${poem}, 1)` });
    assert.equal(r.success, true, r.text);
    assert.deepEqual(r.result, { content: "roses are red" });
    assert.equal((await call(server, "delete_skill", { name: "read_head" })).isError, false);
  });

  await t.step("bad skills are refused before saving", async () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ name: "broken_syntax", code: "def broken_syntax(:\n  pass" }, /SyntaxError at line 1/],
      [
        { name: "missing", code: "def other():\n    return 1" },
        /must define a top-level function named missing \(it defines: other\)/,
      ],
      [{
        name: "bad_tool",
        code: "from mcp_tools import filesystem\ndef bad_tool():\n    return filesystem.nope()",
      }, /filesystem\.nope: no such function/],
      [{ name: "Bad-Name", code: "def x(): pass" }, /not a valid skill name/],
      // The package's own names: `from skills import __path__` is no skill.
      [{ name: "__getattr__", code: "def __getattr__(): pass" }, /not a valid skill name/],
      [{ name: "_skill_first_line", code: "def _skill_first_line(): pass" }, /not a valid skill/],
    ];
    for (const [args, message] of cases) {
      const r = await call(server, "save_skill", { description: "x", ...args });
      assert.equal(r.isError, true, args.name);
      assert.match(r.text, message);
    }
    assert.equal(((await call(server, "list_skills", {})).data!.skills as unknown[]).length, 1);
  });

  await t.step("a skill named like a module the package uses is that skill", async () => {
    // Attacker 50: `_warnings` and `_importlib` imported the package's aliases of Python's modules.
    for (const name of ["_warnings", "_importlib", "_stale"]) {
      const code = `def ${name}():\n    return "${name} skill"\n`;
      const saved = await call(server, "save_skill", { name, code, description: "x" });
      assert.equal(saved.isError, false, saved.text);
      const r = await server.execute({ code: `from skills import ${name}\n${name}()` });
      assert.equal(r.result, `${name} skill`, r.text);
      assert.equal((await call(server, "delete_skill", { name })).isError, false);
    }
  });

  await t.step("a deleted skill is gone", async () => {
    assert.equal((await call(server, "delete_skill", { name: "first_line" })).isError, false);
    assert.equal((await call(server, "delete_skill", { name: "first_line" })).isError, true);
    const r = await server.execute({ code: "from skills import first_line" });
    assert.equal(r.success, false);
    assert.match(r.diagnostics!.message, /first_line/);
  });
  await Deno.remove(root, { recursive: true });
});

Deno.test("a skill whose tool disappears is marked stale and warns on import", async () => {
  const { root, config } = await setUp();
  await using server = await startServer({ args: ["--config", config] });
  const added = await server.execute({
    code: "from mcp_tools import dynamic\ndynamic.add_tool(name='fleeting')",
  });
  assert.equal(added.success, true, added.text);
  let saved;
  for (let i = 0; i < 50; i++) {
    saved = await call(server, "save_skill", {
      name: "use_fleeting",
      // A skill may start with a future import, which must stay its first statement.
      code: "from __future__ import annotations\nfrom mcp_tools import dynamic\n\n" +
        "def use_fleeting() -> dict:\n    return dynamic.fleeting()\n",
      description: "Calls a tool that will go away.",
    });
    if (!saved.isError) break;
    await delay(100); // until the catalog has caught up with list_changed
  }
  assert.equal(saved?.isError, false, saved?.text);
  const fresh = await call(server, "list_skills", {});
  assert.equal((fresh.data!.skills as { stale: boolean }[])[0]!.stale, false);

  await server.execute({
    code: "from mcp_tools import dynamic\ndynamic.remove_tool(name='fleeting')",
  });
  let list;
  for (let i = 0; i < 50; i++) {
    list = await call(server, "list_skills", {});
    if ((list.data!.skills as { stale: boolean }[])[0]!.stale) break;
    await delay(100);
  }
  const skill = (list!.data!.skills as { stale: boolean; stale_reasons: string[] }[])[0]!;
  assert.equal(skill.stale, true);
  assert.deepEqual(skill.stale_reasons, ["dynamic.fleeting no longer exists"]);
  const r = await server.execute({ code: "from skills import use_fleeting\n'imported'" });
  assert.equal(r.result, "imported", r.text);
  assert.match(r.stderr, /skill use_fleeting may be stale: dynamic\.fleeting no longer exists/);
  await Deno.remove(root, { recursive: true });
});

Deno.test("the skills keep within their limits: count, code as sandboxes get it, archives", async (t) => {
  const dir = await Deno.makeTempDir();
  const store = new SkillStore(dir, silentLogger, {
    skills: 3,
    codeBytes: 2000,
    archivedVersions: 2,
  });
  await store.load();
  const skill = (name: string, code = `def ${name}():\n    return 1\n`) => ({
    name,
    code,
    description: "d",
    signature: "()",
    is_async: false,
    tools: [],
  });
  await t.step("past the count, a new skill is refused; saving over one is not", async () => {
    for (const name of ["a", "b", "c"]) await store.save(skill(name));
    await assert.rejects(
      store.save(skill("d")),
      (e) => e instanceof SkillLimitError && /at most 3 skills/.test(e.message),
    );
    await store.save(skill("c"));
    await store.delete("c");
    await store.save(skill("d"));
  });
  await t.step("attack: files put in the folder by hand are held to the limits too", async () => {
    const bulk = await Deno.makeTempDir();
    const roomy = new SkillStore(bulk, silentLogger);
    await roomy.load();
    for (const name of ["p", "q", "r", "s"]) await roomy.save(skill(name));
    await roomy.save(skill("t", `def t():\n    return 1\n#${"x".repeat(1900)}\n`));
    const held = new SkillStore(bulk, silentLogger, {
      skills: 3,
      codeBytes: 2000,
      archivedVersions: 2,
    });
    await held.load();
    assert.deepEqual(held.list().map((s) => s.name), ["p", "q", "r"]);
    assert.equal(held.problems.length, 2, held.problems.join("\n"));
    for (const problem of held.problems) assert.match(problem, /past the skills' limits/);
    const bytes = new SkillStore(bulk, silentLogger, {
      skills: 10,
      codeBytes: 2000,
      archivedVersions: 2,
    });
    await bytes.load();
    assert.deepEqual(bytes.list().map((s) => s.name), ["p", "q", "r", "s"], "t is past the bytes");
    await Deno.remove(bulk, { recursive: true });
    // Files each within what one may hold, past what all of them together may: not even read.
    const big = await Deno.makeTempDir();
    const filler = new SkillStore(big, silentLogger);
    await filler.load();
    for (const name of "abcdefghij") {
      await filler.save(skill(name, `def ${name}():\n    return 1\n#${"x".repeat(90_000)}\n`));
    }
    const reader = new SkillStore(big, silentLogger, {
      skills: 10,
      codeBytes: 100_000,
      archivedVersions: 2,
    });
    await reader.load();
    assert.deepEqual(reader.list().map((s) => s.name), ["a"]);
    assert.match(reader.problems.at(-1)!, /bytes, over \d+/, reader.problems.join("\n"));
    await Deno.remove(big, { recursive: true });
  });
  await t.step("code is counted as JSON, where a control character takes six bytes", async () => {
    // 400 characters, 2,400 bytes once escaped: past the limit although short.
    const code = `def e():\n    return 1\n#${"\x01".repeat(400)}\n`;
    await store.delete("d");
    await assert.rejects(
      store.save(skill("e", code)),
      (e) => e instanceof SkillLimitError && /over the limit of 0\.0 MiB/.test(e.message),
    );
  });
  await t.step("saving over a skill keeps only the newest archived versions", async () => {
    for (let i = 0; i < 5; i++) await store.save(skill("a"));
    const files = [];
    for await (const entry of Deno.readDir(dir)) {
      if (entry.name.startsWith("a.")) files.push(entry.name);
    }
    assert.deepEqual(files.sort(), ["a.json", "a.v4.json", "a.v5.json"]);
    assert.equal(store.get("a")?.version, 6);
  });
  await t.step("deleting a skill deletes its archived versions too", async () => {
    await store.delete("a");
    for await (const entry of Deno.readDir(dir)) {
      assert.ok(!entry.name.startsWith("a."), entry.name);
    }
  });
  await t.step("archived versions take no more room than the skills' code may", async () => {
    // Each version just under the limit (as JSON): past versions must not pile up on disk.
    const big = (i: number) => `def big():\n    return ${i}\n#${"x".repeat(1500)}\n`;
    for (let i = 0; i < 4; i++) await store.save(skill("big", big(i)));
    let archived = 0;
    for await (const entry of Deno.readDir(dir)) {
      if (/\.v\d+\.json$/.test(entry.name)) {
        archived += (await Deno.stat(`${dir}/${entry.name}`)).size;
      }
    }
    assert.ok(archived <= 2000, `archives take ${archived} bytes`);
    assert.ok(Deno.statSync(`${dir}/big.json`).isFile, "the current version stays");
    await store.delete("big");
  });
  await t.step("saves at the same time cannot all pass the count", async () => {
    const others = new SkillStore(await Deno.makeTempDir(), silentLogger, {
      skills: 3,
      codeBytes: 2 ** 20,
      archivedVersions: 2,
    });
    await others.load();
    const saved = await Promise.allSettled(
      ["p", "q", "r", "s", "t"].map((n) => others.save(skill(n))),
    );
    assert.equal(saved.filter((r) => r.status === "fulfilled").length, 3);
    assert.equal(others.list().length, 3);
  });
});

Deno.test("servers sharing a skills folder: no save is lost, each sees the other's changes", async (t) => {
  const dir = await Deno.makeTempDir();
  const code = (name: string, value: string) => ({
    name,
    code: `def ${name}():\n    return ${JSON.stringify(value)}\n`,
    description: value,
    signature: "()",
    is_async: false,
    tools: [],
  });
  await t.step(
    "two processes saving the same skill get distinct versions, all archived",
    async () => {
      // Both load the folder, then start saving together.
      const start = `${await Deno.makeTempDir()}/start`;
      const saver = (tag: string) =>
        new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "-A",
            `${ROOT}tests/fixtures/skill_saver.ts`,
            dir,
            "shared",
            "15",
            tag,
            start,
          ],
          stdout: "piped",
          stderr: "piped",
        }).output();
      const savers = Promise.all([saver("one"), saver("two")]);
      const ready = (tag: string) => Deno.stat(`${start}.${tag}`).then(() => true, () => false);
      for (let i = 0; i < 500 && !((await ready("one")) && (await ready("two"))); i++) {
        await delay(20);
      }
      await Deno.writeTextFile(start, "");
      const outputs = await savers;
      const versions = outputs.flatMap((o) => {
        assert.ok(o.success, new TextDecoder().decode(o.stderr));
        return JSON.parse(new TextDecoder().decode(o.stdout)) as number[];
      });
      assert.deepEqual(versions.sort((a, b) => a - b), Array.from({ length: 30 }, (_, i) => i + 1));
      const store = new SkillStore(dir, silentLogger);
      await store.load();
      assert.equal(store.get("shared")?.version, 30);
      const archived = [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) =>
        /^shared\.v\d+\.json$/.test(n)
      );
      assert.equal(archived.length, SKILL_LIMITS.archivedVersions, archived.join(" "));
    },
  );
  await t.step("a save, an overwrite and a delete by one are seen by the other", async () => {
    const one = new SkillStore(dir, silentLogger);
    const two = new SkillStore(dir, silentLogger);
    await one.load();
    await two.load();
    const before = two.version;
    await one.save(code("fresh", "first"));
    assert.equal(two.get("fresh")?.description, "first");
    assert.notEqual(two.version, before, "the sandboxes' modules are rebuilt");
    await two.save(code("fresh", "second"));
    assert.equal(one.get("fresh")?.version, 2);
    assert.match(one.packages(emptyCatalog).skills!._skill_fresh!, /second/);
    assert.equal(
      JSON.parse(await Deno.readTextFile(`${dir}/fresh.v1.json`)).description,
      "first",
      "the version two replaced is archived",
    );
    await one.delete("fresh");
    assert.equal(two.get("fresh"), undefined);
    assert.ok(!two.list().some((s) => s.name === "fresh"));
  });
  await t.step("a change mark that cannot be read leaves the skills served", async () => {
    const store = new SkillStore(dir, silentLogger);
    await store.load();
    await Deno.remove(`${dir}/.generation`);
    await Deno.mkdir(`${dir}/.generation`); // as a hostile neighbour could leave it
    assert.equal(store.get("shared")?.version, 30);
    assert.ok(store.list().length > 0);
    // A FIFO: reading it would block the host's one thread until someone writes to it.
    await Deno.remove(`${dir}/.generation`);
    const made = await new Deno.Command("mkfifo", { args: [`${dir}/.generation`] }).output();
    assert.ok(made.success);
    // A writer that comes 2 s later and marks that it found a reader: a host that waited on the
    // FIFO for a writer would have been one (and its wait ended by this), not hung for good.
    const marked = `${dir}-fifo-read`;
    const writer = new Deno.Command("sh", {
      args: ["-c", 'sleep 2; exec 3>"$1"; touch "$2"', "sh", `${dir}/.generation`, marked],
    }).spawn();
    assert.equal(store.get("shared")?.version, 30);
    await delay(2500);
    try {
      writer.kill("SIGKILL");
    } catch {
      // it found a reader and ended
    }
    await writer.status;
    const waited = await Deno.lstat(marked).then(() => true, () => false);
    await Deno.remove(marked).catch(() => {});
    assert.ok(!waited, "the host waited on the FIFO for a writer");
  });
  await Deno.remove(dir, { recursive: true });
});

Deno.test("attack: another process holding the skills lock makes a save wait its time, not forever", async (t) => {
  const dir = await Deno.makeTempDir();
  const skill = {
    name: "waited",
    code: "def waited():\n    return 1\n",
    description: "d",
    signature: "()",
    is_async: false,
    tools: [],
  };
  const store = new SkillStore(dir, silentLogger, SKILL_LIMITS, 300);
  await store.load();
  /** Saves until the late wait of a refused one has ended and a save goes through. */
  const saveOnceFree = async () => {
    for (let i = 0; i < 100; i++) {
      try {
        return await store.save(skill);
      } catch (error) {
        if (!(error instanceof LockTimeoutError)) throw error;
        await delay(50);
      }
    }
    throw new Error("the lock never came back");
  };

  await t.step("a process that holds the lock: refused in time, then refused at once", async () => {
    const holder = new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `const f = await Deno.open(${
          JSON.stringify(`${dir}/.lock`)
        }, { write: true, create: true });` +
        "await f.lock(true); console.log('held'); setTimeout(() => {}, 5000);",
      ],
      stdout: "piped",
      stderr: "null",
    }).spawn();
    const reader = holder.stdout.getReader();
    assert.match(new TextDecoder().decode((await reader.read()).value), /held/);
    await assert.rejects(
      store.save(skill),
      (e: Error) =>
        e instanceof LockTimeoutError && /has held .*\.lock for over 0\.3 s/.test(e.message),
    );
    await assert.rejects(
      store.save(skill),
      (e: Error) => e instanceof LockTimeoutError && /an earlier wait for it/.test(e.message),
    );
    holder.kill("SIGKILL");
    await holder.status;
    reader.releaseLock();
    await holder.stdout.cancel();
    assert.equal((await saveOnceFree()).version, 1, "the lock is let go of once it comes");
  });

  await t.step("a FIFO in place of the lock file: refused in time, not hung", async () => {
    await Deno.remove(`${dir}/.lock`);
    const made = await new Deno.Command("mkfifo", { args: [`${dir}/.lock`] }).output();
    assert.ok(made.success);
    // A reader, a second later, lets the pending open through, so the late wait ends (and this
    // test's ops too), and a save that waited for it is seen.
    const reader = new Deno.Command("sh", {
      args: ["-c", `sleep 1; timeout 10 cat "${dir}/.lock"`],
    })
      .output();
    await assert.rejects(store.save(skill), LockTimeoutError);
    assert.ok((await reader).success);
    await Deno.remove(`${dir}/.lock`);
    assert.equal((await saveOnceFree()).version, 2);
  });
  await Deno.remove(dir, { recursive: true });
});

Deno.test("skills_read_only: clients import and read skills, and cannot save or delete them", async () => {
  const { root, config } = await setUp();
  {
    await using server = await startServer({ args: ["--config", config] });
    const saved = await call(server, "save_skill", {
      name: "first_line",
      code: FIRST_LINE_V1,
      description: "First line of a file.",
    });
    assert.equal(saved.isError, false, saved.text);
  }
  const settings = JSON.parse(await Deno.readTextFile(config));
  settings.settings.skills_read_only = true;
  await Deno.writeTextFile(config, JSON.stringify(settings));
  await using server = await startServer({ args: ["--config", config] });
  const names = (await server.client.listTools()).tools.map((t: { name: string }) => t.name);
  assert.ok(names.includes("list_skills") && names.includes("get_skill"), names.join());
  assert.ok(!names.includes("save_skill") && !names.includes("delete_skill"), names.join());
  const refused = await server.client.callTool({
    name: "delete_skill",
    arguments: { name: "first_line" },
  }).then((r: { isError?: unknown }) => r.isError === true, () => true);
  assert.equal(refused, true, "delete_skill answered");
  const r = await server.execute({
    code: `from skills import first_line\nfirst_line(${JSON.stringify(`${root}/files/poem.txt`)})`,
  });
  assert.equal(r.result, "roses are red", r.text);
  await Deno.remove(root, { recursive: true });
});
