import { createHash } from 'node:crypto';
import { currentTime } from '../clock.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { PanelCallBudgetItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { isConditionFailed, writeItem } from '../db/write.ts';
import { logger } from '../observability/logger.ts';
import { putMetric } from '../observability/metrics.ts';
import type { CallBudget, PanelApi, PanelCallKind } from '../panel/client.ts';
import { PanelRequestError } from '../panel/errors.ts';
import { currentCaller, PLATFORM_CALLER } from './caller.ts';
import {
  accountCapFor,
  ceilingFor,
  msUntilRoom,
  NEWCOMER_CALLS,
  planSpend,
  SEND_WITHIN_MS,
  type Shares,
  SLOTS,
  type SpendPlan,
  sharesOf,
  slotOf,
  staleFor,
  type WindowState,
} from './call-budget-window.ts';

/**
 * The panel's rate limit is a budget every process shares (docs/design/panel.md).
 * A Pterodactyl panel allows, per key owner, 240 Application and 720 Client API requests in a
 * fixed 60 s window that opens at the first hit (configurable per instance); every customer,
 * deploy, billing pass and reconciler run spends the same two budgets. So every panel call first
 * takes one unit here, with one conditional UpdateItem on the panel's window item
 * (budget-window.ts: buckets of 2 s summed over the trailing 62 s, so no 60 s window the panel
 * could count holds more than the budget), and a customer's call first one on its account's
 * counter:
 *
 * - Classes: the platform's own work (no customer in the caller: billing pass, reconciler,
 *   repairs) may fill the window to the budget; customers stop a system reserve
 *   short of it.
 * - Per-account caps: one account's writes, reads and control calls each have a cap a minute.
 * - Newcomers: an account with at most NEWCOMER_CALLS calls over this minute and the previous one
 *   may use a slice that others cannot, so no number of accounts calling at their share keeps a
 *   new one out (budget-window.ts, isNewcomer).
 * - The panel's X-RateLimit-* headers correct the shared view (another user of the same key owner).
 * - A 429 from the panel pauses the budget's calls, in every process, until its Retry-After.
 *
 * The budget belongs to the panel, not to the instance record: its id is the normalised panel URL,
 * so two registrations of one panel share one budget.
 *
 * A refused call is `503 panel_unavailable` with Retry-After: nothing was sent to the panel.
 */
export interface PanelRateLimits {
  applicationPerMinute: number;
  clientPerMinute: number;
}

export const DEFAULT_PANEL_RATE_LIMITS: PanelRateLimits = { applicationPerMinute: 240, clientPerMinute: 720 };
/** Pelican's defaults: 256 a minute on each API (pelican-dev/panel config/http.php). */
export const PELICAN_RATE_LIMITS: PanelRateLimits = { applicationPerMinute: 256, clientPerMinute: 256 };

/** Account counters outlive their minute long enough for nothing. */
const COUNTER_TTL_S = 180;
const MINUTE_MS = 60_000;
/** The panel's headers count more than our window by at least this much: another user of the key owner. */
const CORRECTION_TOLERANCE = (limit: number) => Math.max(3, Math.ceil(limit * 0.05));
/** Plans tried when other processes keep moving the window under this one. */
const MAX_PLANS = 4;

/** The panel, as its budget is keyed: scheme and host in lower case, no default port, no trailing slash. */
export function normalisePanelUrl(baseUrl: string): string {
  try {
    const u = new URL(baseUrl);
    return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
  } catch {
    return baseUrl.trim().replace(/\/+$/, '').toLowerCase();
  }
}

/** The id of a panel's call budget (a hash of its normalised URL). */
export const panelBudgetId = (baseUrl: string): string =>
  `panel-${createHash('sha256').update(normalisePanelUrl(baseUrl)).digest('hex').slice(0, 24)}`;

// ---- who is calling -------------------------------------------------------------------------------

// Whose call it is comes from caller.ts: the HTTP pipeline sets it on every request, and importing
// this module for it would load the whole budget in functions that never call a panel.

