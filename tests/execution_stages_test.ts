/**
 * The execution stages in process, without sandbox processes: request checks, result mapping,
 * the sandbox lease and the tool gate. The tool gate talks to a real MCP server built in this
 * process over the SDK's in-memory transport. The lease's pool and session manager are stand-ins
 * (real ones need sandbox processes); tests/sessions_unit_test.ts and tests/sandbox_pool_test.ts
 * cover those.
 */
import assert from "node:assert/strict";
import type { Approver } from "../src/execution/approval.ts";
import { Client } from "@modelcontextprotocol/client";
import { InMemoryTransport, McpServer } from "@modelcontextprotocol/server";
import { z } from "zod";
import { Catalog } from "../src/catalog/catalog.ts";
import type { ExecuteRequest, Executor } from "../src/execution/executor.ts";
import { STOPPING_MESSAGE, StoppingExecutor } from "../src/execution/stopping_executor.ts";
import { toolCallLines, type ToolCallRecord } from "../src/execution/execution_result.ts";
import {
  type CheckedRequest,
  checkRequest,
  isRefusal,
  type Refusal,
  type RequestCheckDeps,
} from "../src/execution/request_checks.ts";
import { refusedResult, toExecutionResult } from "../src/execution/result_mapping.ts";
import { acquireSandbox, endsSession, type SandboxLease } from "../src/execution/sandbox_lease.ts";
import { ToolGate } from "../src/execution/tool_gate.ts";
import { PackageSources } from "../src/packages/package_sources.ts";
import { createRedactor, REDACTED } from "../src/policy/redaction.ts";
import type { ScriptError } from "../src/rpc/sandbox_protocol.ts";
import type { RawOutcome, Sandbox } from "../src/sandbox/launcher.ts";
import { PoolBusyError, type SandboxPool } from "../src/sandbox/pool.ts";
import { DEFAULT_LIMITS, type Limits, type Profile } from "../src/sandbox/profile.ts";
import {
  SessionBusyError,
  SessionClosedError,
  SessionError,
  type SessionManager,
} from "../src/sandbox/sessions.ts";
import type { UpstreamSession } from "../src/upstream/pool.ts";
import { waitAtMost } from "../src/_util/wait_at_most.ts";

function makeProfile(name = "default", limits: Partial<Limits> = {}, extra: Partial<Profile> = {}) {
  return {
    name,
    description: "",
    folders: [],
    net: [],
    allowed_tools: ["*"],
    approve: [],
    ...extra,
    limits: { ...DEFAULT_LIMITS, ...limits },
  } satisfies Profile;
}

// --- 1. Request checks ---------------------------------------------------------------------------

function checkDeps(extra: Partial<RequestCheckDeps> = {}): RequestCheckDeps {
  const profiles = new Map([
    ["default", makeProfile("default", { timeout_s: 10, max_timeout_s: 60, code_chars: 100 })],
    ["web", makeProfile("web", {}, { net: ["pypi.example"] })],
  ]);
  return { profile: (name) => profiles.get(name), defaultProfile: "default", ...extra };
}

async function refusal(request: ExecuteRequest, deps = checkDeps()): Promise<Refusal> {
  const checked = await checkRequest(request, deps);
  assert.ok(isRefusal(checked), `expected a refusal, got ${JSON.stringify(checked)}`);
  return checked;
}

