import { performance } from 'node:perf_hooks';
import { db } from '../shared/db/client.ts';

/** Small helpers shared by the benchmarks: timing with percentiles and a DynamoDB call counter. */
export interface Timing {
  n: number;
  meanMs: number;
  p50Ms: number;
  p99Ms: number;
  /** Mean CPU time of this process per call (user + system), where measured. */
  cpuMs?: number;
}

export async function time(n: number, fn: () => Promise<unknown>, warmup = Math.min(50, n)): Promise<Timing> {
  for (let i = 0; i < warmup; i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
  }
  return summarise(samples);
}

/**
 * Like `time()` for several functions measured side by side: each round runs every function once,
 * in an order that rotates from round to round, so that whatever else the machine is doing falls
 * on all of them alike and their ratio stays fair. Also measures this process's CPU time per call
 * (DynamoDB Local, a separate process, is not in it).
 */
export async function timeInterleaved<const F extends readonly (() => Promise<unknown>)[]>(
  n: number,
  fns: F,
  warmup = Math.min(50, n),
): Promise<{ -readonly [K in keyof F]: Timing }> {
  for (let i = 0; i < warmup; i++) for (const fn of fns) await fn();
  const samples = fns.map((): number[] => []);
  const cpu = fns.map(() => 0);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < fns.length; j++) {
      const k = (i + j) % fns.length;
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await fns[k]!();
      samples[k]!.push(performance.now() - t0);
      const c = process.cpuUsage(c0);
      cpu[k]! += (c.user + c.system) / 1000;
    }
  }
  return samples.map((s, k) => ({ ...summarise(s), cpuMs: cpu[k]! / n })) as { -readonly [K in keyof F]: Timing };
}

/** Mean, p50 and p99 of latency samples in milliseconds. */
export function summarise(samples: number[]): Timing {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  return { n: sorted.length, meanMs: sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length), p50Ms: at(0.5), p99Ms: at(0.99) };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** One command the service's DynamoDB client sent: its name, its (document-client) input, when it ran. */
export interface DynamoCall {
  name: string;
  input: Record<string, unknown>;
  startMs: number;
  endMs: number;
}

let records: DynamoCall[] = [];
let installed = false;

/** Records every command the service's DynamoDB client sends (name, input and timing). */
export function countDynamoCalls(): { reset(): void; calls(): string[]; records(): DynamoCall[] } {
  if (!installed) {
    db().middlewareStack.add(
      (next, context) => async (args) => {
        // The `initialize` step sees the document-client input (marshalling happens later, before
        // serialisation) and wraps the whole call, retries included.
        const call: DynamoCall = {
          name: String(context.commandName ?? 'unknown'),
          input: args.input as Record<string, unknown>,
          startMs: performance.now(),
          endMs: NaN,
        };
        records.push(call);
        try {
          return await next(args);
        } finally {
          call.endMs = performance.now();
        }
      },
      { step: 'initialize', name: 'benchCallCounter' },
    );
    installed = true;
  }
  return { reset: () => (records = []), calls: () => records.map((r) => r.name), records: () => [...records] };
}

/**
 * Groups calls into sequential waits: a call that starts after every call of the current group
 * has ended opens a new group; calls in one group ran side by side. The number of groups is the
 * number of round trips a request waits for one after another.
 */
export function waves(calls: DynamoCall[]): DynamoCall[][] {
  const out: DynamoCall[][] = [];
  let end = -Infinity;
  for (const call of [...calls].sort((a, b) => a.startMs - b.startMs)) {
    if (out.length === 0 || call.startMs >= end) {
      out.push([call]);
      end = call.endMs;
    } else {
      out.at(-1)!.push(call);
      end = Math.max(end, call.endMs);
    }
  }
  return out;
}

/** Which kind of item a key names: `ACCOUNT#…` + `SERVER#…` → `ACCOUNT/SERVER`. */
function itemKind(pk: unknown, sk?: unknown): string {
  const head = (v: unknown) => String(v ?? '?').split('#')[0] ?? '?';
  return sk === undefined ? head(pk) : `${head(pk)}/${head(sk)}`;
}

/** A call in a few words: the command and the kind of item it touched, e.g. `GetItem ACCOUNT/SERVER`. */
export function describeCall(call: Pick<DynamoCall, 'name' | 'input'>): string {
  const name = call.name.replace(/Command$/, '');
  const input = call.input as {
    Key?: { PK?: unknown; SK?: unknown };
    Item?: { PK?: unknown; SK?: unknown };
    IndexName?: string;
    ExpressionAttributeValues?: Record<string, unknown>;
    TransactItems?: Record<string, { Key?: { PK?: unknown; SK?: unknown }; Item?: { PK?: unknown; SK?: unknown } }>[];
  };
  const item = input.Key ?? input.Item;
  if (item) return `${name} ${itemKind(item.PK, item.SK)}`;
  if (input.TransactItems) {
    const kinds = input.TransactItems.map((t) => {
      const [op, body] = Object.entries(t)[0] ?? ['?', {}];
      const k = body.Key ?? body.Item;
      return `${op} ${itemKind(k?.PK, k?.SK)}`;
    });
    return `${name}(${kinds.join(', ')})`;
  }
  if (name === 'Query') {
    const values = input.ExpressionAttributeValues ?? {};
    const pk = Object.entries(values).find(([k]) => /pk/i.test(k))?.[1];
    const prefix = Object.entries(values).find(([k]) => /prefix|^:p$/i.test(k))?.[1];
    return `Query ${input.IndexName ? `${input.IndexName} ` : ''}${itemKind(pk, prefix)}`;
  }
  return name;
}

/** The sequential waits of a request, each listing what ran side by side: `[A + B] → C → D`. */
export function describeWaves(calls: DynamoCall[]): string {
  return waves(calls)
    .map((w) => (w.length === 1 ? describeCall(w[0]!) : `[${w.map(describeCall).join(' + ')}]`))
    .join(' → ');
}

/** `GetItemCommand, UpdateItemCommand, GetItemCommand` → `GetItem 2, UpdateItem 1`. */
export function countByName(names: string[]): string {
  const counts = new Map<string, number>();
  for (const c of names) counts.set(c.replace(/Command$/, ''), (counts.get(c.replace(/Command$/, '')) ?? 0) + 1);
  return [...counts].map(([c, n]) => `${c} ${n}`).join(', ');
}

export const fmt = (ms: number): string => `${ms.toFixed(2)} ms`;

export const kb = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KB`;

export const ratio = (value: number, floor: number): string => (floor > 0 ? `${(value / floor).toFixed(2)}×` : '');

export function table(headers: string[], rows: (string | number)[][]): string {
  const all = [headers, ...rows.map((r) => r.map(String))];
  const widths = headers.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(headers), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...all.slice(1).map(line)].join('\n');
}