// ---- the budget -----------------------------------------------------------------------------------

const secondsFrom = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));

function unavailable(why: string, retryAfterSeconds: number): PanelRequestError {
  return new PanelRequestError(
    'panel_unavailable',
    `The panel is not taking more requests now (${why}); nothing was sent to it. Retry in ${retryAfterSeconds} s.`,
    undefined,
    [],
    { retryAfterSeconds, sent: false },
  );
}

/** What one process knows of a budget's window item, as its last write saw it. */
interface Known {
  window?: WindowState;
  pausedUntil?: number;
  panelLimit?: number;
}

/**
 * What one process remembers: the windows it last saw, the bucket it last corrected each in, and
 * the accounts' counts of the previous minute it has read.
 */
export interface ProcessState {
  windows: Map<string, Known>;
  corrected: Map<string, number>;
  previousMinutes: { minute: number; counts: Map<string, number> };
}
const newProcessState = (): ProcessState => ({
  windows: new Map(),
  corrected: new Map(),
  previousMinutes: { minute: 0, counts: new Map() },
});
let processState = newProcessState();

function toKnown(item: PanelCallBudgetItem | undefined): Known {
  if (!item) return {};
  const known: Known = {};
  if (item.cur !== undefined) {
    const slots: Record<number, number> = {};
    for (let s = 0; s < SLOTS; s++) slots[s] = Number(item[`s${s}`] ?? 0);
    known.window = { cur: Number(item.cur), total: Number(item.total ?? 0), slots };
  }
  if (item.pausedUntil !== undefined) known.pausedUntil = Number(item.pausedUntil);
  if (item.panelLimit !== undefined) known.panelLimit = Number(item.panelLimit);
  return known;
}

/** The conditional UpdateItem of a plan: the same condition and effect as `applySpend` (budget-window.ts). */
function updateOf(key: ReturnType<typeof keys.panelCallBudget>, plan: SpendPlan, now: number) {
  const newSlot = `s${slotOf(plan.bucket)}`;
  const names: Record<string, string> = { '#new': newSlot };
  const values: Record<string, number> = { ':now': now, ':below': plan.totalBelow, ':one': 1 };
  const sets: string[] = [];
  let update: string;
  if (plan.kind === 'add') {
    update = 'ADD #new :one, #total :one';
  } else {
    plan.clearSlots.forEach((s, i) => {
      names[`#c${i}`] = `s${s}`;
      sets.push(`#c${i} = :zero`);
    });
    if (sets.length) values[':zero'] = 0;
    values[':bucket'] = plan.bucket;
    if (plan.kind === 'rotate') values[':delta'] = plan.delta;
    update = `SET cur = :bucket, #new = :one, #total = ${plan.kind === 'reset' ? ':one' : '#total + :delta'}${sets.length ? `, ${sets.join(', ')}` : ''}`;
  }
  if (plan.expectCur !== null) values[':cur'] = plan.expectCur;
  const sameWindow = plan.expectCur === null ? 'attribute_not_exists(cur)' : 'cur = :cur';
  return {
    Key: key,
    UpdateExpression: update,
    ConditionExpression: `(attribute_not_exists(pausedUntil) OR pausedUntil <= :now) AND ${sameWindow} AND (attribute_not_exists(#total) OR #total < :below)`,
    ExpressionAttributeNames: { ...names, '#total': 'total' },
    ExpressionAttributeValues: values,
    ReturnValues: 'ALL_NEW' as const,
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
  };
}

export interface CallBudgetOptions {
  /** Tests: a clock of their own, and a process state of their own (several "processes" in one). */
  now?: () => number;
  process?: ProcessState;
  /** The instance whose client spends this budget: the `Instance` of its metrics (the budget's id without one). */
  instanceId?: string;
}

