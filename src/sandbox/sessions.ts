/**
 * Persistent sessions: a sandbox that keeps its Python scope across `execute_code` calls (a REPL
 * for agents). The server names each with an unguessable id when it opens it, and a session
 * belongs to the caller that opened it (an MCP connection, or the HTTP token's holder), so
 * nobody else can reach it even with the id; they expire when idle, and their number is capped
 * over the server and per connection (so one client cannot take them all).
 */
import type { Logger } from "../_util/log.ts";
import type { Sandbox } from "./launcher.ts";
import type { Profile } from "./profile.ts";
import { defaultSessionsPerConnection } from "../config/config.ts";

export interface SessionInfo {
  session_id: string;
  profile: string;
  created: string;
  last_used: string;
  executions: number;
  busy: boolean;
}

/** Ended sessions remembered for their next call (the oldest forgotten first). */
const MAX_ENDED_REMEMBERED = 256;

interface Session {
  owner: string;
  id: string;
  sandbox: Sandbox;
  created: Date;
  lastUsed: number;
  executions: number;
  busy: boolean;
  /** Why it was closed while busy (close_session, its connection), if it was. */
  closedBecause?: string;
}

/** The session was closed while its sandbox was starting: its first script is cancelled. */
export class SessionClosedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SessionClosedError";
  }
}

/** A session cannot be used as asked (bad id, cap reached, other profile, not available). */
export class SessionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SessionError";
  }
}

/** The session is still running a script: the caller may retry shortly. */
export class SessionBusyError extends SessionError {
  constructor(id: string) {
    super(`Session "${id}" is still running a script`);
    this.name = "SessionBusyError";
  }
}

export const SESSION_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The `session_id` that asks for a new session. */
export const NEW_SESSION = "new";

/** An unguessable session id: "s_" and 128 random bits in base64url. */
function newSessionId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `s_${
    btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")
  }`;
}

export interface SessionOptions {
  /** Sessions open at once, over all connections. */
  max: number;
  /**
   * Sessions one connection (owner) may hold at once, so that one client cannot take them all
   * (default: half of `max`, rounded up, as `settings.max_sessions_per_connection`).
   */
  maxPerOwner?: number;
  idleMs: number;
  /** Starts a persistent sandbox for a profile. */
  launch: (profile: Profile) => Sandbox;
  log: Logger;
}

export class SessionManager implements AsyncDisposable {
  readonly #sessions = new Map<string, Session>();
  /** Sessions whose process ended while idle (a limit, a crash), and why: told once, then forgotten. */
  readonly #ended = new Map<string, string>();
  readonly #options: SessionOptions;
  readonly #maxPerOwner: number;
  readonly #sweeper: ReturnType<typeof setInterval>;

