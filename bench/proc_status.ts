/**
 * Reading a process tree's memory and CPU figures from Linux /proc (the bench's only view of a
 * server).
 */
import { childPids } from "../tests/_helpers.ts";

/** A `/proc/<pid>/status` field in kB (VmRSS, VmHWM, …), or null when unreadable. */
export function statusKb(pid: number, field: string): number | null {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(
      Deno.readTextFileSync(`/proc/${pid}/status`),
    );
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** CPU seconds of `pid`, its reaped children, and its live descendants (Linux /proc). */
export function treeCpuSeconds(pid: number): number {
  const ticks = 100; // USER_HZ
  // A process's own CPU and that of its children it has reaped: a sandbox's CPU moves from its
  // own entry to the host's when the host reaps it.
  const stat = (p: number) => {
    try {
      const text = Deno.readTextFileSync(`/proc/${p}/stat`);
      const f = text.slice(text.lastIndexOf(")") + 2).split(" ").map(Number);
      return f[11]! + f[12]! + f[13]! + f[14]!;
    } catch {
      return 0;
    }
  };
  return [pid, ...descendants(pid)].reduce((sum, p) => sum + stat(p), 0) / ticks;
}

function descendants(pid: number): number[] {
  const out: number[] = [];
  for (const child of childPids(pid)) out.push(child, ...descendants(child));
  return out;
}

export function treeRssMb(pid: number): number {
  return [pid, ...descendants(pid)].reduce((sum, p) => sum + (statusKb(p, "VmRSS") ?? 0), 0) /
    1024;
}

/**
 * Waits until `pid`'s tree is quiet: a 200 ms window in which it used under a tenth of a core
 * (a sandbox still booting, say, is not). Gives up after 10 s.
 */
export async function untilQuiet(pid: number): Promise<void> {
  const WINDOW_MS = 200;
  const deadline = performance.now() + 10_000;
  let before = treeCpuSeconds(pid);
  while (performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, WINDOW_MS));
    const now = treeCpuSeconds(pid);
    if (now - before < WINDOW_MS / 1000 / 10) return;
    before = now;
  }
}
