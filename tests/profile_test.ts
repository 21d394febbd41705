import assert from "node:assert/strict";
import {
  DEFAULT_LIMITS,
  type Profile,
  resolveProfile,
  SANDBOX_V8_TUNING,
  toDenoFlags,
} from "../src/sandbox/profile.ts";

const runtime = { readPaths: ["/opt/pyodide/pyodide.asm.wasm", "/cache/snapshot.bin"] };

function profile(overrides: Partial<Profile> = {}): Profile {
  return {
    name: "p",
    description: "",
    folders: [],
    net: [],
    allowed_tools: ["*"],
    approve: [],
    limits: { ...DEFAULT_LIMITS },
    ...overrides,
  };
}

Deno.test("toDenoFlags() maps a profile to exactly the permissions it grants", async (t) => {
  const table: { name: string; profile: Profile; expected: string[] }[] = [
    {
      name: "the default profile reads only the runtime's files and nothing else",
      profile: profile(),
      expected: [
        "--no-prompt",
        "--allow-read=/opt/pyodide/pyodide.asm.wasm,/cache/snapshot.bin",
        `--v8-flags=--max-old-space-size=512,${SANDBOX_V8_TUNING}`,
      ],
    },
    {
      name: "a read-only folder adds a read grant and no write grant",
      profile: profile({ folders: [{ host: "/srv/data", mount: "/data", mode: "ro" }] }),
      expected: [
        "--no-prompt",
        "--allow-read=/opt/pyodide/pyodide.asm.wasm,/cache/snapshot.bin,/srv/data",
        `--v8-flags=--max-old-space-size=512,${SANDBOX_V8_TUNING}`,
      ],
    },
    {
      name: "a read-write folder is readable and writable",
      profile: profile({ folders: [{ host: "/srv/ws", mount: "/workspace", mode: "rw" }] }),
      expected: [
        "--no-prompt",
        "--allow-read=/opt/pyodide/pyodide.asm.wasm,/cache/snapshot.bin,/srv/ws",
        "--allow-write=/srv/ws",
        `--v8-flags=--max-old-space-size=512,${SANDBOX_V8_TUNING}`,
      ],
    },
    {
      name: "listed hosts become one --allow-net, without duplicates",
      profile: profile({ net: ["example.org", "api.test:8443", "example.org"] }),
      expected: [
        "--no-prompt",
        "--allow-read=/opt/pyodide/pyodide.asm.wasm,/cache/snapshot.bin",
        "--allow-net=example.org,api.test:8443",
        `--v8-flags=--max-old-space-size=512,${SANDBOX_V8_TUNING}`,
      ],
    },
    {
      name: "the memory limit sets the V8 heap ceiling",
      profile: profile({ limits: { ...DEFAULT_LIMITS, memory_mb: 256 } }),
      expected: [
        "--no-prompt",
        "--allow-read=/opt/pyodide/pyodide.asm.wasm,/cache/snapshot.bin",
        `--v8-flags=--max-old-space-size=256,${SANDBOX_V8_TUNING}`,
      ],
    },
  ];
  for (const row of table) {
    await t.step(row.name, () => {
      const flags = toDenoFlags(row.profile, runtime);
      assert.deepEqual(flags, row.expected);
      for (
        const never of [
          "--allow-env",
          "--allow-run",
          "--allow-ffi",
          "--allow-sys",
          "-A",
          "--allow-all",
        ]
      ) {
        assert.ok(!flags.some((f) => f.startsWith(never)), `${never} must never be granted`);
      }
    });
  }
});

Deno.test("resolveProfile() refuses bad or dangerous profiles with a clear message", async (t) => {
  const dir = await Deno.makeTempDir();
  const ctx = {
    baseDir: dir,
    realPath: (p: string) => Deno.realPathSync(p),
    protectedPaths: [{ path: dir + "/runtime", what: "the runtime" }],
  };
  await Deno.mkdir(dir + "/runtime");
  await Deno.mkdir(dir + "/data");
  await Deno.symlink(dir + "/runtime", dir + "/sneaky");
  const cases: { name: string; raw: unknown; message: RegExp }[] = [
    { name: "not an object", raw: [], message: /not a JSON object/ },
    {
      name: "unknown field",
      raw: { allow_everything: true },
      message: /"allow_everything": unknown field/,
    },
    {
      name: "a negative limit",
      raw: { limits: { timeout_s: -1 } },
      message: /timeout_s: must be a positive number/,
    },
    { name: "an unknown limit", raw: { limits: { cpu: 1 } }, message: /cpu: unknown limit/ },
    {
      name: "a missing folder",
      raw: { folders: [{ host: "nope", mount: "/x" }] },
      message:
        /"nope" does not exist \(\/.*\/nope: a relative path starts from the profile's folder\)/,
    },
    {
      name: "a relative mount",
      raw: { folders: [{ host: "data", mount: "x" }] },
      message: /must be absolute/,
    },
    {
      name: "write access to the runtime's files",
      raw: { folders: [{ host: "runtime", mount: "/r", mode: "rw" }] },
      message: /overlaps the runtime/,
    },
    {
      name: "a symlink that resolves into the runtime's files",
      raw: { folders: [{ host: "sneaky", mount: "/r", mode: "rw" }] },
      message: /overlaps the runtime/,
    },
    {
      name: "the root folder, even read-only",
      raw: { folders: [{ host: "/", mount: "/host" }] },
      message: /the root folder is refused/,
    },
    {
      name: "a mount with ..",
      raw: { folders: [{ host: "data", mount: "/x/../etc" }] },
      message: /must be absolute without/,
    },
    { name: "a malformed host", raw: { net: ["http://x/"] }, message: /is not a host\[:port\]/ },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assert.throws(() => resolveProfile("bad", c.raw, ctx), (e: Error) => {
        assert.ok(e instanceof TypeError);
        assert.match(e.message, /profile "bad"/);
        assert.match(e.message, c.message);
        return true;
      });
    });
  }
  await t.step("a good profile resolves folders to real paths", () => {
    const p = resolveProfile("good", { folders: [{ host: "data", mount: "/data" }] }, ctx);
    assert.deepEqual(p.folders, [{
      host: Deno.realPathSync(dir + "/data"),
      mount: "/data",
      mode: "ro",
    }]);
    assert.deepEqual(p.allowed_tools, ["*"]);
    assert.deepEqual(p.limits, DEFAULT_LIMITS);
  });
  await Deno.remove(dir, { recursive: true });
});
