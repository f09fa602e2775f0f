import { describe, expect, it } from 'vitest';
import {
  type AccountCalls,
  accountCapFor,
  ARRIVAL_SLACK_MS,
  applySpend,
  type CallClass,
  ceilingFor,
  NEWCOMER_CALLS,
  planSpend,
  SEND_WITHIN_MS,
  sharesOf,
  slotOf,
  staleFor,
  type WindowState,
} from '../../shared/instances/call-budget-window.ts';
import { mulberry32 as rng } from './random.ts';

/**
 * The call budget's window against a model of the panel's limiter (Laravel's RateLimiter::hit: a
 * fixed 60 s window opened by the first hit, per key owner), with the same pure plan and apply
 * functions the real budget turns into its conditional UpdateItem (shared/instances/call-budget.ts).
 *
 * A discrete-event simulation: several processes, each with its own clock skew and its own cached
 * copy of the window item; each spend decides on its clock, commits to the shared item after a
 * random write latency (commits are serialized, as DynamoDB serializes conditional writes on one
 * item), learns the result after another latency, and only then sends the call, which reaches the
 * panel within the slack the proof assumes. The attacker picks the timings: bursts on both sides
 * of minute and bucket edges, slow writes, many processes.
 */

export const MINUTE = 60_000;

export interface Scenario {
  limit: number;
  processes: number;
  /** Real times at which some process wants to make a call. */
  requests: { at: number; process: number }[];
  skewMs: number;
  maxWriteMs: number;
  maxReturnMs: number;
  seed: number;
}

type Ev =
  | { t: number; kind: 'decide'; process: number; attempt: number }
  | { t: number; kind: 'commit'; process: number; attempt: number; plan: ReturnType<typeof planSpend>; decidedAt: number }
  | { t: number; kind: 'return'; process: number; attempt: number; ok: boolean; seen: WindowState | undefined; stale: boolean };

/** Runs a scenario; returns when each sent call reached the panel. */
export function simulate(s: Scenario): number[] {
  const random = rng(s.seed);
  const skew = Array.from({ length: s.processes }, () => (random() * 2 - 1) * s.skewMs);
  const cache: (WindowState | undefined)[] = Array.from({ length: s.processes }, () => undefined);
  const ceiling = sharesOf(s.limit, 'application').budgetPerMinute;
  let item: WindowState | undefined;
  const arrivals: number[] = [];
  // A binary heap of events by time (ties in insertion order).
  const queue: (Ev & { n: number })[] = [];
  let n = 0;
  const before = (a: Ev & { n: number }, b: Ev & { n: number }) => a.t < b.t || (a.t === b.t && a.n < b.n);
  const push = (ev: Ev) => {
    queue.push({ ...ev, n: n++ });
    for (let i = queue.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1;
      if (!before(queue[i]!, queue[parent]!)) break;
      [queue[i], queue[parent]] = [queue[parent]!, queue[i]!];
      i = parent;
    }
  };
  const pop = (): Ev => {
    const top = queue[0]!;
    const last = queue.pop()!;
    if (queue.length) {
      queue[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < queue.length && before(queue[l]!, queue[m]!)) m = l;
        if (r < queue.length && before(queue[r]!, queue[m]!)) m = r;
        if (m === i) break;
        [queue[i], queue[m]] = [queue[m]!, queue[i]!];
        i = m;
      }
    }
    return top;
  };
  for (const r of s.requests) push({ t: r.at, kind: 'decide', process: r.process, attempt: 0 });
  const clock = (p: number, t: number) => t + skew[p]!;
  while (queue.length) {
    const ev = pop();
    if (ev.kind === 'decide') {
      const decidedAt = clock(ev.process, ev.t);
      const plan = planSpend(cache[ev.process], decidedAt, ceiling);
      push({ t: ev.t + random() * s.maxWriteMs, kind: 'commit', process: ev.process, attempt: ev.attempt, plan, decidedAt });
    } else if (ev.kind === 'commit') {
      const after = applySpend(item, ev.plan, ev.decidedAt);
      const stale = !after && staleFor(item, ev.plan);
      if (after) item = after;
      push({
        t: ev.t + random() * s.maxReturnMs,
        kind: 'return',
        process: ev.process,
        attempt: ev.attempt,
        ok: !!after,
        seen: item,
        stale,
      });
    } else {
      cache[ev.process] = ev.seen;
      if (ev.ok) {
        // The real budget's check: counted in a bucket too old for the window to hold the call when the panel counts it.
        if (clock(ev.process, ev.t) - ev.seen!.cur > SEND_WITHIN_MS) continue;
        arrivals.push(ev.t + random() * (ARRIVAL_SLACK_MS - s.skewMs));
      } else if (ev.stale && ev.attempt < 3) {
        push({ t: ev.t, kind: 'decide', process: ev.process, attempt: ev.attempt + 1 });
      }
    }
  }
  return arrivals.sort((a, b) => a - b);
}