Deno.test("checkRequest() refuses what the host can decide before touching a sandbox", async (t) => {
  const table: [string, ExecuteRequest, Refusal["outcome"], RegExp][] = [
    [
      "an unknown profile",
      { code: "1", profile: "root" },
      "POLICY_VIOLATION",
      /^Profile "root" does not exist or may not be used by callers$/,
    ],
    [
      "code over the profile's character limit",
      { code: "x".repeat(101) },
      "POLICY_VIOLATION",
      /^Code has 101 characters; the limit is 100 \(the profile's limits\.code_chars\): save reusable parts with save_skill/,
    ],
    [
      "a timeout above max_timeout_s",
      { code: "1", timeout_s: 61 },
      "POLICY_VIOLATION",
      /^timeout_s must be above 0 and at most 60$/,
    ],
    ["a zero timeout", { code: "1", timeout_s: 0 }, "POLICY_VIOLATION", /at most 60/],
    ["a negative timeout", { code: "1", timeout_s: -5 }, "POLICY_VIOLATION", /at most 60/],
    ["a NaN timeout", { code: "1", timeout_s: NaN }, "POLICY_VIOLATION", /at most 60/],
    [
      "an input file outside the working folder",
      { code: "1", files: { "../escape.txt": "x" } },
      "POLICY_VIOLATION",
      /^Input file name "\.\.\/escape\.txt" must be a relative path/,
    ],
    [
      "an absolute input file name",
      { code: "1", files: { "/etc/passwd": "x" } },
      "POLICY_VIOLATION",
      /must be a relative path/,
    ],
    [
      "packages with no package sources",
      { code: "1", packages: ["numpy"] },
      "PACKAGE_UNAVAILABLE",
      /^Cannot install packages: numpy: no package sources$/,
    ],
    [
      "a PEP 723 dependency with no package sources",
      { code: '# /// script\n# dependencies = ["pandas>=2"]\n# ///\n1' },
      "PACKAGE_UNAVAILABLE",
      /^Cannot install packages: pandas: no package sources$/,
    ],
  ];
  for (const [what, request, outcome, message] of table) {
    await t.step(`${what} -> ${outcome}`, async () => {
      const r = await refusal(request);
      assert.equal(r.outcome, outcome);
      assert.match(r.message, message);
      assert.equal(r.profile, request.profile ?? "default", "names the profile asked for");
    });
  }
});

Deno.test("attack: checkRequest() bounds the packages one execution may name", async (t) => {
  // A source that has every package: resolution is not the limit.
  const resolved: string[][] = [];
  const sources = () =>
    ({
      resolve: (names: string[]) => {
        resolved.push(names);
        return Promise.resolve({
          packages: names.map((name) => ({
            name,
            file: `${name}-1-py3-none-any.whl`,
            data: "AAAA",
            install_dir: "site" as const,
          })),
          problems: [],
        });
      },
    }) as unknown as RequestCheckDeps["packages"];
  await t.step("more names than packages takes, through a PEP 723 block, are refused", async () => {
    const names = Array.from({ length: 600 }, (_, i) => `"p${i}"`).join(", ");
    const code = `# /// script\n# dependencies = [${names}]\n# ///\n1`;
    const r = await refusal({ code, profile: "web" }, checkDeps({ packages: sources() }));
    assert.equal(r.outcome, "PACKAGE_UNAVAILABLE");
    assert.match(r.message, /at most 20 may be named .* got 600/);
    assert.deepEqual(resolved, [], "refused before anything is resolved");
  });
});

Deno.test("checkRequest() turns a good request into a CheckedRequest with its timeout in ms", async () => {
  const checked = await checkRequest(
    { code: "print(1)", files: { "data/in.txt": "hi" }, session_id: "s1" },
    checkDeps(),
  );
  assert.ok(!isRefusal(checked));
  assert.deepEqual(checked satisfies CheckedRequest, {
    code: "print(1)",
    profile: checkDeps().profile("default"),
    timeoutMs: 10_000, // the profile's default timeout_s
    files: [{ name: "data/in.txt", data: btoa("hi") }],
    pythonPackages: [],
    sessionId: "s1",
  });
  const asked = await checkRequest({ code: "1", timeout_s: 2.5 }, checkDeps());
  assert.ok(!isRefusal(asked));
  assert.equal(asked.timeoutMs, 2500);
});

Deno.test("checkRequest() runs an internal caller's profile override, even under an unknown name", async () => {
  const override = makeProfile("analysis", { code_chars: 1_000_000 });
  const checked = await checkRequest(
    { code: "x".repeat(500), profile: "nope" },
    checkDeps(),
    override,
  );
  assert.ok(!isRefusal(checked));
  assert.equal(checked.profile, override);
});

Deno.test("checkRequest() installs wheels from the package sources, or names the missing package", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeFile(`${dir}/demo_pkg-1.0-py3-none-any.whl`, new TextEncoder().encode("PK"));
  const platform = {
    python: "3.14.2",
    abi_version: "2026_0",
    platform: "emscripten_5_0_3",
    arch: "wasm32",
  };
  const deps = checkDeps({
    packages: new PackageSources({ wheelsDir: dir, distribution: null, index: null, platform }),
  });
  const checked = await checkRequest({ code: "1", packages: ["Demo-Pkg"] }, deps);
  assert.ok(!isRefusal(checked), JSON.stringify(checked));
  assert.deepEqual(checked.pythonPackages, [
    {
      name: "demo-pkg",
      file: "demo_pkg-1.0-py3-none-any.whl",
      data: btoa("PK"),
      install_dir: "site",
    },
  ]);
  const missing = await refusal({ code: "1", packages: ["demo-pkg", "absent"] }, deps);
  assert.equal(missing.outcome, "PACKAGE_UNAVAILABLE");
  assert.match(missing.message, /^Cannot install packages: .*absent/);
  assert.doesNotMatch(missing.message, /demo-pkg/);
  await Deno.remove(dir, { recursive: true });
});

// --- 5. Result mapping ---------------------------------------------------------------------------

function rawOutcome(fields: Partial<RawOutcome>): RawOutcome {
  return {
    reply: null,
    stop: null,
    stdout: "",
    stderr: "",
    truncated: [],
    violations: [],
    durationMs: 5,
    interrupted: null,
    ...fields,
  };
}

const scriptError = (error_type: string, message: string): ScriptError => ({
  error_type,
  message,
  traceback: `Traceback:\n  line 2\n${error_type}: ${message}`,
  lineno: 2,
});

const facts = (calls: ToolCallRecord[] = [], extra = {}) => ({
  profile: makeProfile("work", { output_bytes: 40 }),
  calls,
  elapsedMs: 12.345,
  ...extra,
});

Deno.test("toExecutionResult() reports a host stop as the host's outcome", () => {
  const r = toExecutionResult(
    rawOutcome({
      stop: { reason: "MEMORY_LIMIT", message: "The sandbox used more than 512 MB" },
      stdout: "partial\n",
      violations: ["v1", "v2"],
    }),
    facts(),
  );
  assert.equal(r.success, false);
  assert.equal(r.result, null);
  assert.deepEqual(r.diagnostics, {
    error_type: "MEMORY_LIMIT",
    reported_by: "host",
    message: "The sandbox used more than 512 MB",
  });
  assert.equal(r.stdout, "partial\n");
  assert.equal(r.protocol_violations, 2);
  assert.equal(r.duration_ms, 12.3);
  assert.equal(r.profile, "work");
});

Deno.test("toExecutionResult() calls a run with no answer and no stop a crash", () => {
  const r = toExecutionResult(rawOutcome({}), facts());
  assert.deepEqual(r.diagnostics, {
    error_type: "SANDBOX_CRASHED",
    reported_by: "host",
    message: "The sandbox gave no answer",
  });
});

Deno.test("toExecutionResult() reports an interrupted session run as TIMEOUT whose state is kept", () => {
  const error = scriptError("KeyboardInterrupt", "");
  const r = toExecutionResult(
    rawOutcome({ reply: { ok: false, error }, interrupted: "The script ran past 2 s" }),
    facts(),
  );
  assert.equal(r.success, false);
  assert.equal(r.diagnostics?.error_type, "TIMEOUT");
  assert.equal(r.diagnostics?.reported_by, "host");
  assert.match(r.diagnostics!.message, /^The script ran past 2 s; .*state is kept$/);
  assert.equal(r.diagnostics?.traceback, error.traceback.slice(0, 40));
});

