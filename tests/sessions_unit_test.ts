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
  SESSION_ID,
  SessionBusyError,
  SessionClosedError,
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
  /** Why its running script was stopped, if it was. */
  stopped?: string;
  /** The process exits on its own. */
  exit(): void;
  kill(): void;
  stop(reason: string, message: string): void;
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
      stop: (reason, message) => {
        sandbox.stopped = `${reason}: ${message}`;
        sandbox.kill();
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

/** Asserts that `owner` has no open session `id`. */
function assertNoSession(manager: SessionManager, owner: string, id: string) {
  assert.throws(() => manager.resume(owner, id, work), (error: unknown) => {
    assert.ok(error instanceof SessionError);
    assert.match(error.message, new RegExp(`^No open session "${id}": .* session_id "new"`));
    return true;
  });
}

Deno.test("SessionManager names each new session with an unguessable id of its own", async () => {
  const { manager } = managerWith({ max: 8, maxPerOwner: 8 });
  const ids = new Set<string>();
  for (let i = 0; i < 8; i++) {
    const { id } = await manager.open(`o${i}`, work);
    assert.match(id, /^s_[A-Za-z0-9_-]{22}$/);
    assert.match(id, SESSION_ID, "a valid session_id to pass back");
    ids.add(id);
  }
  assert.equal(ids.size, 8);
  await manager.closeAll();
});

Deno.test("SessionManager refuses a malformed session id without starting a sandbox", async (t) => {
  const { manager, launched } = managerWith();
  for (const id of ["", "has space", "dot.dot", "../up", "x".repeat(65), "new\nline"]) {
    await t.step(JSON.stringify(id.slice(0, 20)), () => {
      assert.throws(() => manager.resume("o", id, work), (error: unknown) => {
        assert.ok(error instanceof SessionError);
        assert.match(error.message, /^session_id must be 1-64 letters, digits, _ or -; got /);
        return true;
      });
    });
  }
  assert.equal(launched.length, 0);
  await manager.closeAll();
});

Deno.test("SessionManager opens nothing for an id it did not issue", () => {
  const { manager, launched } = managerWith();
  for (const id of ["s1", "s_AAAAAAAAAAAAAAAAAAAAAA", "new-one"]) assertNoSession(manager, "o", id);
  assert.equal(launched.length, 0);
});

Deno.test("SessionManager caps the sessions one connection may hold", async () => {
  const { manager, launched } = managerWith({ max: 4, maxPerOwner: 1 });
  const { id } = await manager.open("o", work);
  manager.release("o", id, false);
  await assert.rejects(manager.open("o", work), (error: unknown) => {
    assert.ok(error instanceof SessionError && !(error instanceof SessionBusyError));
    assert.match(
      error.message,
      /^Cannot open a session: this connection has 1 sessions open \(the limit per connection, settings\.max_sessions_per_connection\)/,
    );
    return true;
  });
  await manager.open("p", work); // another connection still may
  assert.equal(launched.length, 2);
  await manager.closeAll();
});

Deno.test("SessionManager caps the sessions open on the whole server", async () => {
  const { manager, launched } = managerWith({ max: 2, maxPerOwner: 2 });
  await manager.open("o", work);
  await manager.open("p", work);
  await assert.rejects(manager.open("q", work), (error: unknown) => {
    assert.ok(error instanceof SessionError);
    assert.match(
      error.message,
      /^Cannot open a session: 2 sessions are open on this server \(the limit, settings\.max_sessions\)/,
    );
    return true;
  });
  assert.equal(launched.length, 2);
  await manager.closeAll();
});

Deno.test("SessionManager gives the per-connection cap half the server's when not set", async () => {
  const { manager } = managerWith({ max: 3 });
  await manager.open("o", work);
  await manager.open("o", work);
  await assert.rejects(manager.open("o", work), /this connection has 2 sessions open/);
  await manager.closeAll();
});

Deno.test("SessionManager refuses a session still running a script with SessionBusyError", async () => {
  const { manager, launched } = managerWith();
  const first = await manager.open("o", work);
  assert.throws(() => manager.resume("o", first.id, work), (error: unknown) => {
    assert.ok(error instanceof SessionBusyError);
    assert.ok(error instanceof SessionError, "a SessionError callers already catch");
    assert.equal(error.message, `Session "${first.id}" is still running a script`);
    return true;
  });
  manager.release("o", first.id, false);
  assert.equal(
    manager.resume("o", first.id, work),
    first.sandbox,
    "the same sandbox once released",
  );
  assert.equal(launched.length, 1);
  await manager.closeAll();
});

Deno.test("SessionManager refuses to continue a session under another profile", async () => {
  const { manager } = managerWith();
  const { id } = await manager.open("o", work);
  manager.release("o", id, false);
  assert.throws(() => manager.resume("o", id, profile("web")), (error: unknown) => {
    assert.ok(error instanceof SessionError);
    assert.match(
      error.message,
      new RegExp(`^Session "${id}" runs under profile "work", not "web": leave out profile`),
    );
    return true;
  });
  await manager.closeAll();
});

Deno.test("SessionManager.release() keeps an idle session, and kills and forgets a stopped one", async () => {
  const { manager, launched } = managerWith();
  const { id } = await manager.open("o", work);
  manager.release("o", id, false);
  assert.deepEqual(
    manager.list("o").map((s) => [s.session_id, s.profile, s.executions, s.busy]),
    [[id, "work", 1, false]],
  );
  manager.resume("o", id, work);
  manager.release("o", id, true);
  assert.equal(launched[0]!.killed, 1);
  assert.deepEqual(manager.list("o"), []);
  assertNoSession(manager, "o", id);
  await manager.closeAll();
});

Deno.test("SessionManager gives a session to its owner alone, even one who knows its id", async () => {
  const { manager, launched } = managerWith();
  const mine = await manager.open("o", work);
  manager.release("o", mine.id, false);
  assertNoSession(manager, "p", mine.id);
  assert.equal(await manager.close("p", mine.id), false, "nor can they close it");
  assert.deepEqual(manager.list("p"), []);
  assert.deepEqual(manager.list("o").map((s) => s.session_id), [mine.id]);
  assert.equal(launched[0]!.disposed, 0);
  assert.equal(await manager.close("o", mine.id), true);
  assert.equal(launched[0]!.disposed, 1);
  assert.equal(await manager.close("o", mine.id), false, "already closed");
  await manager.closeAll();
});

Deno.test("SessionManager.closeOwner() closes only that connection's sessions", async () => {
  const { manager, launched } = managerWith();
  await manager.open("o", work); // still running its script
  const idle = await manager.open("o", work);
  manager.release("o", idle.id, false);
  const theirs = await manager.open("p", work);
  await manager.closeOwner("o");
  assert.deepEqual(launched.map((s) => s.disposed), [1, 1, 0]);
  assert.deepEqual(launched.map((s) => s.stopped), [
    "CANCELLED: Execution stopped: its connection closed",
    undefined,
    undefined,
  ], "only the running script is stopped, saying why");
  assert.deepEqual(manager.list("o"), []);
  assert.deepEqual(manager.list("p").map((s) => s.session_id), [theirs.id]);
  await manager.closeAll();
  assert.deepEqual(launched.map((s) => s.disposed), [1, 1, 1], "closeAll() closes the rest");
});

Deno.test("SessionManager forgets a session whose process exited, after telling its next call", async () => {
  const { manager, launched } = managerWith();
  const { id } = await manager.open("o", work);
  manager.release("o", id, false);
  launched[0]!.exit();
  await launched[0]!.exited; // the manager's handler, attached first, has run
  assert.deepEqual(manager.list("o"), []);
  assert.throws(
    () => manager.resume("o", id, work),
    (error: Error) => /^Session "s_.*" ended between scripts: its process died/.test(error.message),
  );
  assertNoSession(manager, "o", id);
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
  await assert.rejects(manager.open("o", work), /^Error: Cannot boot sandbox/);
  assert.deepEqual(manager.list("o"), []);
  fail = false;
  await manager.open("o", work);
  assert.equal(launched.length, 2);
  await manager.closeAll();
});

Deno.test("SessionManager: a session closed while it starts cancels its first script, saying why", async () => {
  let failBoot: (error: Error) => void = () => {};
  const { manager, launched } = managerWith(
    {},
    () => new Promise((_, reject) => failBoot = reject),
  );
  const opening = manager.open("o", work);
  const [listed] = manager.list("o");
  assert.equal(await manager.close("o", listed!.session_id, "close_session closed it"), true);
  // As the killed process makes it: its boot fails.
  failBoot(new Error("Cannot boot sandbox: the process exited"));
  await assert.rejects(
    opening,
    (error) =>
      error instanceof SessionClosedError &&
      error.message === "Execution stopped: close_session closed it",
  );
  assert.equal(launched[0]!.stopped, "CANCELLED: Execution stopped: close_session closed it");
  assert.deepEqual(manager.list("o"), []);
});
