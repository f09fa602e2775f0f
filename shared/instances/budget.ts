import { AsyncLocalStorage } from 'node:async_hooks';
import { accessPatterns } from '../db/access-patterns.ts';
import { keys } from '../db/keys.ts';
import { isConditionFailed, writeItem } from '../db/write.ts';
import { logger } from '../observability/logger.ts';
import type { CallBudget, PanelApi, PanelCallKind } from '../panel/client.ts';
import { PanelRequestError } from '../panel/errors.ts';

/**
 * The panel's rate limit is a budget every process shares (ARCHITECTURE.md, "The panel boundary").
 * A Pterodactyl panel allows, per key owner, 240 Application and 720 Client API requests a minute
 * (configurable per instance); every customer, deploy, billing pass and reconciler run of the
 * control plane spends the same two budgets. So every panel call first takes one unit here, in
 * DynamoDB, with one conditional UpdateItem:
 *
 * - Headroom: we plan for HEADROOM of the panel's limit, so a panel shared with other tools, or
 *   a window boundary that does not line up with Laravel's (its window starts at the first hit),
 *   does not tip it over.
 * - Windows: one counter per minute; a call is allowed while the previous minute's count, weighted
 *   by how much of it still overlaps the last 60 s, plus this minute's is under the budget (the
 *   sliding-window counter approximation).
 * - Reserved writes: calls that change servers or money (create, build, suspend, unsuspend,
 *   delete) may use the whole budget; every other call stops RESERVED_FOR_WRITES short of it, so
 *   reads can never starve a suspension or a deploy.
 * - Fairness: reads are also counted per account, and one account may take at most
 *   ACCOUNT_SHARE of the read share in a minute; the platform's own work (billing pass,
 *   reconciler) is not capped per account.
 * - A 429 from the panel pauses the instance's calls, in every process, until its Retry-After.
 *
 * A refused call is `503 panel_unavailable` with Retry-After: nothing was sent to the panel.
 */
export const HEADROOM = 0.9;
export const RESERVED_FOR_WRITES = 0.25;
export const ACCOUNT_SHARE = 0.25;
const WINDOW_MS = 60_000;
/** Counter items outlive their window long enough to serve as the next window's "previous". */
const COUNTER_TTL_S = 180;

export interface PanelRateLimits {
  applicationPerMinute: number;
  clientPerMinute: number;
}

export const DEFAULT_PANEL_RATE_LIMITS: PanelRateLimits = { applicationPerMinute: 240, clientPerMinute: 720 };

export interface BudgetShape {
  /** The panel's own limit a minute. */
  limitPerMinute: number;
  /** What we plan to spend at most a minute (the limit less headroom). */
  budgetPerMinute: number;
  /** Kept for calls that change servers or money. */
  reservedForWrites: number;
  /** What reads may spend a minute, across accounts. */
  readsPerMinute: number;
  /** What one account's reads may spend a minute. */
  readsPerAccountPerMinute: number;
}

export function budgetShape(limitPerMinute: number, api: PanelApi): BudgetShape {
  const budgetPerMinute = Math.max(1, Math.floor(limitPerMinute * HEADROOM));
  // Only Application API calls change servers (create, build, suspend, unsuspend, delete).
  const reservedForWrites = api === 'application' ? Math.floor(budgetPerMinute * RESERVED_FOR_WRITES) : 0;
  const readsPerMinute = Math.max(1, budgetPerMinute - reservedForWrites);
  return {
    limitPerMinute,
    budgetPerMinute,
    reservedForWrites,
    readsPerMinute,
    readsPerAccountPerMinute: Math.max(1, Math.floor(readsPerMinute * ACCOUNT_SHARE)),
  };
}

// ---- who is calling -------------------------------------------------------------------------------

/** The account on whose behalf panel calls are made; the HTTP pipeline sets it per request. */
const caller = new AsyncLocalStorage<string>();
export const PLATFORM_CALLER = 'platform';
/** Requests without a credential share one account's share between them. */
export const ANONYMOUS_CALLER = 'anonymous';

