/**
 * Reads a process's resident memory from /proc. V8's heap flags do not bound WebAssembly
 * memory, so the host watches the whole sandbox process from outside instead.
 */
export function readResidentBytes(pid: number): number | null {
  let status: string;
  try {
    status = Deno.readTextFileSync(`/proc/${pid}/status`);
  } catch {
    return null;
  }
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  return match ? Number(match[1]) * 1024 : null;
}
