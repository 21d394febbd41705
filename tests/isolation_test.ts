/**
 * Proof of isolation: hostile scripts against a real server. After each one, a normal execution
 * must still succeed, and nothing may leak into it.
 */
import type { Diagnostics } from "../src/execution/execution_result.ts";
import assert from "node:assert/strict";
import { startServer, type TestServer } from "./_helpers.ts";

const SECRET = "host-secret-7f3a9c";

async function stillWorks(server: TestServer): Promise<void> {
  const r = await server.execute({ code: "print('still fine')\n21 * 2" });
  assert.equal(r.success, true, r.text);
  assert.equal(r.stdout, "still fine\n");
  assert.equal(r.result, 42);
}

/** Deno's hint to run again with a flag is replaced by the thing that decides: the profile. */
function refusedByProfile(r: { diagnostics: Diagnostics | null }): void {
  assert.match(
    r.diagnostics!.message,
    /not granted by this sandbox's permission profile \(execute_code's `profile` parameter says what each profile grants\)/,
  );
  assert.doesNotMatch(r.diagnostics!.message + (r.diagnostics!.traceback ?? ""), /--allow-/);
}

Deno.test("hostile scripts are contained and the server keeps working", async (t) => {
  let requests = 0;
  await using http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    requests++;
    return new Response("reached");
  });
  const url = `http://127.0.0.1:${http.addr.port}/`;
  const hostFile = await Deno.makeTempFile();
  await Deno.remove(hostFile);
  await using server = await startServer({ env: { CODEMODE_TEST_SECRET: SECRET } });

  const cases: {
    name: string;
    code: string;
    timeout_s?: number;
    check: (r: Awaited<ReturnType<TestServer["execute"]>>) => void;
  }[] = [
    {
      name: "open('/etc/passwd') finds no host file",
      code: "open('/etc/passwd').read()",
      check: (r) => {
        assert.equal(r.diagnostics?.error_type, "FileNotFoundError");
        // Said, so that an agent does not take it for the host's having no such file.
        assert.match(r.diagnostics!.message, /this sandbox has no \/etc: it sees its own files/);
      },
    },
    {
      name: "open() of a host file under /tmp finds none, and says the sandbox's /tmp is its own",
      code: "open('/tmp/host-scratch/team.md').read()",
      check: (r) => {
        assert.equal(r.diagnostics?.error_type, "FileNotFoundError");
        assert.match(r.diagnostics!.message, /this sandbox's \/tmp is its own, not the host's/);
      },
    },
    {
      name: "js.Deno.readTextFileSync('/etc/passwd') is refused by Deno",
      code: "import js\njs.Deno.readTextFileSync('/etc/passwd')",
      check: (r) => {
        assert.equal(r.success, false);
        assert.match(r.diagnostics!.message, /NotCapable: Requires read access/);
        refusedByProfile(r);
        assert.doesNotMatch(r.text, /root:/);
      },
    },
    {
      name: "the host's environment is invisible",
      code: "import os, js\nprint(dict(os.environ))\njs.Deno.env.get('CODEMODE_TEST_SECRET')",
      check: (r) => {
        assert.equal(r.success, false);
        assert.match(r.diagnostics!.message, /NotCapable: Requires env access/);
        refusedByProfile(r);
        assert.ok(!r.text.includes(SECRET));
      },
    },
    {
      name: "js.fetch to a loopback server is refused",
      code: `import js\nawait js.fetch('${url}')`,
      check: (r) => {
        assert.equal(r.success, false);
        assert.match(r.diagnostics!.message, /NotCapable: Requires net access/);
        refusedByProfile(r);
        assert.equal(requests, 0);
      },
    },
    {
      name: "remote, npm and JSR imports are refused, whatever Deno's cache holds",
      code: 'import js, json\njson.loads(await js.eval("Promise.allSettled(' +
        "['https://example.com/x.js', 'npm:left-pad', 'jsr:@std/path'].map((s) => import(s)))" +
        ".then((r) => JSON.stringify(r.map((x) => x.status + ': ' + x.reason)))\"))",
      check: (r) => {
        assert.equal(r.success, true, r.text);
        const [remote, npm, jsr] = r.result as string[];
        assert.match(remote!, /^rejected: .*--no-remote is specified/);
        assert.match(npm!, /^rejected: .*--no-npm is specified/);
        assert.match(jsr!, /^rejected: .*--no-remote is specified/);
      },
    },
    {
      name: "js.Deno.Command cannot start a process",
      code:
        'import js\njs.Deno.Command.new(\'/bin/sh\', js.JSON.parse(\'{"args": ["-c", "id"]}\')).outputSync()',
      check: (r) => {
        assert.equal(r.success, false);
        assert.match(r.diagnostics!.message, /NotCapable: Requires run access/);
        refusedByProfile(r);
      },
    },
    {
      name: "writing a host file is refused",
      code: `import js\njs.Deno.writeTextFileSync('${hostFile}', 'pwned')`,
      check: (r) => {
        assert.equal(r.success, false);
        assert.match(r.diagnostics!.message, /NotCapable: Requires write access/);
        refusedByProfile(r);
        assert.throws(() => Deno.statSync(hostFile));
      },
    },
    {
      name: "an infinite loop is killed at the timeout",
      code: "while True:\n    pass",
      timeout_s: 2,
      check: (r) => {
        assert.equal(r.diagnostics?.error_type, "TIMEOUT");
        assert.match(
          r.diagnostics!.message,
          /time limit of 2 s \(timeout_s; profile "[\w-]+" allows up to \d+ s\)/,
        );
      },
    },
    {
      name: "deep recursion fails cleanly",
      code: "import sys\nsys.setrecursionlimit(10**6)\ndef f(n):\n    return f(n + 1)\nf(0)",
      check: (r) => {
        assert.equal(r.success, false);
        assert.ok(r.diagnostics !== null);
      },
    },
    {
      name: "an allocation bomb hits the memory limit",
      code: "blocks = []\nwhile True:\n    blocks.append(b'x' * (32 * 1024 * 1024))",
      check: (r) => {
        assert.equal(r.diagnostics?.error_type, "MEMORY_LIMIT", r.text);
        assert.match(
          r.diagnostics!.message,
          /Sandbox memory \d+\.\d MB exceeded the limit of 512\.0 MB/,
        );
      },
    },
    {
      name: "a print flood hits the output limit",
      code: "while True:\n    print('x' * 1000)",
      check: (r) => {
        assert.equal(r.diagnostics?.error_type, "OUTPUT_LIMIT");
        assert.ok(r.stdout.length <= 65536 + 200);
        assert.match(r.stdout, /stdout truncated: output exceeded the 65536-byte limit/);
        assert.deepEqual(r.truncated, ["stdout"]);
        assert.match(r.diagnostics!.message, /write it to a file in outputs\//);
      },
    },
    {
      name: "huge raw writes to the protocol channel are rejected",
      code: "import js\njs.Deno.stdout.writeSync(js.Uint8Array.new(20 * 1024 * 1024).fill(65))\n1",
      check: (r) => {
        assert.equal(r.diagnostics?.error_type, "POLICY_VIOLATION");
      },
    },
  ];
  for (const c of cases) {
    await t.step(c.name, async () => {
      const r = await server.execute({ code: c.code, timeout_s: c.timeout_s });
      assert.equal(r.isError, !r.success);
      c.check(r);
      await stillWorks(server);
    });
  }
});

