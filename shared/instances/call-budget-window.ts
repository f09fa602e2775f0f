/**
 * The call budget's window, as pure functions (no I/O): shared/instances/call-budget.ts turns a plan
 * into one conditional UpdateItem, and tests/unit/call-budget-model.test.ts runs the same plans
 * against a model of the panel's limiter.
 *
 * The panel counts a fixed 60 s window that opens at its first hit, per limiter and key owner
 * (docs/design/panel.md). So the budget bounds the calls of EVERY 60 s stretch, not of
 * clock minutes: one item per panel and API holds SLOTS buckets of BUCKET_MS each (the current one
 * and the 31 before it, 62–64 s) and their running `total`; a call is counted in the bucket `cur`
 * with the condition `total < ceiling`, so the sum over the trailing 62 s never passes the ceiling.
 *
 * Why that bounds every window the panel can count. A call is counted in bucket `cur`, which only
 * moves forward and is never ahead of the clock of the process that moved it; it is sent only if,
 * right after its count, the clock is at most SEND_WITHIN_MS past the start of that bucket, and
 * we assume it reaches the panel within ARRIVAL_SLACK_MS after that (clock skew included). So a
 * call the panel receives at t was counted in a bucket starting after t − SEND_WITHIN_MS −
 * ARRIVAL_SLACK_MS. Take the calls the panel receives in one window [a, a + 60 s), and among them
 * the one counted last in the newest bucket c: every other one is counted in a bucket after
 * a − 4 s, and c ≤ a + 60 s, so all sit in the 32 buckets ending at c, which that last call's
 * condition saw whole (buckets before c were closed; the ones in c were counted before it). Hence
 * at most `ceiling` ≤ the budget. Sustained, the budget is spent over 64 s: 60/64 of it a minute.
 */
export const BUCKET_MS = 2000;
export const SLOTS = 32;
/** A call whose count returns later than this after its bucket's start is not sent (its unit is lost, never over-sent). */
export const SEND_WITHIN_MS = 3000;
/** Assumed: from that check to the panel's receipt of the call, clock skew between processes included. */
export const ARRIVAL_SLACK_MS = 1000;
// The proof's arithmetic: a bucket counted up to 60 s + both margins before the newest is still in the window.
if (SLOTS * BUCKET_MS < 60_000 + SEND_WITHIN_MS + ARRIVAL_SLACK_MS)
  throw new Error('the call budget window does not cover the panel window');

/** The shared item's state (absent before the first call). */
export interface WindowState {
  /** Start (ms) of the newest bucket anyone counted in. */
  cur: number;
  /** Calls counted in the buckets (cur − (SLOTS − 1) × BUCKET_MS … cur]. */
  total: number;
  /** Per-bucket counts, by slot (bucket start / BUCKET_MS mod SLOTS); a missing slot is 0. */
  slots: Record<number, number>;
  pausedUntil?: number;
}

export const bucketOf = (ms: number): number => Math.floor(ms / BUCKET_MS) * BUCKET_MS;
export const slotOf = (bucketStart: number): number => (bucketStart / BUCKET_MS) % SLOTS;

/**
 * One spend as a conditional write. Every kind requires: not paused, `cur` as this process last
 * saw it (`expectCur`, or no item at all), and `total < totalBelow`.
 * - `add`: counted in `cur` (the spender's clock is in `cur`, or behind it).
 * - `rotate`: the spender's clock has passed `cur`: buckets that leave the window are cleared and
 *   subtracted (`delta = 1 − expired`), `cur` moves to the spender's bucket. `totalBelow` is the
 *   ceiling plus what leaves, so the condition is the new total's.
 * - `reset`: the whole window is older than the trailing span (or there is no item): total = 1.
 */
export interface SpendPlan {
  kind: 'add' | 'rotate' | 'reset';
  /** null: the item must not exist yet. */
  expectCur: number | null;
  bucket: number;
  totalBelow: number;
  /** Slots set to 0 (rotate, reset), the new bucket's slot excepted: it is set to 1. */
  clearSlots: number[];
  delta: number;
}

export function planSpend(known: WindowState | undefined, now: number, ceiling: number): SpendPlan {
  const b = bucketOf(now);
  if (!known) return { kind: 'reset', expectCur: null, bucket: b, totalBelow: ceiling, clearSlots: [], delta: 1 };
  if (b <= known.cur) return { kind: 'add', expectCur: known.cur, bucket: known.cur, totalBelow: ceiling, clearSlots: [], delta: 1 };
  const steps = (b - known.cur) / BUCKET_MS;
  if (steps >= SLOTS) {
    const clearSlots = Array.from({ length: SLOTS }, (_, i) => i).filter((s) => s !== slotOf(b));
    // Everything leaves: the condition on total is always true, so it is not the ceiling's.
    return { kind: 'reset', expectCur: known.cur, bucket: b, totalBelow: Number.MAX_SAFE_INTEGER, clearSlots, delta: 1 };
  }
  let expired = 0;
  const clearSlots: number[] = [];
  for (let x = known.cur + BUCKET_MS; x <= b; x += BUCKET_MS) {
    // These slots hold buckets older than cur − (SLOTS − 1 − steps) × BUCKET_MS: closed before `known` was read.
    expired += known.slots[slotOf(x)] ?? 0;
    if (x !== b) clearSlots.push(slotOf(x));
  }
  return { kind: 'rotate', expectCur: known.cur, bucket: b, totalBelow: ceiling + expired, clearSlots, delta: 1 - expired };
}