Deno.test("toExecutionResult() returns a success's result, truncated when over output_bytes", () => {
  const small = toExecutionResult(
    rawOutcome({ reply: { ok: true, result: { a: [1, 2] } }, stdout: "hi\n" }),
    facts(),
  );
  assert.equal(small.success, true);
  assert.deepEqual(small.result, { a: [1, 2] });
  assert.equal(small.diagnostics, null);

  const big = toExecutionResult(
    rawOutcome({ reply: { ok: true, result: "x".repeat(100) } }),
    facts(),
  );
  assert.equal(big.success, true);
  assert.equal(
    big.result,
    `"${"x".repeat(39)}... [result truncated: 102 chars, limit 40]`,
  );
  assert.deepEqual(big.truncated, ["result"]);
  assert.equal(small.truncated, undefined);

  // The sandbox cut it (its repr, within the limit), and output was cut too.
  const cutThere = toExecutionResult(
    rawOutcome({
      reply: { ok: true, result: "'xx... [cut]", result_cut: true },
      truncated: ["stderr"],
    }),
    facts(),
  );
  assert.deepEqual(cutThere.truncated, ["stderr", "result"]);
});

Deno.test("toExecutionResult() lists outputs with their MIME types and the gate's calls", () => {
  const calls: ToolCallRecord[] = [{ server: "fs", tool: "read", outcome: "ok", duration_ms: 3 }];
  const r = toExecutionResult(
    rawOutcome({
      reply: { ok: true, result: 1, outputs: [{ name: "plot.png", size: 3, data: "AAAA" }] },
    }),
    facts(calls),
  );
  assert.deepEqual(r.outputs, [{
    name: "plot.png",
    size: 3,
    data: "AAAA",
    mime_type: "image/png",
  }]);
  assert.deepEqual(r.tool_calls, { count: 1, calls });
});

Deno.test("toExecutionResult() reports the script's own exception as the script's word", async (t) => {
  await t.step("a ValueError", () => {
    const error = scriptError("ValueError", "bad input");
    const r = toExecutionResult(rawOutcome({ reply: { ok: false, error } }), facts());
    assert.deepEqual(r.diagnostics, {
      error_type: "ValueError",
      reported_by: "script",
      message: "bad input",
      traceback: error.traceback.slice(0, 40),
      lineno: 2,
    });
  });
  await t.step("an exception named like a host outcome is a ScriptError", () => {
    const error = scriptError("MEMORY_LIMIT", "fake");
    const r = toExecutionResult(rawOutcome({ reply: { ok: false, error } }), facts());
    assert.equal(r.diagnostics?.error_type, "ScriptError");
    assert.equal(r.diagnostics?.reported_by, "script");
    assert.equal(r.diagnostics?.message, "MEMORY_LIMIT: fake");
  });
});

Deno.test("an uncaught ToolDenied is TOOL_DENIED only when the gate denied a call of the run", async (t) => {
  const raised = scriptError("ToolDenied", "made up");
  await t.step("no call was denied: the script's own ToolDenied", () => {
    const calls: ToolCallRecord[] = [{ server: "fs", tool: "read", outcome: "ok", duration_ms: 1 }];
    const r = toExecutionResult(rawOutcome({ reply: { ok: false, error: raised } }), facts(calls));
    assert.equal(r.diagnostics?.error_type, "ToolDenied");
    assert.equal(r.diagnostics?.reported_by, "script");
    assert.equal(r.diagnostics?.message, "made up");
  });
  await t.step("a denied call: TOOL_DENIED with the host's record", () => {
    const calls: ToolCallRecord[] = [
      { server: "fs", tool: "read", outcome: "ok", duration_ms: 1 },
      {
        server: "fs",
        tool: "rm",
        outcome: "denied",
        duration_ms: 0,
        error: "the profile does not allow fs.rm",
      },
    ];
    const r = toExecutionResult(rawOutcome({ reply: { ok: false, error: raised } }), {
      ...facts(calls),
      profile: makeProfile("work"),
    });
    assert.equal(r.diagnostics?.error_type, "TOOL_DENIED");
    assert.equal(r.diagnostics?.reported_by, "host");
    assert.equal(r.diagnostics?.message, "fs.rm was denied: the profile does not allow fs.rm");
    assert.equal(r.diagnostics?.lineno, 2);
  });
});

Deno.test("toExecutionResult() says when a failed run lost its session's state", () => {
  const stopped = toExecutionResult(
    rawOutcome({ stop: { reason: "TIMEOUT", message: "The script ran past 1 s" } }),
    facts([], { lostSession: "s1" }),
  );
  assert.equal(
    stopped.diagnostics?.message,
    'The script ran past 1 s; session "s1" was closed and its state is lost',
  );
  const fatal = toExecutionResult(
    rawOutcome({ reply: { ok: false, error: scriptError("MemoryError", "oom"), fatal: true } }),
    facts([], { lostSession: "s2" }),
  );
  assert.equal(fatal.diagnostics?.message, 'oom; session "s2" was closed and its state is lost');
});

Deno.test("refusedResult() is a failed result the host reports, with nothing run", () => {
  const r = refusedResult({ profile: "web", outcome: "BUSY", message: "Cannot run now" }, 7.26);
  assert.deepEqual(r, {
    success: false,
    stdout: "",
    stderr: "",
    result: null,
    duration_ms: 7.3,
    profile: "web",
    tool_calls: { count: 0, calls: [] },
    protocol_violations: 0,
    outputs: [],
    diagnostics: { error_type: "BUSY", reported_by: "host", message: "Cannot run now" },
  });
});