/** The most calls in any 60 s stretch: at least what any window the panel opens could hold. */
export function maxInAnyWindow(arrivals: number[]): number {
  let max = 0;
  let lo = 0;
  for (let hi = 0; hi < arrivals.length; hi++) {
    while (arrivals[hi]! - arrivals[lo]! >= MINUTE) lo++;
    max = Math.max(max, hi - lo + 1);
  }
  return max;
}

/** The panel's limiter itself: a window opens at the first hit after the last one expired; hits over the limit are 429s. */
export function panel429s(arrivals: number[], limit: number): number {
  let windowEnd = Number.NEGATIVE_INFINITY;
  let hits = 0;
  let refused = 0;
  for (const t of arrivals) {
    if (t >= windowEnd) {
      windowEnd = t + MINUTE;
      hits = 0;
    }
    if (hits >= limit) refused++;
    else hits++;
  }
  return refused;
}

/** Attack timings, in real time (ms), over `minutes`. */
export const strategies: Record<string, (random: () => number, limit: number, processes: number, minutes: number) => Scenario['requests']> =
  {
    'uniform, twice the limit': (random, limit, processes, minutes) =>
      Array.from({ length: 2 * limit * minutes }, () => ({ at: random() * minutes * MINUTE, process: Math.floor(random() * processes) })),
    'bursts on both sides of every minute': (random, limit, processes, minutes) =>
      Array.from({ length: minutes }, (_, m) =>
        Array.from({ length: 2 * limit }, (_, i) => ({
          at: (m + 1) * MINUTE + (i % 2 ? 1 : -1) * random() * 3000,
          process: Math.floor(random() * processes),
        })),
      ).flat(),
    'a burst at the end of every minute (the panel window opened by one spans the next)': (random, limit, processes, minutes) =>
      Array.from({ length: minutes }, (_, m) =>
        Array.from({ length: 2 * limit }, () => ({ at: m * MINUTE + 58_000 + random() * 2000, process: Math.floor(random() * processes) })),
      ).flat(),
    'bursts at bucket edges': (random, limit, processes, minutes) =>
      Array.from({ length: 3 * limit * minutes }, () => ({
        at: Math.floor(random() * minutes * 30) * 2000 + (random() < 0.5 ? random() * 30 : 2000 - random() * 30),
        process: Math.floor(random() * processes),
      })),
    'a trickle, then everything at once': (random, limit, processes, minutes) =>
      Array.from({ length: minutes }, (_, m) => [
        ...Array.from({ length: limit / 4 }, () => ({ at: m * MINUTE + random() * 55_000, process: Math.floor(random() * processes) })),
        ...Array.from({ length: 2 * limit }, () => ({
          at: m * MINUTE + 59_000 + random() * 2000,
          process: Math.floor(random() * processes),
        })),
      ]).flat(),
  };

/**
 * The newcomer slice, with the production decision (ceilingFor, isNewcomer) over the window's plan
 * and apply: five accounts that called at their share in the previous minute go on calling at it,
 * interleaved at random with a sixth account's first calls and with what the previous minute left
 * in the trailing window. One bucket: every call is decided at the same instant.
 */