/** The item's window is not the one the plan was made from: someone else moved it; plan again. */
export const staleFor = (item: WindowState | undefined, plan: SpendPlan): boolean =>
  plan.expectCur === null ? item?.cur !== undefined : item?.cur !== plan.expectCur;

/** What the shared item does with a plan: the model of the conditional UpdateItem (same condition, same effect). */
export function applySpend(item: WindowState | undefined, plan: SpendPlan, now: number): WindowState | undefined {
  if (item?.pausedUntil !== undefined && item.pausedUntil > now) return undefined;
  if (staleFor(item, plan)) return undefined;
  const total = item?.total ?? 0;
  if (!(total < plan.totalBelow)) return undefined;
  const slots = { ...(item?.slots ?? {}) };
  for (const s of plan.clearSlots) slots[s] = 0;
  if (plan.kind === 'add') slots[slotOf(plan.bucket)] = (slots[slotOf(plan.bucket)] ?? 0) + 1;
  else slots[slotOf(plan.bucket)] = 1;
  return {
    ...(item ?? {}),
    cur: plan.bucket,
    total: plan.kind === 'reset' ? 1 : total + plan.delta,
    slots,
  };
}

/** When the oldest counted calls leave the window: the earliest a refused caller could find room. */
export function msUntilRoom(state: WindowState | undefined, now: number): number {
  if (!state) return BUCKET_MS;
  for (let y = state.cur - (SLOTS - 1) * BUCKET_MS; y <= state.cur; y += BUCKET_MS)
    if ((state.slots[slotOf(y)] ?? 0) > 0) return Math.max(BUCKET_MS, y + SLOTS * BUCKET_MS - now);
  return BUCKET_MS;
}

// ---- shares -----------------------------------------------------------------------------------

/** Of the panel's limit we spend at most this; the window's bound is exact, so the rest is for rounding and other tools. */
export const BUDGET_FRACTION = 0.98;
/** The platform's own work (billing suspensions, reconciler, repairs) alone may use the last of it. */
export const SYSTEM_RESERVE = 0.15;
/** What only a newcomer's calls may use (isNewcomer): accounts that call steadily cannot. */
export const NEWCOMER_SLICE = 0.1;
export const NEWCOMER_CALLS = 6;
/** Application API: customer reads stop this much short of customer writes (create, build, delete). */
export const WRITE_SLICE = 0.15;
/** One account's calls of one class a minute: this share of what that class may use. */
export const ACCOUNT_SHARE = 0.25;

export type CallClass = 'read' | 'write' | 'control';

export interface Shares {
  limitPerMinute: number;
  /** What no 62 s window of ours exceeds: the system's ceiling. */
  budgetPerMinute: number;
  systemReserve: number;
  newcomerSlice: number;
  /** Ceilings on the window's total, by class, for an account past its first calls. */
  writeCeiling: number;
  readCeiling: number;
  /** Per account and minute, by class. */
  writesPerAccountPerMinute: number;
  readsPerAccountPerMinute: number;
}

export function sharesOf(limitPerMinute: number, api: 'application' | 'client'): Shares {
  const budget = Math.max(1, Math.floor(limitPerMinute * BUDGET_FRACTION));
  const systemReserve = Math.ceil(budget * SYSTEM_RESERVE);
  const newcomerSlice = Math.ceil(budget * NEWCOMER_SLICE);
  const writeCeiling = Math.max(1, budget - systemReserve - newcomerSlice);
  // Client API calls are all control; only Application API writes change servers.
  const readCeiling = api === 'application' ? Math.max(1, writeCeiling - Math.ceil(budget * WRITE_SLICE)) : writeCeiling;
  const perAccount = (ceiling: number) => Math.max(NEWCOMER_CALLS, Math.floor(ceiling * ACCOUNT_SHARE));
  return {
    limitPerMinute,
    budgetPerMinute: budget,
    systemReserve,
    newcomerSlice,
    writeCeiling,
    readCeiling,
    writesPerAccountPerMinute: perAccount(writeCeiling),
    readsPerAccountPerMinute: perAccount(readCeiling),
  };
}

/** One account's calls of one class and API: this minute's (this call included) and the previous minute's. */
export interface AccountCalls {
  accountCalls: number;
  previousMinuteCalls: number;
}

/**
 * Whether a call may use the newcomer slice: the account's calls over this minute and the previous
 * one are at most NEWCOMER_CALLS. The previous minute counts because an account calling steadily
 * starts a new counter each minute: counted alone, its "first calls" would spend the slice every
 * minute, and five accounts at their share kept a sixth one's first call out at 40 a minute.
 */
export const isNewcomer = (calls: AccountCalls): boolean => calls.accountCalls + calls.previousMinuteCalls <= NEWCOMER_CALLS;

/**
 * The ceiling on the window's total for one call: the system's is the budget; a customer's stops
 * short of the system reserve, and, unless the call is a newcomer's (isNewcomer), short of the
 * newcomer slice too (and, for Application reads, of the write slice).
 */
export function ceilingFor(shares: Shares, who: 'system' | AccountCalls, cls: CallClass): number {
  if (who === 'system') return shares.budgetPerMinute;
  if (isNewcomer(who)) return shares.budgetPerMinute - shares.systemReserve;
  return cls === 'write' ? shares.writeCeiling : shares.readCeiling;
}

export const accountCapFor = (shares: Shares, cls: CallClass): number =>
  cls === 'write' ? shares.writesPerAccountPerMinute : shares.readsPerAccountPerMinute;