export const runAsCaller = <T>(accountId: string, fn: () => Promise<T>): Promise<T> => caller.run(accountId, fn);
const currentCaller = (): string => caller.getStore() ?? PLATFORM_CALLER;

// ---- the budget -----------------------------------------------------------------------------------

const windowOf = (now: number): number => Math.floor(now / WINDOW_MS) * WINDOW_MS;
const secondsUntil = (ms: number, now: number): number => Math.max(1, Math.ceil((ms - now) / 1000));

function unavailable(why: string, retryAfterSeconds: number): PanelRequestError {
  return new PanelRequestError(
    'panel_unavailable',
    `The panel is not taking more requests now (${why}); nothing was sent to it. Retry in ${retryAfterSeconds} s.`,
    undefined,
    [],
    { retryAfterSeconds, sent: false },
  );
}

/** Per process: the previous window's final count (it no longer changes) and a known pause. */
const previousCounts = new Map<string, number>();
const knownPauses = new Map<string, number>();

export function dynamoCallBudget(instanceId: string, limits: PanelRateLimits): CallBudget {
  const limitOf = (api: PanelApi) => (api === 'application' ? limits.applicationPerMinute : limits.clientPerMinute);

  async function previousWindowCount(api: PanelApi, window: number): Promise<number> {
    const cacheKey = `${instanceId}:${api}:${window - WINDOW_MS}`;
    const cached = previousCounts.get(cacheKey);
    if (cached !== undefined) return cached;
    const item = await accessPatterns.panelBudgetWindow(instanceId, api, window - WINDOW_MS);
    const count = item?.used ?? 0;
    previousCounts.set(cacheKey, count);
    if (previousCounts.size > 1000) previousCounts.clear();
    return count;
  }

  const spendAccountShare = (account: string, api: PanelApi, window: number, cap: number) =>
    writeItem({
      Update: {
        Key: keys.panelBudgetAccount(instanceId, api, account, window),
        UpdateExpression: 'ADD used :one SET expiresAt = if_not_exists(expiresAt, :exp)',
        ConditionExpression: 'attribute_not_exists(used) OR used < :cap',
        ExpressionAttributeValues: { ':one': 1, ':cap': cap, ':exp': window / 1000 + COUNTER_TTL_S },
      },
    });

  const spendPanelShare = (api: PanelApi, window: number, now: number, ceiling: number) =>
    writeItem({
      Update: {
        Key: keys.panelBudgetWindow(instanceId, api, window),
        UpdateExpression: 'ADD used :one SET expiresAt = if_not_exists(expiresAt, :exp)',
        ConditionExpression:
          '(attribute_not_exists(pausedUntil) OR pausedUntil <= :now) AND (attribute_not_exists(used) OR used < :ceiling)',
        ExpressionAttributeValues: { ':one': 1, ':now': now, ':ceiling': ceiling, ':exp': window / 1000 + COUNTER_TTL_S },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    });

  return {
    async spend(api: PanelApi, kind: PanelCallKind): Promise<void> {
      const now = Date.now();
      const pauseKey = `${instanceId}:${api}`;
      const pausedUntil = knownPauses.get(pauseKey) ?? 0;
      if (pausedUntil > now) throw unavailable('it is rate limiting us', secondsUntil(pausedUntil, now));

      const shape = budgetShape(limitOf(api), api);
      const window = windowOf(now);
      const overlap = 1 - (now - window) / WINDOW_MS;
      const carried = Math.ceil((await previousWindowCount(api, window)) * overlap);
      const ceiling = (kind === 'write' ? shape.budgetPerMinute : shape.readsPerMinute) - carried;
      const nextWindow = window + WINDOW_MS;
      if (ceiling <= 0) throw unavailable('its request budget for this minute is spent', secondsUntil(nextWindow, now));

      // The account's share first: an account over its share must not use up panel units that
      // every other account needs (a refused panel unit after a counted account unit only costs
      // that account one unit of its own share).
      const account = currentCaller();
      if (kind === 'read' && account !== PLATFORM_CALLER) {
        try {
          await spendAccountShare(account, api, window, shape.readsPerAccountPerMinute);
        } catch (err) {
          if (!isConditionFailed(err)) throw err;
          throw unavailable("this account's share of its request budget for this minute is spent", secondsUntil(nextWindow, now));
        }
      }
      try {
        await spendPanelShare(api, window, now, ceiling);
      } catch (err) {
        if (!isConditionFailed(err)) throw err;
        const paused = Number(err.current.get('item')?.pausedUntil ?? 0);
        if (paused > now) {
          knownPauses.set(pauseKey, paused);
          throw unavailable('it is rate limiting us', secondsUntil(paused, now));
        }
        throw unavailable('its request budget for this minute is spent', secondsUntil(nextWindow, now));
      }
    },

    async pause(api: PanelApi, retryAfterMs: number): Promise<void> {
      const now = Date.now();
      const until = now + Math.min(Math.max(retryAfterMs, 1000), 5 * WINDOW_MS);
      knownPauses.set(`${instanceId}:${api}`, until);
      logger.warn('panel rate limited us: pausing its calls', { instanceId, api, pausedForMs: until - now });
      // Every window the pause reaches carries it, so every process's next spend sees it.
      const windows: number[] = [];
      for (let w = windowOf(now); w < until; w += WINDOW_MS) windows.push(w);
      await Promise.all(
        windows.map((w) =>
          writeItem({
            Update: {
              Key: keys.panelBudgetWindow(instanceId, api, w),
              UpdateExpression: 'SET pausedUntil = :until, expiresAt = if_not_exists(expiresAt, :exp)',
              ConditionExpression: 'attribute_not_exists(pausedUntil) OR pausedUntil < :until',
              ExpressionAttributeValues: { ':until': until, ':exp': w / 1000 + COUNTER_TTL_S },
            },
          }).catch((err: unknown) => {
            if (!isConditionFailed(err)) throw err;
          }),
        ),
      );
    },
  };
}

/**
 * Lifts a 429's pause of an instance (tests, which inject 429s with long Retry-Afters one after
 * another; an operator who knows the panel's limit was raised may want it too).
 */
export async function liftPause(instanceId: string): Promise<void> {
  const now = Date.now();
  for (const api of ['application', 'client'] as const) {
    knownPauses.delete(`${instanceId}:${api}`);
    for (const w of [windowOf(now) - WINDOW_MS, windowOf(now), windowOf(now) + WINDOW_MS, windowOf(now) + 2 * WINDOW_MS]) {
      await writeItem({ Update: { Key: keys.panelBudgetWindow(instanceId, api, w), UpdateExpression: 'REMOVE pausedUntil' } });
    }
  }
}

/** Forgets what this process remembers (previous windows' counts, pauses), as a new process would. */
export function forgetProcessState(): void {
  previousCounts.clear();
  knownPauses.clear();
}

export interface BudgetState extends BudgetShape {
  usedThisMinute: number;
  pausedUntil: string | null;
}

/** What an admin sees: the budget's shape and how much of this minute is spent. */
export async function callBudgetState(instanceId: string, limits: PanelRateLimits): Promise<Record<PanelApi, BudgetState>> {
  const window = windowOf(Date.now());
  const state = async (api: PanelApi): Promise<BudgetState> => {
    const item = await accessPatterns.panelBudgetWindow(instanceId, api, window);
    const paused = Number(item?.pausedUntil ?? 0);
    return {
      ...budgetShape(api === 'application' ? limits.applicationPerMinute : limits.clientPerMinute, api),
      usedThisMinute: item?.used ?? 0,
      pausedUntil: paused > Date.now() ? new Date(paused).toISOString() : null,
    };
  };
  const [application, client] = await Promise.all([state('application'), state('client')]);
  return { application, client };
}