// --- 2. The sandbox lease (stand-in pool and session manager) ----------------------------------

function stubSandbox(profile: Profile) {
  const stub = {
    profile,
    disposed: 0,
    [Symbol.asyncDispose]: () => (stub.disposed++, Promise.resolve()),
  };
  return stub;
}

function stubPool(acquire: (profile: Profile) => Promise<unknown>) {
  const signals: (AbortSignal | undefined)[] = [];
  const pool = {
    acquire: (profile: Profile, signal?: AbortSignal) => (signals.push(signal), acquire(profile)),
  } as unknown as SandboxPool;
  return { pool, signals };
}

/**
 * Sessions whose sandbox `get` gives (or throws why not); a new one gets the id "s_issued".
 */
function stubSessions(get: (owner: string, id: string, profile: Profile) => unknown) {
  const released: [string, string, boolean][] = [];
  const sessions = {
    open: (owner: string, profile: Profile) =>
      Promise.resolve().then(() => ({ id: "s_issued", sandbox: get(owner, "new", profile) })),
    resume: get,
    release: (owner: string, id: string, stopped: boolean) => released.push([owner, id, stopped]),
  } as unknown as SessionManager;
  return { sessions, released };
}

const okOutcome = rawOutcome({ reply: { ok: true, result: 1 } });
const stoppedOutcome = rawOutcome({ stop: { reason: "TIMEOUT", message: "ran past 1 s" } });
const fatalOutcome = rawOutcome({
  reply: { ok: false, error: scriptError("MemoryError", "oom"), fatal: true },
});

function assertLease(value: SandboxLease | { outcome: string }): asserts value is SandboxLease {
  assert.ok("sandbox" in value, `expected a lease, got ${JSON.stringify(value)}`);
}

Deno.test("acquireSandbox() without a session takes a pool sandbox and disposes of it on release", async () => {
  const profile = makeProfile();
  const sandbox = stubSandbox(profile);
  const { pool, signals } = stubPool(() => Promise.resolve(sandbox));
  const { sessions } = stubSessions(() => {
    throw new Error("not used");
  });
  const signal = new AbortController().signal;
  const lease = await acquireSandbox({ profile, owner: "o", signal }, { pool, sessions });
  assertLease(lease);
  assert.equal(lease.sandbox, sandbox as unknown as Sandbox);
  assert.deepEqual(signals, [signal], "the caller's signal reaches the pool");
  assert.equal(sandbox.disposed, 0);
  assert.equal(lease.release(okOutcome), null);
  assert.equal(sandbox.disposed, 1);
});

Deno.test("acquireSandbox() given up on while it waits is CANCELLED, not a crash", async () => {
  // The server's stop cancels calls waiting for a sandbox too (attacker 57: SANDBOX_CRASHED).
  const profile = makeProfile();
  const stop = new AbortController();
  const { pool } = stubPool(() => {
    stop.abort();
    return Promise.reject(new Error("Cannot run: cancelled while waiting for a sandbox"));
  });
  const { sessions } = stubSessions(() => {
    throw new Error("not used");
  });
  const lease = await acquireSandbox({ profile, owner: "o", signal: stop.signal }, {
    pool,
    sessions,
  });
  assert.deepEqual(lease, {
    outcome: "CANCELLED",
    message: "Cannot run: cancelled while waiting for a sandbox",
  });
});

Deno.test("acquireSandbox() with a session gives the sandbox back, ending the session when the run did", async (t) => {
  const profile = makeProfile();
  const table: [string, RawOutcome | undefined, boolean][] = [
    ["a run that answered", okOutcome, false],
    [
      "a script's exception",
      rawOutcome({ reply: { ok: false, error: scriptError("E", "x") } }),
      false,
    ],
    ["a host stop", stoppedOutcome, true],
    ["a fatal reply", fatalOutcome, true],
    ["no outcome at all", undefined, true],
  ];
  for (const [what, outcome, ends] of table) {
    for (const [asked, id] of [["new", "s_issued"], ["s1", "s1"]]) {
      await t.step(`${asked}: ${what} -> ${ends ? "session lost" : "session kept"}`, async () => {
        const sandbox = stubSandbox(profile);
        const opened: [string, string, string][] = [];
        const { sessions, released } = stubSessions((owner, id, p) => {
          opened.push([owner, id, p.name]);
          return sandbox;
        });
        const { pool } = stubPool(() => Promise.reject(new Error("not used")));
        const lease = await acquireSandbox(
          { profile, owner: "conn-1", sessionId: asked },
          { pool, sessions },
        );
        assertLease(lease);
        assert.equal(lease.sessionId, id, "the lease names the session (a new one's issued id)");
        assert.deepEqual(opened, [["conn-1", asked, "default"]]);
        assert.deepEqual(lease.release(outcome), ends ? { lostSession: id } : null);
        assert.deepEqual(released, [["conn-1", id, ends]]);
        assert.equal(sandbox.disposed, 0, "the session manager owns the sandbox");
      });
    }
  }
});

