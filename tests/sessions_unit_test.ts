/**
 * SessionManager's bookkeeping in process: ids, caps, owners, busy sessions, release and exit.
 * The sandboxes are stand-ins (a real one is a Pyodide process; tests/sessions_files_test.ts and
 * tests/session_idle_test.ts run those): the manager only uses `profile`, `ready`, `exited`,
 * `kill` and disposal.
 */
import assert from "node:assert/strict";
import { silentLogger } from "../src/_util/log.ts";
import type { Sandbox } from "../src/sandbox/launcher.ts";
import type { Profile } from "../src/sandbox/profile.ts";
import { plainProfile } from "./_profiles.ts";
import {
  SessionBusyError,
  SessionError,
  SessionManager,
  type SessionOptions,
} from "../src/sandbox/sessions.ts";

const profile = plainProfile;

interface FakeSandbox {
  profile: Profile;
  ready: Promise<void>;
  exited: Promise<Deno.CommandStatus>;
  killed: number;
  disposed: number;
  /** The process exits on its own. */
  exit(): void;
  kill(): void;
  [Symbol.asyncDispose](): Promise<void>;
}

/** A manager whose launches are recorded stand-ins; `ready` may be given per launch. */
function managerWith(options: Partial<SessionOptions> = {}, ready = () => Promise.resolve()) {
  const launched: FakeSandbox[] = [];
  const launch = (p: Profile): Sandbox => {
    const exited = Promise.withResolvers<Deno.CommandStatus>();
    const status = { success: false, code: 137, signal: "SIGKILL" as const };
    const sandbox: FakeSandbox = {
      profile: p,
      ready: ready(),
      exited: exited.promise,
      killed: 0,
      disposed: 0,
      exit: () => exited.resolve({ success: true, code: 0, signal: null }),
      kill: () => {
        sandbox.killed++;
        exited.resolve(status);
      },
      [Symbol.asyncDispose]: () => {
        sandbox.disposed++;
        exited.resolve(status);
        return Promise.resolve();
      },
    };
    launched.push(sandbox);
    return sandbox as unknown as Sandbox;
  };
  const manager = new SessionManager({
    max: 4,
    idleMs: 60_000,
    launch,
    log: silentLogger,
    ...options,
  });
  return { manager, launched };
}

const work = profile("work");

Deno.test("SessionManager refuses a malformed session id without starting a sandbox", async (t) => {
  const { manager, launched } = managerWith();
  for (const id of ["", "has space", "dot.dot", "../up", "x".repeat(65), "new\nline"]) {
    await t.step(JSON.stringify(id.slice(0, 20)), async () => {
      await assert.rejects(manager.open("o", id, work), (error: unknown) => {
        assert.ok(error instanceof SessionError);
        assert.match(error.message, /^session_id must be 1-64 letters, digits, _ or -; got /);
        return true;
      });
    });
  }
  assert.equal(launched.length, 0);
  await manager.closeAll();
});

Deno.test("SessionManager caps the sessions one connection may hold", async () => {
  const { manager, launched } = managerWith({ max: 4, maxPerOwner: 1 });
  await manager.open("o", "a", work);
  manager.release("o", "a", false);
  await assert.rejects(manager.open("o", "b", work), (error: unknown) => {
    assert.ok(error instanceof SessionError && !(error instanceof SessionBusyError));
    assert.match(
      error.message,
      /^Cannot open session "b": this connection has 1 sessions open \(the limit per connection, settings\.max_sessions_per_connection\)/,
    );
    return true;
  });
  await manager.open("p", "b", work); // another connection still may
  assert.equal(launched.length, 2);
  await manager.closeAll();
});

Deno.test("SessionManager caps the sessions open on the whole server", async () => {
  const { manager, launched } = managerWith({ max: 2, maxPerOwner: 2 });
  await manager.open("o", "a", work);
  await manager.open("p", "b", work);
  await assert.rejects(manager.open("q", "c", work), (error: unknown) => {
    assert.ok(error instanceof SessionError);
    assert.match(
      error.message,
      /^Cannot open session "c": 2 sessions are open on this server \(the limit, settings\.max_sessions\)/,
    );
    return true;
  });
  assert.equal(launched.length, 2);
  await manager.closeAll();
});

