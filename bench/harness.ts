import { performance } from 'node:perf_hooks';
import { db } from '../shared/db/client.ts';

/** Small helpers shared by the benchmarks: timing with percentiles and a DynamoDB call counter. */
export interface Timing {
  n: number;
  meanMs: number;
  p50Ms: number;
  p99Ms: number;
}

export async function time(n: number, fn: () => Promise<unknown>, warmup = Math.min(50, n)): Promise<Timing> {
  for (let i = 0; i < warmup; i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;
  return { n, meanMs: samples.reduce((a, b) => a + b, 0) / n, p50Ms: at(0.5), p99Ms: at(0.99) };
}

let calls: string[] = [];
let installed = false;

/** Records every command the service's DynamoDB client sends. */
export function countDynamoCalls(): { reset(): void; calls(): string[] } {
  if (!installed) {
    db().middlewareStack.add(
      (next, context) => async (args) => {
        calls.push(String(context.commandName ?? 'unknown'));
        return next(args);
      },
      { step: 'initialize', name: 'benchCallCounter' },
    );
    installed = true;
  }
  return { reset: () => (calls = []), calls: () => [...calls] };
}

export const fmt = (ms: number): string => `${ms.toFixed(2)} ms`;

export function table(headers: string[], rows: (string | number)[][]): string {
  const all = [headers, ...rows.map((r) => r.map(String))];
  const widths = headers.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(headers), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...all.slice(1).map(line)].join('\n');
}