/**
 * Metrics (shared/observability/metrics.ts), by instance: a call refused while its API is paused
 * (`PanelPaused`), one refused because its class's ceiling is reached (`PanelBudgetExhausted`; an
 * account's own cap is that account's limit, not the panel's budget, so not counted), and after
 * every spend the share of the budget the window holds (`PanelBudgetUsed`). Every spend, not only
 * a change by a step: an alarm on "above 90 % for 5 minutes" needs a data point in each minute the
 * budget is in use, and a process whose figure stays within one step would send none; the lines
 * are as many as the calls, which the panel's own limit bounds.
 */
const classOf = (api: PanelApi, kind: PanelCallKind): 'read' | 'write' | 'control' =>
  api === 'client' ? 'control' : kind === 'write' ? 'write' : 'read';

export function dynamoCallBudget(budgetId: string, limits: PanelRateLimits, options: CallBudgetOptions = {}): CallBudget {
  const instance = options.instanceId ?? budgetId;
  const clock = options.now ?? currentTime;
  const proc = () => options.process ?? processState;
  const configured = (api: PanelApi) => (api === 'application' ? limits.applicationPerMinute : limits.clientPerMinute);
  const cacheKey = (api: PanelApi) => `${budgetId}:${api}`;
  /** The panel's own headers may announce a lower limit than the one configured: the lower one holds. */
  const sharesFor = (api: PanelApi): Shares => {
    const known = proc().windows.get(cacheKey(api))?.panelLimit;
    return sharesOf(Math.min(configured(api), known ?? Number.POSITIVE_INFINITY), api);
  };

  /** The account's counter for this class and minute; the count after this call. */
  async function spendAccountShare(account: string, api: PanelApi, cls: string, now: number, cap: number): Promise<number> {
    const minute = Math.floor(now / MINUTE_MS) * MINUTE_MS;
    try {
      const out = await writeItem({
        Update: {
          Key: keys.panelCallBudgetAccount(budgetId, api, account, cls, minute),
          UpdateExpression: 'ADD used :one SET expiresAt = if_not_exists(expiresAt, :exp)',
          ConditionExpression: 'attribute_not_exists(used) OR used < :cap',
          ExpressionAttributeValues: { ':one': 1, ':cap': cap, ':exp': minute / 1000 + COUNTER_TTL_S },
          ReturnValues: 'UPDATED_NEW',
        },
      });
      return Number(out?.used ?? 1);
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
      throw unavailable(`this account's share of its ${cls} calls for this minute is spent`, secondsFrom(minute + MINUTE_MS - now));
    }
  }

  /**
   * The account's count of the previous minute (its counter outlives it: COUNTER_TTL_S). A closed
   * minute's count no longer moves, so a process reads it once per account, class and minute.
   */
  async function previousMinuteOf(account: string, api: PanelApi, cls: string, now: number): Promise<number> {
    const previous = Math.floor(now / MINUTE_MS) * MINUTE_MS - MINUTE_MS;
    const seen = proc().previousMinutes;
    if (seen.minute !== previous) {
      seen.minute = previous;
      seen.counts.clear();
    }
    const cacheId = `${budgetId}:${api}:${account}:${cls}`;
    const hit = seen.counts.get(cacheId);
    if (hit !== undefined) return hit;
    const count = Number((await accessPatterns.panelCallBudgetAccount(budgetId, api, account, cls, previous))?.used ?? 0);
    seen.counts.set(cacheId, count);
    return count;
  }

  /** A call refused because a 429 paused the API, in this process or another. */
  function paused(until: number, now: number): PanelRequestError {
    putMetric('PanelPaused', 1, { Instance: instance });
    return unavailable('it is rate limiting us', secondsFrom(until - now));
  }

  async function spendWindow(api: PanelApi, ceiling: number, cls: string): Promise<void> {
    const key = keys.panelCallBudget(budgetId, api);
    for (let attempt = 0; attempt < MAX_PLANS; attempt++) {
      const now = clock();
      const known = proc().windows.get(cacheKey(api)) ?? {};
      if (known.pausedUntil !== undefined && known.pausedUntil > now) throw paused(known.pausedUntil, now);
      const plan = planSpend(known.window, now, ceiling);
      try {
        const item = await writeItem({ Update: updateOf(key, plan, now) });
        proc().windows.set(cacheKey(api), toKnown(item as unknown as PanelCallBudgetItem));
      } catch (err) {
        if (!isConditionFailed(err)) throw err;
        const old = toKnown(err.current.get('item') as unknown as PanelCallBudgetItem | undefined);
        proc().windows.set(cacheKey(api), old);
        if (old.pausedUntil !== undefined && old.pausedUntil > now) throw paused(old.pausedUntil, now);
        if (staleFor(old.window, plan)) continue;
        putMetric('PanelBudgetExhausted', 1, { Instance: instance, CallClass: cls });
        throw unavailable('its request budget for this minute is spent', secondsFrom(msUntilRoom(old.window, now)));
      }
      // Counted in a bucket too old for the window to be sure to hold it when the panel counts it: not sent.
      const counted = proc().windows.get(cacheKey(api))?.window?.cur ?? now;
      if (clock() - counted > SEND_WITHIN_MS) throw unavailable('the budget answered too slowly to send the call safely', 1);
      return;
    }
    throw unavailable('its request budget is contended', 1);
  }

  return {
    async spend(api: PanelApi, kind: PanelCallKind): Promise<void> {
      const shares = sharesFor(api);
      const cls = classOf(api, kind);
      const account = currentCaller();
      // The account's share first: an account over its share must not use up panel units that
      // every other account needs (a refused panel unit after a counted account unit only costs
      // that account one unit of its own share).
      let ceiling: number;
      if (account === PLATFORM_CALLER) ceiling = ceilingFor(shares, 'system', cls);
      else {
        const now = clock();
        const accountCalls = await spendAccountShare(account, api, cls, now, accountCapFor(shares, cls));
        // Past NEWCOMER_CALLS this minute the previous one cannot make it a newcomer: not read.
        const previousMinuteCalls = accountCalls > NEWCOMER_CALLS ? 0 : await previousMinuteOf(account, api, cls, now);
        ceiling = ceilingFor(shares, { accountCalls, previousMinuteCalls }, cls);
      }
      await spendWindow(api, ceiling, cls);
      const used = proc().windows.get(cacheKey(api))?.window?.total ?? 0;
      putMetric('PanelBudgetUsed', Math.round((1000 * used) / shares.budgetPerMinute) / 10, { Instance: instance, Api: api });
    },

    async observe(api: PanelApi, limit: number | undefined, remaining: number | undefined): Promise<void> {
      const known = proc().windows.get(cacheKey(api));
      if (!known?.window) return;
      const key = keys.panelCallBudget(budgetId, api);
      if (limit !== undefined && limit > 0 && limit !== known.panelLimit) {
        known.panelLimit = limit;
        if (limit < configured(api)) logger.warn('the panel announces a lower rate limit than configured', { budgetId, api, limit });
        await writeItem({ Update: { Key: key, UpdateExpression: 'SET panelLimit = :l', ExpressionAttributeValues: { ':l': limit } } });
      }
      if (limit === undefined || remaining === undefined) return;
      const panelUsed = limit - remaining;
      const { window } = known;
      const bucket = window.cur;
      if (panelUsed <= window.total + CORRECTION_TOLERANCE(limit) || proc().corrected.get(cacheKey(api)) === bucket) return;
      proc().corrected.set(cacheKey(api), bucket);
      const add = panelUsed - window.total;
      // Someone else spends this key owner's budget: count it, once (a process that already raised
      // the window past what the panel says makes the condition fail).
      try {
        await writeItem({
          Update: {
            Key: key,
            UpdateExpression: 'ADD #slot :add, #total :add',
            ConditionExpression: 'cur = :cur AND #total < :used',
            ExpressionAttributeNames: { '#slot': `s${slotOf(bucket)}`, '#total': 'total' },
            ExpressionAttributeValues: { ':add': add, ':cur': bucket, ':used': panelUsed },
          },
        });
        window.total += add;
        logger.warn('the panel counts more calls than our budget: corrected', { budgetId, api, panelUsed, added: add });
      } catch (err) {
        if (!isConditionFailed(err)) throw err;
      }
    },

    async pause(api: PanelApi, retryAfterMs: number): Promise<void> {
      const now = clock();
      const until = now + Math.min(Math.max(retryAfterMs, 1000), 5 * MINUTE_MS);
      proc().windows.set(cacheKey(api), { ...proc().windows.get(cacheKey(api)), pausedUntil: until });
      logger.warn('panel rate limited us: pausing its calls', { budgetId, api, pausedForMs: until - now });
      try {
        await writeItem({
          Update: {
            Key: keys.panelCallBudget(budgetId, api),
            UpdateExpression: 'SET pausedUntil = :until',
            ConditionExpression: 'attribute_not_exists(pausedUntil) OR pausedUntil < :until',
            ExpressionAttributeValues: { ':until': until },
          },
        });
      } catch (err) {
        if (!isConditionFailed(err)) throw err;
      }
    },
  };
}