Deno.test("nothing leaks from one execution into the next", async () => {
  await using server = await startServer();
  const first = await server.execute({
    code: [
      "import builtins, json",
      "open('/tmp/leak.txt', 'w').write('left behind')",
      "json.dumps = lambda *a, **k: 'patched'",
      "builtins.leaked = True",
      "secret_global = 1",
    ].join("\n"),
  });
  assert.equal(first.success, true, first.text);
  const second = await server.execute({
    code: [
      "import builtins, json, os",
      "[os.path.exists('/tmp/leak.txt'), json.dumps([1]), hasattr(builtins, 'leaked'),",
      " 'secret_global' in globals()]",
    ].join("\n"),
  });
  assert.equal(second.success, true, second.text);
  assert.deepEqual(second.result, [false, "[1]", false, false]);
});

Deno.test("parallel executions never see each other's output", async () => {
  await using server = await startServer();
  const runs = await Promise.all(
    [0, 1, 2, 3, 4].map((i) =>
      server.execute({
        code:
          `import asyncio\nfor _ in range(5):\n    print('run-${i}')\n    await asyncio.sleep(0.01)\nx = ${i}\nx`,
      })
    ),
  );
  runs.forEach((r, i) => {
    assert.equal(r.success, true, r.text);
    assert.equal(r.stdout, `run-${i}\n`.repeat(5));
    assert.equal(r.result, i);
  });
});