Deno.test("acquireSandbox() maps why there is no sandbox to an outcome", async (t) => {
  const profile = makeProfile();
  const table: [string, Error, string][] = [
    ["a full pool queue", new PoolBusyError(8), "BUSY"],
    ["a busy session", new SessionBusyError("s1"), "BUSY"],
    ["a refused session", new SessionError("session_id must be 1-64 letters"), "POLICY_VIOLATION"],
    ["a boot failure", new Error("Cannot boot sandbox: the process exited"), "SANDBOX_CRASHED"],
    [
      "a session closed while it started",
      new SessionClosedError("Execution stopped: close_session closed its session"),
      "CANCELLED",
    ],
  ];
  for (const [what, error, outcome] of table) {
    await t.step(`${what} -> ${outcome}`, async () => {
      const { pool } = stubPool(() => Promise.reject(error));
      const { sessions } = stubSessions(() => {
        throw error;
      });
      for (const sessionId of [undefined, "new", "s1"]) {
        assert.deepEqual(
          await acquireSandbox({ profile, owner: "o", sessionId }, { pool, sessions }),
          { outcome, message: error.message },
        );
      }
    });
  }
  await t.step("a session id where sessions are not available -> POLICY_VIOLATION", async () => {
    const { pool } = stubPool(() => Promise.reject(new Error("not used")));
    assert.deepEqual(await acquireSandbox({ profile, owner: "o", sessionId: "s1" }, { pool }), {
      outcome: "POLICY_VIOLATION",
      message: "Sessions are not available here",
    });
  });
});

Deno.test("endsSession() is true only for a host stop or a fatal reply", async (t) => {
  const table: [string, RawOutcome, boolean][] = [
    ["success", okOutcome, false],
    ["a script error", rawOutcome({ reply: { ok: false, error: scriptError("E", "x") } }), false],
    ["fatal: false", rawOutcome({ reply: { ok: false, error: scriptError("E", "x") } }), false],
    ["an interrupt", rawOutcome({ reply: okOutcome.reply, interrupted: "ran past 1 s" }), false],
    ["a host stop", stoppedOutcome, true],
    [
      "a stop with a crash",
      rawOutcome({ stop: { reason: "SANDBOX_CRASHED", message: "x" } }),
      true,
    ],
    ["a fatal reply", fatalOutcome, true],
  ];
  for (const [what, outcome, ends] of table) {
    await t.step(`${what} -> ${ends}`, () => assert.equal(endsSession(outcome), ends));
  }
});

// --- 4. The tool gate, against a real in-process MCP server -------------------------------------

const SECRET = "sk-test-9f8e7d6c5b4a";

/** A real MCP server named "mem" with a few tools, and a client connected to it in memory. */
async function startUpstream() {
  const server = new McpServer({ name: "mem", version: "1.0.0" });
  const slow = Promise.withResolvers<void>();
  const slowCancelled = Promise.withResolvers<void>();
  const empty = z.object({});
  const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] });
  server.registerTool(
    "echo",
    { description: "Echoes its text.", inputSchema: z.object({ text: z.string() }) },
    (args: { text: string }) => text(`echo: ${args.text}`),
  );
  server.registerTool(
    "leak",
    { description: "Returns a secret.", inputSchema: empty },
    () => text(`token=${SECRET}`),
  );
  server.registerTool("fail", { description: "Fails.", inputSchema: empty }, () => ({
    ...text(`quota exceeded for key ${SECRET}`),
    isError: true,
  }));
  server.registerTool("slow", { description: "Waits.", inputSchema: empty }, async (_, ctx) => {
    ctx.mcpReq.signal.addEventListener("abort", () => slowCancelled.resolve(), { once: true });
    await slow.promise;
    return text("done");
  });
  const [clientEnd, serverEnd] = InMemoryTransport.createLinkedPair();
  await server.connect(serverEnd);
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(clientEnd);
  const { tools } = await client.listTools();
  const catalog = new Catalog([{
    server: "mem",
    description: "Test server.",
    tools: tools.map((tool: { name: string; description?: string; inputSchema: object }) => ({
      server: "mem",
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema as Record<string, unknown>,
    })),
  }]);
  return {
    client,
    catalog,
    finishSlow: () => slow.resolve(),
    /** Settles when the server is told to cancel a call of `slow`. */
    slowCancelled: slowCancelled.promise,
    close: async () => {
      slow.resolve();
      await client.close();
      await server.close();
    },
  };
}

type Upstream = Awaited<ReturnType<typeof startUpstream>>;

function gateFor(upstream: Upstream, profile: Profile, callTimeoutMs = 5000) {
  const sessions: Record<string, UpstreamSession> = {
    mem: { client: upstream.client },
    down: { unavailable: 'server "down" is not connected (reconnecting): spawn failed' },
  };
  return new ToolGate({
    profile,
    catalog: () => upstream.catalog,
    session: (server) => Promise.resolve(sessions[server]),
    redact: createRedactor([SECRET]),
    callTimeoutMs,
  });
}

Deno.test("ToolGate passes an allowed call to the upstream tool and records it ok with its duration", async () => {
  const upstream = await startUpstream();
  const gate = gateFor(upstream, makeProfile("p", {}, { allowed_tools: ["mem.echo"] }));
  const reply = await gate.call({ server: "mem", tool: "echo", arguments: { text: "hi" } });
  assert.deepEqual(reply, { result: { content: [{ type: "text", text: "echo: hi" }] } });
  assert.equal(gate.calls.length, 1);
  const [record] = gate.calls;
  assert.deepEqual({ ...record, duration_ms: 0 }, {
    server: "mem",
    tool: "echo",
    outcome: "ok",
    duration_ms: 0,
  });
  assert.ok(record!.duration_ms >= 0 && Number.isFinite(record!.duration_ms));
  await gate.close();
  await upstream.close();
});

Deno.test("ToolGate denies a tool the profile does not allow and records it as denied", async () => {
  const upstream = await startUpstream();
  const gate = gateFor(upstream, makeProfile("p", {}, { allowed_tools: ["mem.echo"] }));
  const reply = await gate.call({ server: "mem", tool: "leak", arguments: {} });
  assert.deepEqual(reply, {
    error: {
      kind: "denied",
      message: `denied: the profile "p" does not allow mem.leak (its allowed_tools: "mem.echo")`,
    },
  });
  assert.deepEqual(gate.calls, [{
    server: "mem",
    tool: "leak",
    outcome: "denied",
    duration_ms: 0,
    error: `the profile "p" does not allow mem.leak (its allowed_tools: "mem.echo")`,
  }]);
  await upstream.close();
});