export function newcomerMinute(options: {
  limit: number;
  api: 'application' | 'client';
  cls: CallClass;
  carried: number;
  random: () => number;
  /** The rule before the fix: only this minute's count made an account a newcomer. */
  previousMinuteIgnored?: boolean;
}): { newcomerServed: number; newcomerTried: number; systemServed: number } {
  const shares = sharesOf(options.limit, options.api);
  const cap = accountCapFor(shares, options.cls);
  const now = 3 * MINUTE + 10_000;
  // The previous minute's calls still in the trailing window (no more than established calls may hold).
  let item: WindowState | undefined = { cur: now, total: options.carried, slots: { [slotOf(now - 20_000)]: options.carried } };
  const counts = new Map<string, number>();
  const spend = (who: 'system' | AccountCalls): boolean => {
    const next = applySpend(item, planSpend(item, now, ceilingFor(shares, who, options.cls)), now);
    if (next) item = next;
    return !!next;
  };
  const accountSpend = (account: string, previousMinuteCalls: number): boolean => {
    const used = counts.get(account) ?? 0;
    if (used >= cap) return false; // the account's own counter refuses first
    counts.set(account, used + 1);
    return spend({ accountCalls: used + 1, previousMinuteCalls: options.previousMinuteIgnored ? 0 : previousMinuteCalls });
  };
  const newcomerTried = Math.min(NEWCOMER_CALLS, shares.newcomerSlice);
  const calls = [
    ...['a', 'b', 'c', 'd', 'e'].flatMap((a) => Array.from({ length: cap + 2 }, () => a)),
    ...Array.from({ length: newcomerTried }, () => 'new'),
  ];
  for (let i = calls.length - 1; i > 0; i--) {
    const j = Math.floor(options.random() * (i + 1));
    [calls[i], calls[j]] = [calls[j]!, calls[i]!];
  }
  let newcomerServed = 0;
  for (const who of calls) {
    if (who === 'new') newcomerServed += accountSpend(who, 0) ? 1 : 0;
    else accountSpend(who, cap);
  }
  let systemServed = 0;
  while (spend('system')) systemServed++;
  return { newcomerServed, newcomerTried, systemServed };
}

/** How much of the model a layer runs: the unit layer a sample, the reliability layer every limit. */
export interface ModelSize {
  /** Seeded runs of each attack strategy (limits 12, 60, 240, 720 in turn; every third with slow writes). */
  runsPerStrategy: number;
  sustainedLimits: number[];
  /** The limits (calls a minute) the newcomer slice is checked at, and runs per limit and class. */
  newcomerLimits: number[];
  newcomerRuns: number;
}

