/**
 * How many booted sandboxes the pool keeps ready for a profile, and how far it may grow: pure
 * decisions, table-tested in tests/sandbox_pool_test.ts.
 *
 * The pool starts at `pool_size` per profile in use. A caller that finds no booted sandbox (a
 * miss: it waits for a boot) raises that profile's target by one, up to the ceiling; a whole
 * idle period without any call lowers it by one, back down to `pool_size`. So a burst leaves
 * more sandboxes warm for the next burst, and a quiet server gives the memory back.
 */

/** What one idle, booted sandbox holds (measured: about 200 MB resident). */
export const SANDBOX_IDLE_MB = 220;

/** How long a profile's pool must see no call before it shrinks by one. */
export const POOL_IDLE_MS = 30_000;

/** The next target after `event`, kept within [min, max]. */
export function nextTarget(
  target: number,
  event: "miss" | "idle",
  bounds: { min: number; max: number },
): number {
  const next = event === "miss" ? target + 1 : target - 1;
  return Math.max(bounds.min, Math.min(bounds.max, next));
}

/**
 * The most sandboxes kept ready, over all profiles: two per core (each takes a core for about
 * half a second to boot, so more than that cannot be replaced as fast as a burst uses them), and
 * no more than a quarter of the memory available now can hold. Never below `min` (the
 * configured `pool_size`), never above 64.
 */
export function poolCeiling(
  machine: { cores: number; availableMb: number | null },
  min: number,
): number {
  const byCpu = 2 * Math.max(1, machine.cores);
  const byMemory = machine.availableMb === null
    ? byCpu
    : Math.floor(machine.availableMb / 4 / SANDBOX_IDLE_MB);
  return Math.min(64, Math.max(min, Math.min(byCpu, byMemory)));
}

/** The memory available now, in MB, from /proc/meminfo (null where there is none to read). */
export function availableMemoryMb(readText: (path: string) => string): number | null {
  try {
    const match = /^MemAvailable:\s+(\d+) kB/m.exec(readText("/proc/meminfo"));
    return match ? Math.floor(Number(match[1]) / 1024) : null;
  } catch {
    return null;
  }
}