/**
 * Lifts a 429's pause of an instance's panel (tests, which inject 429s with long Retry-Afters one
 * after another; an operator who knows the panel's limit was raised may want it too).
 */
export async function liftPause(instanceId: string): Promise<void> {
  const instance = await accessPatterns.instanceById(instanceId);
  const budgetId = instance ? panelBudgetId(instance.baseUrl) : instanceId;
  for (const api of ['application', 'client'] as const) {
    const known = processState.windows.get(`${budgetId}:${api}`);
    if (known) delete known.pausedUntil;
    await writeItem({ Update: { Key: keys.panelCallBudget(budgetId, api), UpdateExpression: 'REMOVE pausedUntil' } });
  }
}

/** Forgets what this process remembers (the windows it last saw, pauses), as a new process would. */
export function forgetProcessState(): void {
  processState = newProcessState();
}

export interface BudgetState {
  limitPerMinute: number;
  budgetPerMinute: number;
  reservedForWrites: number;
  readsPerMinute: number;
  readsPerAccountPerMinute: number;
  systemReserve: number;
  newcomerSlice: number;
  writesPerAccountPerMinute: number;
  usedThisMinute: number;
  pausedUntil: string | null;
}

/** Calls counted in the trailing window at `now` (what a spend now would find). */
function trailingTotal(state: WindowState | undefined, now: number): number {
  if (!state) return 0;
  const plan = planSpend(state, now, Number.MAX_SAFE_INTEGER);
  if (plan.kind === 'add') return state.total;
  if (plan.kind === 'reset') return 0;
  return state.total + plan.delta - 1;
}