/** The model's cases, at a size (tests/unit/call-budget-model.test.ts, tests/reliability/call-budget-model.test.ts). */
export function callBudgetModelCases(size: ModelSize): void {
  describe('the call budget against the panel’s fixed first-hit window', () => {
    const limits = [12, 60, 240, 720];
    for (const [name, make] of Object.entries(strategies)) {
      it(`${name}: no 60 s window holds more than the limit, the panel answers no 429 (random limits, processes, skew, latencies)`, () => {
        for (let run = 0; run < size.runsPerStrategy; run++) {
          const random = rng(1000 + run);
          const limit = limits[run % limits.length]!;
          const processes = 1 + Math.floor(random() * 12);
          const minutes = 3;
          const scenario: Scenario = {
            limit,
            processes,
            requests: make(random, limit, processes, minutes),
            skewMs: random() * 100,
            // Up to slow writes and answers: a count that returns past SEND_WITHIN_MS after its bucket is not sent.
            maxWriteMs: run % 3 === 0 ? 2500 : 60,
            maxReturnMs: run % 3 === 0 ? 2500 : 60,
            seed: run,
          };
          const arrivals = simulate(scenario);
          const context = `run ${run}, limit ${limit}, ${processes} processes, ${arrivals.length} calls sent`;
          expect(maxInAnyWindow(arrivals), context).toBeLessThanOrEqual(limit);
          expect(panel429s(arrivals, limit), context).toBe(0);
          // Not safe by refusing everything: with ordinary latencies at least a window's budget gets through.
          if (scenario.maxWriteMs < 100)
            expect(arrivals.length, context).toBeGreaterThanOrEqual(sharesOf(limit, 'application').budgetPerMinute);
          else expect(arrivals.length, context).toBeGreaterThan(0);
        }
      }, 60_000);
    }

    it('sustained, with demand above the limit: at least 0.9 of the limit a minute', () => {
      for (const limit of size.sustainedLimits) {
        const random = rng(limit);
        const minutes = 10;
        // Demand evenly spread at 1.5 times the limit, from four processes with ordinary latencies.
        const requests = Array.from({ length: 1.5 * limit * minutes }, (_, i) => ({
          at: (i * MINUTE) / (1.5 * limit) + random() * 10,
          process: i % 4,
        }));
        const arrivals = simulate({ limit, processes: 4, requests, skewMs: 5, maxWriteMs: 20, maxReturnMs: 20, seed: limit });
        const steady = arrivals.filter((t) => t >= 2 * MINUTE && t < minutes * MINUTE).length / (minutes - 2);
        expect(steady / limit, `limit ${limit}`).toBeGreaterThanOrEqual(0.9);
        expect(maxInAnyWindow(arrivals)).toBeLessThanOrEqual(limit);
      }
    }, 60_000);

    it('the harness catches an unsafe budget: the previous scheme (per-minute counter, previous minute weighted) lets a burst at the end of each of two minutes into one panel window', () => {
      // That scheme's decision, as it was: allowed while ceil(prev × (1 − f)) + used < budget (90 % of the limit).
      const limit = 240;
      const budget = Math.floor(limit * 0.9);
      const counts = new Map<number, number>();
      const arrivals: number[] = [];
      const random = rng(7);
      const times = [
        ...Array.from({ length: 2 * limit }, () => 59_000 + random() * 999),
        ...Array.from({ length: 2 * limit }, () => 118_000 + random() * 999),
      ].sort((a, b) => a - b);
      for (const t of times) {
        const w = Math.floor(t / MINUTE) * MINUTE;
        const f = (t - w) / MINUTE;
        const carried = Math.ceil((counts.get(w - MINUTE) ?? 0) * (1 - f));
        if (carried + (counts.get(w) ?? 0) < budget) {
          counts.set(w, (counts.get(w) ?? 0) + 1);
          arrivals.push(t);
        }
      }
      expect(maxInAnyWindow(arrivals)).toBeGreaterThan(limit);
      expect(panel429s(arrivals, limit)).toBeGreaterThan(0);
    });

    it('shares: customers never reach the system reserve, established accounts never reach the newcomer slice', () => {
      for (const limit of [12, 40, 60, 240, 720, 5000]) {
        for (const api of ['application', 'client'] as const) {
          const s = sharesOf(limit, api);
          expect(s.budgetPerMinute).toBeLessThanOrEqual(limit);
          expect(s.writeCeiling + s.newcomerSlice + s.systemReserve).toBeLessThanOrEqual(s.budgetPerMinute);
          expect(s.readCeiling).toBeLessThanOrEqual(s.writeCeiling);
          expect(s.systemReserve).toBeGreaterThan(0);
          expect(s.newcomerSlice).toBeGreaterThan(0);
        }
      }
    });
  });

  describe(`the newcomer slice at ${size.newcomerLimits.length} limits an operator may configure`, () => {
    const classes = [
      ['application', 'read'],
      ['application', 'write'],
      ['client', 'control'],
    ] as const;

    it(`${size.newcomerLimits[0]} to ${size.newcomerLimits.at(-1)} a minute: a new account's first calls are served while five others call at their share; the system reserve stays whole`, () => {
      const random = rng(36);
      for (const limit of size.newcomerLimits) {
        for (const [api, cls] of classes) {
          const shares = sharesOf(limit, api);
          const established = ceilingFor(shares, { accountCalls: NEWCOMER_CALLS + 1, previousMinuteCalls: 0 }, cls);
          for (let run = 0; run < size.newcomerRuns; run++) {
            const carried = Math.floor(random() * (established + 1));
            const out = newcomerMinute({ limit, api, cls, carried, random });
            const context = `limit ${limit}, ${api} ${cls}, run ${run}, ${carried} carried`;
            // Resources, power, console and files: four first calls at the least.
            expect(out.newcomerTried, context).toBeGreaterThanOrEqual(4);
            expect(out.newcomerServed, context).toBe(out.newcomerTried);
            expect(out.systemServed, context).toBeGreaterThanOrEqual(shares.systemReserve);
          }
        }
      }
    }, 60_000);

    it('the harness catches the previous rule (only the minute counted): at 40 a minute the five spend the slice', () => {
      const random = rng(40);
      const refused = Array.from({ length: 20 }, () =>
        newcomerMinute({ limit: 40, api: 'client', cls: 'control', carried: 29, random, previousMinuteIgnored: true }),
      ).filter((out) => out.newcomerServed < out.newcomerTried);
      expect(refused.length).toBeGreaterThan(0);
    });
  });
}
