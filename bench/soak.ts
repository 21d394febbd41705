/**
 * The soak run: many executions of good, failing and hostile scripts, with tool calls, through
 * one server process. Reports unexpected outcomes, host memory growth, and anything left behind.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";

interface SoakCase {
  name: string;
  /** How often it appears, relative to the others. */
  weight: number;
  code: string;
  timeout_s?: number;
  expect: (r: Record<string, unknown>) => boolean;
}

const errorType = (r: Record<string, unknown>) =>
  (r.diagnostics as { error_type?: string } | null)?.error_type ?? null;

export const SOAK_CASES: SoakCase[] = [
  {
    name: "print",
    weight: 30,
    code: "print(sum(range(1000)))",
    expect: (r) => r.stdout === "499500\n",
  },
  {
    name: "tool calls",
    weight: 30,
    code:
      "from mcp_tools import everything, memory\neverything.echo(message='soak')\nmemory.read_graph()\n'ok'",
    expect: (r) => r.result === "ok",
  },
  {
    name: "exception",
    weight: 15,
    code: "{}['missing']",
    expect: (r) => errorType(r) === "KeyError",
  },
  {
    name: "syntax error",
    weight: 5,
    code: "def broken(:\n  pass",
    expect: (r) => errorType(r) === "SyntaxError",
  },
  {
    name: "host file read",
    weight: 5,
    code: "import js\njs.Deno.readTextFileSync('/etc/passwd')",
    expect: (r) => r.success === false && !JSON.stringify(r).includes("root:x:0"),
  },
  {
    name: "print flood",
    weight: 4,
    code: "while True:\n    print('x' * 4096)",
    expect: (r) => errorType(r) === "OUTPUT_LIMIT",
  },
  {
    name: "allocation bomb",
    weight: 3,
    code: "a = []\nwhile True:\n    a.append(b'x' * (64 * 1024 * 1024))",
    expect: (r) => errorType(r) === "MEMORY_LIMIT",
  },
  {
    name: "denied tool",
    weight: 4,
    code: "import _codemode\n_codemode.call_tool('everything', 'no-such-tool', {})",
    expect: (r) => errorType(r) === "ToolError",
  },
  {
    name: "infinite loop",
    weight: 2,
    code: "while True:\n    pass",
    timeout_s: 1,
    expect: (r) => errorType(r) === "TIMEOUT",
  },
  {
    name: "protocol garbage",
    weight: 2,
    code:
      "import js\nfor _ in range(20):\n    js.Deno.stdout.writeSync(js.TextEncoder.new().encode('junk\\n'))\n'after'",
    expect: (r) => r.result === "after" && r.protocol_violations === 20,
  },
];

/** Deterministic order: the cases interleaved by weight (a stride through the weighted bag). */
export function soakPlan(total: number): SoakCase[] {
  const bag = SOAK_CASES.flatMap((c) => Array.from({ length: c.weight }, () => c));
  const stride = 37; // coprime with the bag size (100), so every slot comes up
  return Array.from({ length: total }, (_, i) => bag[(i * stride) % bag.length]!);
}

export interface SoakReport {
  total: number;
  unexpected: { name: string; detail: string }[];
  perCase: Map<string, number>;
  seconds: number;
}

export async function runSoak(client: Client, total: number, concurrency = 2): Promise<SoakReport> {
  const plan = soakPlan(total);
  const unexpected: { name: string; detail: string }[] = [];
  const perCase = new Map<string, number>();
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < plan.length) {
      const c = plan[next++]!;
      perCase.set(c.name, (perCase.get(c.name) ?? 0) + 1);
      try {
        const reply = await client.callTool(
          { name: "execute_code", arguments: { code: c.code, timeout_s: c.timeout_s } },
          undefined,
          { timeout: 120_000 },
        );
        const result = reply.structuredContent as Record<string, unknown>;
        if (!c.expect(result)) {
          unexpected.push({ name: c.name, detail: JSON.stringify(result).slice(0, 300) });
        }
      } catch (error) {
        unexpected.push({ name: c.name, detail: String(error) });
      }
    }
  }));
  return { total, unexpected, perCase, seconds: (performance.now() - started) / 1000 };
}
