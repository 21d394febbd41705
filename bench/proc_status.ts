/**
 * Reading a process's memory figures from Linux /proc (the bench's only view of a server).
 */

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