Deno.test("SessionManager gives the per-connection cap half the server's when not set", async () => {
  const { manager } = managerWith({ max: 3 });
  await manager.open("o", "a", work);
  await manager.open("o", "b", work);
  await assert.rejects(manager.open("o", "c", work), /this connection has 2 sessions open/);
  await manager.closeAll();
});

Deno.test("SessionManager refuses a session still running a script with SessionBusyError", async () => {
  const { manager, launched } = managerWith();
  const first = await manager.open("o", "a", work);
  await assert.rejects(manager.open("o", "a", work), (error: unknown) => {
    assert.ok(error instanceof SessionBusyError);
    assert.ok(error instanceof SessionError, "a SessionError callers already catch");
    assert.equal(error.message, 'Session "a" is still running a script');
    return true;
  });
  manager.release("o", "a", false);
  assert.equal(await manager.open("o", "a", work), first, "the same sandbox once released");
  assert.equal(launched.length, 1);
  await manager.closeAll();
});

Deno.test("SessionManager refuses to continue a session under another profile", async () => {
  const { manager } = managerWith();
  await manager.open("o", "a", work);
  manager.release("o", "a", false);
  await assert.rejects(manager.open("o", "a", profile("web")), (error: unknown) => {
    assert.ok(error instanceof SessionError);
    assert.equal(error.message, 'Session "a" runs under profile "work", not "web"');
    return true;
  });
  await manager.closeAll();
});

Deno.test("SessionManager.release() keeps an idle session, and kills and forgets a stopped one", async () => {
  const { manager, launched } = managerWith();
  await manager.open("o", "a", work);
  manager.release("o", "a", false);
  assert.deepEqual(
    manager.list("o").map((s) => [s.session_id, s.profile, s.executions, s.busy]),
    [["a", "work", 1, false]],
  );
  await manager.open("o", "a", work);
  manager.release("o", "a", true);
  assert.equal(launched[0]!.killed, 1);
  assert.deepEqual(manager.list("o"), []);
  await manager.open("o", "a", work);
  assert.equal(launched.length, 2, "the id starts a new sandbox");
  await manager.closeAll();
});

Deno.test("SessionManager keeps two connections' sessions of the same id apart", async () => {
  const { manager, launched } = managerWith();
  const mine = await manager.open("o", "shared", work);
  const theirs = await manager.open("p", "shared", work);
  assert.notEqual(mine, theirs);
  assert.equal(launched.length, 2);
  assert.deepEqual(manager.list("o").map((s) => s.session_id), ["shared"]);
  assert.equal(await manager.close("p", "shared"), true);
  assert.equal(launched[1]!.disposed, 1);
  assert.equal(launched[0]!.disposed, 0, "closing theirs leaves mine");
  assert.equal(await manager.close("p", "shared"), false, "already closed");
  await manager.closeAll();
});

Deno.test("SessionManager.closeOwner() closes only that connection's sessions", async () => {
  const { manager, launched } = managerWith();
  await manager.open("o", "a", work);
  await manager.open("o", "b", work);
  await manager.open("p", "a", work);
  await manager.closeOwner("o");
  assert.deepEqual(launched.map((s) => s.disposed), [1, 1, 0]);
  assert.deepEqual(manager.list("o"), []);
  assert.deepEqual(manager.list("p").map((s) => s.session_id), ["a"]);
  await manager.closeAll();
  assert.deepEqual(launched.map((s) => s.disposed), [1, 1, 1], "closeAll() closes the rest");
});

Deno.test("SessionManager forgets a session whose process exited", async () => {
  const { manager, launched } = managerWith();
  await manager.open("o", "a", work);
  manager.release("o", "a", false);
  launched[0]!.exit();
  await launched[0]!.exited; // the manager's handler, attached first, has run
  assert.deepEqual(manager.list("o"), []);
  await manager.open("o", "a", work);
  assert.equal(launched.length, 2, "a new sandbox for the id");
  await manager.closeAll();
});

Deno.test("SessionManager does not keep a session whose sandbox failed to boot", async () => {
  let fail = true;
  const { manager, launched } = managerWith(
    {},
    () =>
      fail
        ? Promise.reject(new Error("Cannot boot sandbox: the process exited"))
        : Promise.resolve(),
  );
  await assert.rejects(manager.open("o", "a", work), /^Error: Cannot boot sandbox/);
  assert.deepEqual(manager.list("o"), []);
  fail = false;
  await manager.open("o", "a", work);
  assert.equal(launched.length, 2);
  await manager.closeAll();
});