Deno.test("ToolGate denies a call past the profile's tool-call limit and records it as denied", async () => {
  const upstream = await startUpstream();
  const gate = gateFor(upstream, makeProfile("p", { tool_calls: 2 }));
  const echo = { server: "mem", tool: "echo", arguments: { text: "x" } };
  assert.ok("result" in await gate.call(echo));
  // A denied call counts too: the limit is on calls asked for.
  assert.ok("error" in await gate.call({ server: "nowhere", tool: "x", arguments: {} }));
  const third = await gate.call(echo);
  assert.deepEqual(third, {
    error: {
      kind: "denied",
      message: "denied: the limit of 2 tool calls per execution was reached (the profile's " +
        "limits.tool_calls): do the rest in another execution",
    },
  });
  assert.deepEqual(gate.calls.map((c) => c.outcome), ["ok", "error", "denied"]);
  await upstream.close();
});

Deno.test("ToolGate routes only to known servers and tools, and says when a server is down", async (t) => {
  const upstream = await startUpstream();
  const gate = gateFor(upstream, makeProfile());
  const table: [string, string, string, unknown][] = [
    ["an unknown server", "nowhere", "x", {
      error: { kind: "invalid", message: 'no server named "nowhere"' },
    }],
    ["an unknown tool of a connected server", "mem", "nope", {
      error: { kind: "invalid", message: 'server "mem" has no tool "nope"' },
    }],
    ["a server that is not connected", "down", "anything", {
      error: {
        kind: "unavailable",
        message: 'server "down" is not connected (reconnecting): spawn failed',
      },
    }],
  ];
  for (const [what, server, tool, expected] of table) {
    await t.step(what, async () => {
      assert.deepEqual(await gate.call({ server, tool, arguments: {} }), expected);
      const record = gate.calls.at(-1)!;
      assert.equal(record.outcome, "error");
      assert.equal(record.error, (expected as { error: { message: string } }).error.message);
    });
  }
  await upstream.close();
});

Deno.test("ToolGate reports a tool's isError result as tool_error with its text, secrets scrubbed", async () => {
  const upstream = await startUpstream();
  const gate = gateFor(upstream, makeProfile());
  const reply = await gate.call({ server: "mem", tool: "fail", arguments: {} });
  assert.deepEqual(reply, {
    error: { kind: "tool_error", message: `quota exceeded for key ${REDACTED}` },
  });
  assert.equal(gate.calls[0]!.outcome, "error");
  assert.equal(gate.calls[0]!.error, `quota exceeded for key ${REDACTED}`);
  await upstream.close();
});

Deno.test("ToolGate scrubs a secret from a tool's reply before the sandbox sees it", async () => {
  const upstream = await startUpstream();
  const gate = gateFor(upstream, makeProfile());
  const reply = await gate.call({ server: "mem", tool: "leak", arguments: {} });
  assert.deepEqual(reply, { result: { content: [{ type: "text", text: `token=${REDACTED}` }] } });
  assert.doesNotMatch(JSON.stringify(reply), new RegExp(SECRET));
  await upstream.close();
});

Deno.test("ToolGate answers timeout when the tool is slower than the per-call timeout", async () => {
  const upstream = await startUpstream();
  const gate = gateFor(upstream, makeProfile(), 30);
  const reply = await gate.call({ server: "mem", tool: "slow", arguments: {} });
  assert.deepEqual(reply, {
    error: {
      kind: "timeout",
      message: "no answer within the 0.03 s per-call timeout (settings.tool_timeout_s)",
    },
  });
  assert.equal(gate.calls[0]!.outcome, "error");
  await upstream.close();
});

Deno.test("ToolGate answers unavailable when the server goes away during a call", async () => {
  const upstream = await startUpstream();
  const gate = gateFor(upstream, makeProfile());
  const call = gate.call({ server: "mem", tool: "slow", arguments: {} });
  await upstream.client.close();
  assert.deepEqual(await call, {
    error: { kind: "unavailable", message: 'server "mem" went away during the call' },
  });
  await upstream.close();
});

Deno.test("ToolGate denies every call after close(): the script has already ended", async () => {
  const upstream = await startUpstream();
  const gate = gateFor(upstream, makeProfile());
  await gate.close();
  const reply = await gate.call({ server: "mem", tool: "echo", arguments: { text: "late" } });
  assert.deepEqual(reply, {
    error: { kind: "denied", message: "denied: the script has already ended" },
  });
  assert.deepEqual(gate.calls.map((c) => [c.outcome, c.error]), [
    ["denied", "the script has already ended"],
  ]);
  await upstream.close();
});

Deno.test("ToolGate.close() waits for a call in flight to finish within the grace", async () => {
  const upstream = await startUpstream();
  const gate = gateFor(upstream, makeProfile());
  const call = gate.call({ server: "mem", tool: "slow", arguments: {} });
  await new Promise((resolve) => setTimeout(resolve, 10)); // sent, once its server is there
  assert.equal(gate.calls[0]!.outcome, "unfinished", "in flight until it answers");
  let closed = false;
  const closing = gate.close(5000).then(() => closed = true);
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(closed, false, "close() still waiting for the call");
  upstream.finishSlow();
  await closing;
  assert.equal(gate.calls[0]!.outcome, "ok");
  assert.deepEqual(await call, { result: { content: [{ type: "text", text: "done" }] } });
  await upstream.close();
});

