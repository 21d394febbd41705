/**
 * Stage: acquiring a sandbox. A request without a session id gets a fresh, pre-booted sandbox
 * from the pool, killed after its one script; `session_id: "new"` opens a persistent session;
 * an id it returned gets that session's sandbox, which lives on for the next script unless this
 * run ended it.
 */
import type { Sandbox } from "../sandbox/launcher.ts";
import type { RawOutcome } from "../sandbox/launcher.ts";
import { PoolBusyError, type SandboxPool } from "../sandbox/pool.ts";
import type { Profile } from "../sandbox/profile.ts";
import {
  NEW_SESSION,
  SessionBusyError,
  SessionClosedError,
  SessionError,
  type SessionManager,
} from "../sandbox/sessions.ts";
import type { HostOutcome } from "./outcomes.ts";

/** A sandbox for one execution, and how to give it back. */
export interface SandboxLease {
  sandbox: Sandbox;
  /** The persistent session it belongs to (its id, which a new session gets only now). */
  sessionId?: string;
  /**
   * Gives the sandbox back once the script has ended (`outcome` undefined: it never got an
   * answer). Returns the session whose state was lost with it, if any.
   */
  release(outcome: RawOutcome | undefined): { lostSession: string } | null;
}

export interface SandboxSources {
  pool: SandboxPool;
  /** Persistent sessions (absent: a session id is refused). */
  sessions?: SessionManager;
}

export interface LeaseRequest {
  profile: Profile;
  sessionId?: string;
  /** Who is asking (one MCP connection); sessions belong to their owner. */
  owner: string;
  signal?: AbortSignal;
}

/** The sandbox, or why there is none: a failure is the outcome it maps to and a message. */
export async function acquireSandbox(
  request: LeaseRequest,
  sources: SandboxSources,
): Promise<SandboxLease | { outcome: HostOutcome; message: string }> {
  const { profile, sessionId, owner, signal } = request;
  try {
    if (sessionId === undefined) {
      const sandbox = await sources.pool.acquire(profile, signal);
      return {
        sandbox,
        release() {
          // Killed at once; reaping the process need not delay the answer (the pool tracks it).
          void sandbox[Symbol.asyncDispose]();
          return null;
        },
      };
    }
    const sessions = sources.sessions;
    if (!sessions) throw new SessionError("Sessions are not available here");
    const { id, sandbox } = sessionId === NEW_SESSION
      ? await sessions.open(owner, profile)
      : { id: sessionId, sandbox: sessions.resume(owner, sessionId, profile) };
    return {
      sandbox,
      sessionId: id,
      release(outcome) {
        const ended = outcome === undefined || endsSession(outcome);
        sessions.release(owner, id, ended);
        return ended ? { lostSession: id } : null;
      },
    };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // Given up on while it waited (the client cancelled, or the server is stopping).
    if (signal?.aborted) return { outcome: "CANCELLED", message };
    if (error instanceof PoolBusyError || error instanceof SessionBusyError) {
      return { outcome: "BUSY", message };
    }
    if (error instanceof SessionError) return { outcome: "POLICY_VIOLATION", message };
    if (error instanceof SessionClosedError) return { outcome: "CANCELLED", message };
    return { outcome: "SANDBOX_CRASHED", message };
  }
}

/** Whether a session's process cannot go on: stopped by the host, or its interpreter lost. */
export function endsSession(outcome: RawOutcome): boolean {
  return outcome.stop !== null || (outcome.reply?.ok === false && outcome.reply.fatal === true);
}
