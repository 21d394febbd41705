/**
 * Bursts in one HTTP session: `total` execute_code calls with `inFlight` of them in flight at
 * once, through one Streamable HTTP session of `serve --http` (its per-session cap is 4: the rest
 * wait their turn). Counts the calls that did not succeed, and how many sandboxes the pool kept
 * ready before, right after, and a while after the burst.
 */
import { connect, execute, startHttp } from "../tests/_http.ts";
import { sandboxPids } from "../tests/_helpers.ts";

export interface BurstReport {
  total: number;
  inFlight: number;
  seconds: number;
  failures: string[];
  latenciesMs: number[];
  /** Sandbox processes of the host: before the burst, just after, and `idleSeconds` later. */
  sandboxes: { before: number; after: number; idle: number };
  idleSeconds: number;
}

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runBurst(total: number, inFlight: number): Promise<BurstReport> {
  await using server = await startHttp();
  const client = await connect(server.url);
  await execute(client, "print(1)"); // the start-up is done
  await delay(3000);
  const before = sandboxPids(server.pid).length;
  const failures: string[] = [];
  const latenciesMs: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < total) {
      const i = next++;
      const started = performance.now();
      try {
        const result = await execute(client, `sum(range(${i}))`);
        if (!result?.success || result.result !== (i * (i - 1)) / 2) {
          failures.push(
            `call ${i}: ${JSON.stringify(result?.diagnostics ?? result).slice(0, 200)}`,
          );
        }
      } catch (error) {
        failures.push(`call ${i}: ${String(error).slice(0, 200)}`);
      }
      latenciesMs.push(performance.now() - started);
    }
  }));
  const seconds = (performance.now() - t0) / 1000;
  await delay(1000);
  const after = sandboxPids(server.pid).length;
  const idleSeconds = 75; // the pool gives one back per 30 s without a call
  await delay(idleSeconds * 1000);
  const idle = sandboxPids(server.pid).length;
  await client.close();
  return {
    total,
    inFlight,
    seconds,
    failures,
    latenciesMs,
    sandboxes: { before, after, idle },
    idleSeconds,
  };
}