Deno.test("ToolGate.close() records a call still running after the grace unfinished, and cancels it upstream", async () => {
  const upstream = await startUpstream();
  // A per-call timeout far beyond the wait below: the SDK would cancel the call on it too.
  const gate = gateFor(upstream, makeProfile(), 120_000);
  const call = gate.call({ server: "mem", tool: "slow", arguments: {} });
  await new Promise((resolve) => setTimeout(resolve, 30));
  await gate.close(10);
  assert.equal(gate.calls[0]!.outcome, "unfinished");
  assert.equal(gate.calls[0]!.error, undefined);
  assert.ok(gate.calls[0]!.duration_ms >= 30, "how long it ran before it was given up on");
  assert.equal(await waitAtMost(upstream.slowCancelled, 10_000), true, "the server was told");
  await call;
  assert.equal(gate.calls[0]!.outcome, "unfinished", "the call's failure does not rewrite it");
  assert.equal(gate.calls[0]!.error, undefined);
  await upstream.close();
});

Deno.test("ToolGate.close() cancels nothing that finished within the grace", async () => {
  const upstream = await startUpstream();
  const gate = gateFor(upstream, makeProfile());
  const call = gate.call({ server: "mem", tool: "slow", arguments: {} });
  const closing = gate.close(5000);
  upstream.finishSlow();
  await closing;
  assert.deepEqual(await call, { result: { content: [{ type: "text", text: "done" }] } });
  assert.equal(await waitAtMost(upstream.slowCancelled, 100), false, "nothing to cancel");
  await upstream.close();
});

Deno.test("ToolGate.close() cancels the calls still running at once when the execution is cancelled during the grace", async () => {
  const upstream = await startUpstream();
  const gate = gateFor(upstream, makeProfile(), 120_000);
  const call = gate.call({ server: "mem", tool: "slow", arguments: {} });
  const cancelled = new AbortController();
  const closing = gate.close(60_000, cancelled.signal);
  assert.equal(await waitAtMost(upstream.slowCancelled, 100), false, "still within the grace");
  cancelled.abort();
  assert.equal(await waitAtMost(closing, 10_000), true, "close() waited out the grace");
  assert.equal(await waitAtMost(upstream.slowCancelled, 10_000), true, "the server was told");
  assert.equal(gate.calls[0]!.outcome, "unfinished");
  await call;
  await upstream.close();
});

/** A gate whose profile needs a person's approval for mem.echo, asked of `approve`. */
function approvingGate(upstream: Upstream, approve: Approver): ToolGate {
  return new ToolGate({
    profile: makeProfile("p", {}, { approve: ["mem.echo"] }),
    catalog: () => upstream.catalog,
    session: () => Promise.resolve({ client: upstream.client }),
    redact: createRedactor([SECRET]),
    callTimeoutMs: 5000,
    approve,
  });
}

Deno.test("ToolGate.close() withdraws a question still open, and its call is denied", async () => {
  const upstream = await startUpstream();
  let withdrawn: AbortSignal | undefined;
  // A person who never answers; the question goes when it is withdrawn.
  const gate = approvingGate(upstream, (_, signal) => {
    withdrawn = signal;
    return new Promise((resolve) => signal.addEventListener("abort", () => resolve("cancelled")));
  });
  const call = gate.call({ server: "mem", tool: "echo", arguments: { text: "hi" } });
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(withdrawn?.aborted, false, "asked, and waiting");
  await gate.close(2_000);
  assert.equal(withdrawn.aborted, true, "the question was withdrawn");
  assert.deepEqual(gate.calls.map((c) => [c.outcome, c.approval, c.error]), [
    ["denied", "cancelled", "the script ended before the call was decided"],
  ]);
  assert.deepEqual(await call, {
    error: { kind: "denied", message: "denied: the script ended before the call was decided" },
  });
  await upstream.close();
});

Deno.test("attack: keys that scrubbing would merge are not put to a person", async () => {
  // A key that holds the secret and a key the script named "[REDACTED]" read alike once
  // scrubbed: a person could not tell which of the two is the secret's.
  const upstream = await startUpstream();
  const asked: unknown[] = [];
  const gate = approvingGate(upstream, (question) => {
    asked.push(question);
    return Promise.resolve("approved");
  });
  const reply = await gate.call({
    server: "mem",
    tool: "echo",
    arguments: { text: "hi", [SECRET]: "/etc/shadow", "[REDACTED]": "harmless" },
  });
  assert.equal(asked.length, 0, "not asked");
  assert.match(JSON.stringify(reply), /argument names read alike once their secrets are scrubbed/);
  assert.equal(gate.calls[0]!.approval, "unavailable");
  // One key that holds it, alone, is asked about (shown scrubbed).
  await gate.call({ server: "mem", tool: "echo", arguments: { text: "hi", [SECRET]: "x" } });
  assert.equal(asked.length, 1);
  // Arguments too deep to show are refused as such, however deep (100,000 levels overflowed
  // the host's stack looking for keys that read alike).
  let deep: unknown = "bottom";
  for (let i = 0; i < 100_000; i++) deep = { a: deep };
  const refused = await gate.call({ server: "mem", tool: "echo", arguments: { text: deep } });
  assert.match(JSON.stringify(refused), /cannot be shown to a person whole/);
  assert.equal(asked.length, 1, "not asked");
  await upstream.close();
});

