import { startLocalStack } from '../dev/stack.ts';
import { type CallBudgetOptions, dynamoCallBudget, type ProcessState } from '../shared/instances/call-budget.ts';
import { runAsCaller } from '../shared/instances/caller.ts';
import { sharesOf } from '../shared/instances/call-budget-window.ts';
import { countDynamoCalls, table } from './harness.ts';

/**
 * The panel call budget (shared/instances/call-budget.ts) on DynamoDB Local, with a clock of its own so
 * minutes pass in seconds: the real conditional writes, four "processes" each with its own cached
 * window, demand at 1.5 times the panel's limit. What gets through a minute as a fraction of the
 * limit, the most calls in any 60 s (the panel's window opens at any first hit), and the DynamoDB
 * writes per panel call; beside them the previous scheme (a counter per clock minute with the
 * previous minute weighted in, 90 % of the limit), computed from its decision rule, under the same
 * demand and under bursts at the end of each minute.
 */
const MINUTE = 60_000;
const MINUTES = 7;
/** The budget fills and drains with a period of its window (64 s): the steady rate is read over whole periods. */
const STEADY_FROM = 2 * MINUTE;
const STEADY_MS = 4 * 64_000;
const PROCESSES = 4;

function maxInAnyWindow(times: number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let max = 0;
  for (let hi = 0, lo = 0; hi < sorted.length; hi++) {
    while (sorted[hi]! - sorted[lo]! >= MINUTE) lo++;
    max = Math.max(max, hi - lo + 1);
  }
  return max;
}

/** The previous scheme's decision: ceil(prev × (1 − f)) + used < 90 % of the limit. */
function previousScheme(limit: number, times: number[]): number[] {
  const budget = Math.floor(limit * 0.9);
  const counts = new Map<number, number>();
  const sent: number[] = [];
  for (const t of [...times].sort((a, b) => a - b)) {
    const w = Math.floor(t / MINUTE) * MINUTE;
    const carried = Math.ceil((counts.get(w - MINUTE) ?? 0) * (1 - (t - w) / MINUTE));
    if (carried + (counts.get(w) ?? 0) < budget) {
      counts.set(w, (counts.get(w) ?? 0) + 1);
      sent.push(t);
    }
  }
  return sent;
}

const evenDemand = (limit: number, start: number) =>
  Array.from({ length: 1.5 * limit * MINUTES }, (_, i) => start + (i * MINUTE) / (1.5 * limit));
/** A burst late in each minute, at 59 s and then 58 s, so one panel window opened by the first holds the next. */
const edgeBursts = (limit: number, start: number) =>
  Array.from({ length: MINUTES }, (_, m) =>
    Array.from({ length: 2 * limit }, (_, i) => start - 17_000 + m * MINUTE + (m % 2 ? 58_000 : 59_000) + (i * 1000) / (2 * limit)),
  ).flat();

/** Spends at the given (virtual) times, round robin over the processes; returns the times that were allowed and the writes made. */
async function runBudget(id: string, limit: number, times: number[], caller?: (i: number) => string) {
  let now = 0;
  const processes: ProcessState[] = Array.from({ length: PROCESSES }, () => ({
    windows: new Map(),
    corrected: new Map(),
    previousMinutes: { minute: 0, counts: new Map() },
  }));
  const budgets = processes.map((process) => {
    const options: CallBudgetOptions = { now: () => now, process };
    return dynamoCallBudget(id, { applicationPerMinute: limit, clientPerMinute: limit }, options);
  });
  const counter = countDynamoCalls();
  counter.reset();
  const sent: number[] = [];
  for (const [i, t] of times.entries()) {
    now = t;
    const spend = () => budgets[i % PROCESSES]!.spend('client', 'read');
    const ok = await (caller ? runAsCaller(caller(i), spend) : spend()).then(
      () => true,
      () => false,
    );
    if (ok) sent.push(t);
  }
  const writes = counter.records().filter((r) => r.name === 'UpdateItemCommand').length;
  return { sent, writes };
}

export async function benchCallBudget(): Promise<string> {
  const stack = await startLocalStack({ tableName: 'bench-call-budget', panel: false });
  try {
    const rows: (string | number)[][] = [];
    // A start well away from the epoch and from minute boundaries, as the real clock is.
    const start = Math.floor(Date.now() / MINUTE) * MINUTE + 17_000;
    for (const limit of [240]) {
      const steady = (sent: number[]) =>
        sent.filter((t) => t >= start + STEADY_FROM && t < start + STEADY_FROM + STEADY_MS).length / (STEADY_MS / MINUTE) / limit;
      const even = evenDemand(limit, start);
      const platform = await runBudget(`bench-even-${limit}`, limit, even);
      const burst = await runBudget(`bench-burst-${limit}`, limit, edgeBursts(limit, start));
      // Customers: 40 accounts in turn (each call also counts on the account's counter).
      const customers = await runBudget(`bench-customers-${limit}`, limit, even, (i) => `bench-account-${i % 40}`);
      const oldEven = previousScheme(limit, even);
      const oldBurst = previousScheme(limit, edgeBursts(limit, start));
      rows.push([
        limit,
        `${steady(oldEven).toFixed(3)} → ${steady(platform.sent).toFixed(3)}`,
        `${steady(customers.sent).toFixed(3)} (budget ${sharesOf(limit, 'client').budgetPerMinute}, reserve ${sharesOf(limit, 'client').systemReserve})`,
        `${maxInAnyWindow(oldEven)} → ${maxInAnyWindow(platform.sent)}`,
        `${maxInAnyWindow(oldBurst)} → ${maxInAnyWindow(burst.sent)}`,
        `1 / 2 → ${(platform.writes / even.length).toFixed(2)} / ${(customers.writes / even.length).toFixed(2)}`,
      ]);
    }
    return [
      '## 9. The panel call budget (previous scheme → now)',
      '',
      `DynamoDB Local with a virtual clock: ${PROCESSES} processes, each with its own cached window, spend the real budget for ${MINUTES} minutes at 1.5× the limit; "steady" is read over four whole periods of the window (64 s each) from minute 3. The previous scheme is its decision rule under the same timings (it stored one counter a minute). "Max in any 60 s" is the most calls in any 60 s stretch, at least what a panel window opened by any first hit can hold; over the limit, the panel answers 429 and pauses every customer.`,
      '',
      table(
        [
          'limit',
          'steady rate / limit (platform)',
          'steady rate / limit (customers)',
          'max in any 60 s, even demand',
          'max in any 60 s, bursts at minute ends',
          'DynamoDB writes per attempt (platform / customer)',
        ],
        rows,
      ),
      '',
      'Customers stop at the budget less the system reserve, so their steady rate is lower by design; the platform can use what they leave. Writes per attempt count every UpdateItem, refused ones included (a third of the demand is refused here) and the replans when another process moved the window (about one in 32 calls, at each bucket edge); the previous scheme wrote once per attempt, twice for a customer’s read.',
    ].join('\n');
  } finally {
    await stack.stop();
  }
}