/** What an admin sees: the budget's shares and what the trailing window holds. */
export async function callBudgetState(
  budgetId: string,
  limits: PanelRateLimits,
  sharedWith: string[],
): Promise<Record<PanelApi, BudgetState> & { sharedWith: string[] }> {
  const now = currentTime();
  const state = async (api: PanelApi): Promise<BudgetState> => {
    const item = await accessPatterns.panelCallBudget(budgetId, api);
    const configured = api === 'application' ? limits.applicationPerMinute : limits.clientPerMinute;
    const shares = sharesOf(Math.min(configured, item?.panelLimit ?? Number.POSITIVE_INFINITY), api);
    const paused = Number(item?.pausedUntil ?? 0);
    return {
      limitPerMinute: configured,
      budgetPerMinute: shares.budgetPerMinute,
      reservedForWrites: shares.writeCeiling - shares.readCeiling,
      readsPerMinute: shares.readCeiling,
      readsPerAccountPerMinute: shares.readsPerAccountPerMinute,
      systemReserve: shares.systemReserve,
      newcomerSlice: shares.newcomerSlice,
      writesPerAccountPerMinute: shares.writesPerAccountPerMinute,
      usedThisMinute: trailingTotal(toKnown(item).window, now),
      pausedUntil: paused > now ? new Date(paused).toISOString() : null,
    };
  };
  const [application, client] = await Promise.all([state('application'), state('client')]);
  return { application, client, sharedWith };
}