Deno.test("ToolGate bounds the arguments of the calls a script keeps in flight", async () => {
  // An attacker's corpus: 108 calls of 1.5 MB left unanswered took the host from 160 to 948 MB.
  const upstream = await startUpstream();
  const gate = gateFor(upstream, makeProfile());
  const big = { data: "x".repeat(12 * 2 ** 20) };
  const running = [1, 2].map(() => gate.call({ server: "mem", tool: "slow", arguments: big }));
  const third = await gate.call({ server: "mem", tool: "slow", arguments: big });
  assert.match(
    "error" in third ? third.error.message : "",
    /^denied: the arguments of this script's calls still running would pass 32 MiB/,
  );
  assert.equal(gate.calls[2]!.outcome, "denied");
  upstream.finishSlow();
  await Promise.all(running);
  // Answered calls no longer count.
  const after = await gate.call({ server: "mem", tool: "slow", arguments: big });
  assert.ok(!("error" in after) || after.error.kind !== "denied", JSON.stringify(after));
  await upstream.close();
});

Deno.test("toolCallLines() counts a tool's successful calls and shows each failed one", () => {
  const call = (tool: string, outcome: ToolCallRecord["outcome"], error?: string) => ({
    server: "fs",
    tool,
    outcome,
    duration_ms: 0.5,
    ...(error ? { error } : {}),
  });
  const calls: ToolCallRecord[] = [
    ...Array.from({ length: 200 }, () => call("list", "ok")),
    call("read", "ok"),
    call("write", "denied", "the profile does not allow fs.write"),
    ...Array.from({ length: 25 }, () => call("stat", "error", "no such file")),
  ];
  const lines = toolCallLines(calls).split("\n");
  assert.deepEqual(lines.slice(0, 3), [
    "fs.list: 200 ok (100 ms in all)",
    "fs.read: ok (0.5 ms)",
    "fs.write: denied (0.5 ms) the profile does not allow fs.write",
  ]);
  assert.equal(lines.length, 3 + 19 + 1);
  assert.equal(lines.at(-1), "... and 6 more failed calls (see tool_calls)");
});

Deno.test("attack: an approve glob written with the names scripts use still asks", async () => {
  // Attacker 51: `approve: ["my_db.*"]` for the server "my-db" (the module scripts import) let
  // every call through unasked, while the tool description said they waited for a person.
  const upstream = await startUpstream();
  const tool = (name: string) => ({ server: "my-db", name, inputSchema: { type: "object" } });
  const catalogOf = (...names: string[]) =>
    new Catalog([{ server: "my-db", description: "A database.", tools: names.map(tool) }]);
  const catalog = catalogOf("run-query");
  assert.equal(catalog.server("my-db")!.moduleName, "my_db");
  // Attacker 52: the script's module was made before the catalog changed: the tool not listed
  // yet (it came with list_changed while the call waited), or renamed by a clash since.
  const renamed = catalogOf("run-query", "run_query");
  const spec = renamed.server("my-db")!.specs.find((s) => s.tool === "run-query")!;
  assert.equal(spec.pyName, "run_query_2");
  const cases: [string[], Catalog][] = [
    [["my_db.*"], catalog],
    [["my_db.run_query"], catalog],
    [["my-db.run-query"], catalog],
    [["my_db.run_query"], catalogOf()],
    [["my_db.run_query"], renamed],
    [["my_db.run_query_2"], renamed],
  ];
  for (const [approve, current] of cases) {
    const asked: string[] = [];
    const gate = new ToolGate({
      profile: makeProfile("p", {}, { approve }),
      catalog: () => current,
      session: () => Promise.resolve({ client: upstream.client }),
      redact: createRedactor([SECRET]),
      callTimeoutMs: 5000,
      approve: (question) => {
        asked.push(question.tool);
        return Promise.resolve("declined");
      },
    });
    const reply = await gate.call({ server: "my-db", tool: "run-query", arguments: {} });
    assert.deepEqual(asked, ["run-query"], approve.join());
    assert.ok("error" in reply && reply.error.kind === "denied", JSON.stringify(reply));
    await gate.close();
  }
  // The allow list is not widened by them: `allowed_tools` names MCP tools only.
  const narrow = new ToolGate({
    profile: makeProfile("p", {}, { allowed_tools: ["my_db.*"] }),
    catalog: () => catalog,
    session: () => Promise.resolve({ client: upstream.client }),
    redact: createRedactor([SECRET]),
    callTimeoutMs: 5000,
  });
  const refused = await narrow.call({ server: "my-db", tool: "run-query", arguments: {} });
  assert.match(JSON.stringify(refused), /does not allow my-db\.run-query/);
  await narrow.close();
  await upstream.close();
});

Deno.test("StoppingExecutor: a run the stop cancelled says so, nested in a guarded run too; a client's cancel stays the client's", async () => {
  const cancelled = () =>
    refusedResult({
      profile: "default",
      outcome: "CANCELLED",
      message: "Execution was cancelled by the client",
    }, 0);
  const waitForCancel: Executor = {
    execute: (_request, options = {}) =>
      options.signal!.aborted
        ? Promise.resolve(cancelled())
        : new Promise((resolve) =>
          options.signal!.addEventListener("abort", () => resolve(cancelled()))
        ),
  };
  const stopping = new StoppingExecutor(waitForCancel);
  const client = new AbortController();
  const cancelledByClient = stopping.execute({ code: "1" }, { signal: client.signal });
  client.abort();
  assert.equal(
    (await cancelledByClient).diagnostics?.message,
    "Execution was cancelled by the client",
  );
  const plain = stopping.execute({ code: "1" });
  // As a code-generation run calls it: with the guarded signal, which the stop aborts too.
  const nested = stopping.guard((signal) => stopping.execute({ code: "1" }, { signal }));
  // The plain run and the guarded one (whose promise is its execution's).
  assert.equal(await stopping.stop(), 2);
  assert.equal((await plain).diagnostics?.message, STOPPING_MESSAGE);
  assert.equal((await nested).diagnostics?.message, STOPPING_MESSAGE);
  const late = await stopping.execute({ code: "1" });
  assert.equal(late.diagnostics?.message, STOPPING_MESSAGE, "one started after the stop");
});