  constructor(options: SessionOptions) {
    this.#options = options;
    this.#maxPerOwner = options.maxPerOwner ?? defaultSessionsPerConnection(options.max);
    this.#sweeper = setInterval(
      () => this.#expire(),
      Math.min(30_000, Math.max(1000, options.idleMs / 4)),
    );
  }

  /**
   * Opens a session for `owner`: a sandbox started for `profile`, busy until `release`, under an
   * id the server makes up (unguessable, so it names the session to its owner alone). Throws
   * SessionError when a cap is reached, or the sandbox's error when it cannot start.
   */
  async open(owner: string, profile: Profile): Promise<{ id: string; sandbox: Sandbox }> {
    const mine = this.#count(owner);
    if (mine >= this.#maxPerOwner) {
      throw new SessionError(
        `Cannot open a session: this connection has ${mine} sessions open (the limit per connection, settings.max_sessions_per_connection); close one with close_session`,
      );
    }
    if (this.#sessions.size >= this.#options.max) {
      throw new SessionError(
        `Cannot open a session: ${this.#options.max} sessions are open on this server (the limit, settings.max_sessions); close one of yours with close_session, or retry when idle ones expire`,
      );
    }
    const id = newSessionId();
    const key = `${owner}\0${id}`;
    const sandbox = this.#options.launch(profile);
    const session: Session = {
      owner,
      id,
      sandbox,
      created: new Date(),
      lastUsed: Date.now(),
      executions: 0,
      busy: true,
    };
    this.#sessions.set(key, session);
    // A session whose process dies is gone; its next call is told why (when no script was
    // running, no result said it).
    void sandbox.exited.then(() => {
      const current = this.#sessions.get(key);
      if (current?.sandbox !== sandbox) return;
      this.#sessions.delete(key);
      if (!current.busy) {
        this.#ended.set(key, sandbox.stopMessage ?? "its process died");
        while (this.#ended.size > MAX_ENDED_REMEMBERED) {
          this.#ended.delete(this.#ended.keys().next().value!);
        }
      }
    });
    try {
      await sandbox.ready;
    } catch (error) {
      this.#sessions.delete(key);
      if (session.closedBecause) {
        throw new SessionClosedError(`Execution stopped: ${session.closedBecause}`);
      }
      throw error;
    }
    this.#options.log.info("session opened", { session: id, profile: profile.name });
    return { id, sandbox };
  }

  /** The profile `owner`'s open session `id` runs under, if there is one. */
  profileOf(owner: string, id: string): string | undefined {
    return this.#sessions.get(`${owner}\0${id}`)?.sandbox.profile.name;
  }

  /**
   * The sandbox of `owner`'s open session `id`, busy until `release`. Throws SessionError when
   * there is no such session (malformed, never opened, expired, closed, or another caller's),
   * it is busy, or it was opened with another profile.
   */
  resume(owner: string, id: string, profile: Profile): Sandbox {
    if (!SESSION_ID.test(id)) {
      throw new SessionError(
        `session_id must be 1-64 letters, digits, _ or -; got ${JSON.stringify(id.slice(0, 80))}`,
      );
    }
    const session = this.#sessions.get(`${owner}\0${id}`);
    const ended = this.#ended.get(`${owner}\0${id}`);
    if (!session && ended !== undefined) {
      this.#ended.delete(`${owner}\0${id}`);
      throw new SessionError(
        `Session "${id}" ended between scripts: ${ended}; its state is lost. Open a new one with session_id "${NEW_SESSION}"`,
      );
    }
    if (!session) {
      throw new SessionError(
        `No open session "${id}": it expired, was closed, or was never opened here. Open one with session_id "${NEW_SESSION}" and pass the session_id its result returns`,
      );
    }
    if (session.sandbox.profile.name !== profile.name) {
      throw new SessionError(
        `Session "${id}" runs under profile "${session.sandbox.profile.name}", not "${profile.name}": ` +
          `leave out profile to use it, or open a new session (session_id "${NEW_SESSION}") under "${profile.name}"`,
      );
    }
    if (session.busy) throw new SessionBusyError(id);
    session.busy = true;
    return session.sandbox;
  }

  /** Marks the session idle again (or forgets it when its sandbox was stopped). */
  release(owner: string, id: string, stopped: boolean): void {
    const key = `${owner}\0${id}`;
    const session = this.#sessions.get(key);
    if (!session) return;
    session.busy = false;
    session.executions++;
    session.lastUsed = Date.now();
    if (stopped) {
      this.#sessions.delete(key);
      session.sandbox.kill();
    }
  }

  #count(owner: string): number {
    let n = 0;
    for (const session of this.#sessions.values()) if (session.owner === owner) n++;
    return n;
  }

  list(owner: string): SessionInfo[] {
    return [...this.#sessions.values()].filter((s) => s.owner === owner).map((s) => ({
      session_id: s.id,
      profile: s.sandbox.profile.name,
      created: s.created.toISOString(),
      last_used: new Date(s.lastUsed).toISOString(),
      executions: s.executions,
      busy: s.busy,
    }));
  }

  /**
   * Closes a session; returns whether it existed. A script it is running ends `CANCELLED`,
   * saying `why` (a killed process alone would read as a crash).
   */
  async close(owner: string, id: string, why = "the session was closed"): Promise<boolean> {
    const key = `${owner}\0${id}`;
    const session = this.#sessions.get(key);
    if (!session) return false;
    this.#sessions.delete(key);
    if (session.busy) {
      session.closedBecause = why;
      session.sandbox.stop("CANCELLED", `Execution stopped: ${why}`);
    }
    await session.sandbox[Symbol.asyncDispose]();
    return true;
  }

  /** Closes every session of one owner (its connection went away). */
  async closeOwner(owner: string): Promise<void> {
    const mine = [...this.#sessions.values()].filter((s) => s.owner === owner);
    await Promise.all(mine.map((s) => this.close(owner, s.id, "its connection closed")));
  }

  #expire(): void {
    const now = Date.now();
    for (const session of this.#sessions.values()) {
      if (!session.busy && now - session.lastUsed > this.#options.idleMs) {
        this.#options.log.info("session expired", { session: session.id });
        void this.close(session.owner, session.id);
      }
    }
  }

  async closeAll(): Promise<void> {
    clearInterval(this.#sweeper);
    const all = [...this.#sessions.values()];
    this.#sessions.clear();
    await Promise.all(all.map((s) => s.sandbox[Symbol.asyncDispose]()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.closeAll();
  }
}
