import { currentTime } from '../clock.ts';
import { getConfig } from '../config/env.ts';
import { ApiError } from '../errors.ts';
import { claimUnits } from './rate-claim.ts';
import { MAX_CLAIM, WINDOW_SECONDS } from './rate-window.ts';

/**
 * Fixed one-minute windows counted in DynamoDB, so every Lambda instance (and every local process)
 * shares one budget per client; the counter expires through TTL. The counts of five consecutive
 * minutes (a block) live in one item, one attribute per minute (`h0`–`h4`), so one write can move
 * several minutes' counts.
 *
 * A process claims units of the shared counter in batches and spends them from memory: 1, then 2,
 * 4, up to MAX_CLAIM, the first claim of a window sized by what the caller spent in the previous
 * one, shrinking to 1 near the limit (an eighth of what is left). A sparse caller (at most 2
 * requests a minute) claims the block's later minutes with the same write. Concurrent requests of
 * one process wait for one claim sized to all of them. Every admitted request is backed by a unit
 * granted under the limit of its own minute, so all processes together never admit more than the
 * limit; unspent units lapse with their window, and a caller spread over many instances may be
 * refused somewhat before the limit (each judges "what is left" from the last count it saw), never
 * after. Past the limit, later requests of the window are refused without a write.
 *
 * An authenticated credential is also held to its account's ceiling (all its API keys and session
 * tokens together), or else an account could multiply the per-credential limit by making keys. Both
 * counts are in the account's item and move with the same write, so the ceiling adds no write; its
 * value (a profile read) is asked for only when a claim is due.
 *
 * Writes and reads per request, measured: bench/results.md §7 (bench/cost.ts).
 */
export interface RateLimitState {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

/** Which ceiling refused a request: the credential's (or source IP's) own, or its account's. */
export type RateLimitScope = 'client' | 'account';

export interface RateLimitResult extends RateLimitState {
  exceeded?: true;
  scope?: RateLimitScope;
}

/**
 * An account's ceiling over all its credentials. With it, the client's count and the account's
 * live in one item (`RATE#acct:<id>#<block>`: `h<minute>` for the account, one attribute per
 * credential and minute), moved by the same write: the second ceiling costs no write of its own.
 * `limit` may be a function: it is then called only when a claim is due (the ceiling's read is paid
 * with the write, not by every request).
 */
export interface AccountCeiling {
  accountId: string;
  limit: number | (() => Promise<number>);
}

/** Units granted for a later minute of the block, before that minute began. */
export interface Ahead {
  held: number;
  /** The client's count of that minute as the write that granted them answered. */
  counted: number;
  /** The account's count of that minute, likewise. */
  accountCounted: number;
}

export interface Allowance {
  windowStart: number;
  /** Units claimed and not yet spent by this process. */
  held: number;
  /** The size of the next speculative claim (doubles up to MAX_CLAIM). */
  nextClaim: number;
  /** The highest count of this client the shared counter has answered in this window. */
  counted: number;
  /** Requests of this process waiting for a unit. */
  waiting: number;
  /** Requests this process admitted in the window: the next window's first claim is sized by it. */
  spent: number;
  /** What the caller spent in the window before this one (0 if it made none). */
  spentBefore: number;
  /** Units granted for later windows of the block, by window start. */
  ahead: Map<number, Ahead>;
  /** The account ceiling as last resolved here (headers of requests served from held units). */
  ceilingLimit?: number;
  /** The claim in flight: one at a time per client and process; the others wait for it. */
  claim?: Promise<void>;
  /** The account's count and the units this process holds for it, shared by its clients here. */
  account?: AccountCount;
}

export interface AccountCount {
  windowStart: number;
  counted: number;
  held: number;
}

/** One limiter per process (module state); tests make several to stand for several processes. */
export function createRateLimiter() {
  const allowances = new Map<string, Allowance>();
  const accounts = new Map<string, AccountCount>();
  let sweptWindow = -1;

  return async function consume(client: string, now = currentTime(), ceiling?: AccountCeiling): Promise<RateLimitResult> {
    const limit = getConfig().rateLimitPerMinute;
    const windowStart = Math.floor(now / 1000 / WINDOW_SECONDS) * WINDOW_SECONDS;
    const resetSeconds = Math.max(1, windowStart + WINDOW_SECONDS - Math.floor(now / 1000));
    let found = allowances.get(client);
    if (!found || found.windowStart !== windowStart) {
      // Past windows are dropped once per window when many clients were seen (a spray of new
      // tokens must not make every request walk the map).
      if (allowances.size > 10_000 && sweptWindow !== windowStart) {
        sweptWindow = windowStart;
        for (const [k, a] of allowances) if (a.windowStart !== windowStart && !a.claim) allowances.delete(k);
        for (const [k, a] of accounts) if (a.windowStart !== windowStart) accounts.delete(k);
      }
      // A caller that kept coming last minute is likely to this minute: the first claim covers what it
      // spent then (at most MAX_CLAIM), so a steady caller pays one write per several requests from
      // its first request of the window on.
      const spentBefore = found?.windowStart === windowStart - WINDOW_SECONDS ? found.spent : 0;
      // Units claimed ahead for this window become held; those of past windows lapse.
      const ahead = new Map([...(found?.ahead ?? [])].filter(([at]) => at >= windowStart));
      const mine = ahead.get(windowStart);
      ahead.delete(windowStart);
      found = {
        windowStart,
        held: mine?.held ?? 0,
        nextClaim: Math.min(MAX_CLAIM, Math.max(1, spentBefore)),
        counted: mine?.counted ?? 0,
        waiting: 0,
        spent: 0,
        spentBefore,
        ahead,
        ceilingLimit: found?.ceilingLimit,
      };
      allowances.set(client, found);
      if (ceiling) {
        const account = accountCountOf(ceiling.accountId, windowStart);
        account.held += found.held;
        account.counted = Math.max(account.counted, mine?.accountCounted ?? 0);
        found.account = account;
      }
    }
    const allowance = found;
    if (ceiling && allowance.account?.windowStart !== windowStart) allowance.account = accountCountOf(ceiling.accountId, windowStart);
    const account = ceiling ? allowance.account : undefined;
    // The headers show the tighter of the two: what is left of the client's own limit, or of the
    // account's as this process last saw it.
    const state = (exceeded?: RateLimitScope): RateLimitResult => {
      const own = { limit, remaining: Math.max(0, limit - allowance.counted) + allowance.held };
      const ceilingLimit = allowance.ceilingLimit;
      const shared =
        ceiling && account && ceilingLimit !== undefined
          ? { limit: ceilingLimit, remaining: Math.max(0, ceilingLimit - account.counted) + account.held }
          : own;
      const tighter = exceeded === 'account' || (exceeded !== 'client' && shared.remaining < own.remaining) ? shared : own;
      // A refused request has nothing left, even while another credential of the account still holds
      // units this process claimed for it.
      if (exceeded) return { limit: tighter.limit, remaining: 0, resetSeconds, exceeded: true as const, scope: exceeded };
      return { ...tighter, resetSeconds };
    };

    allowance.waiting++;
    try {
      for (;;) {
        if (allowance.held > 0) {
          allowance.held--;
          if (account) account.held--;
          allowance.spent++;
          return state();
        }
        if (allowance.counted >= limit) return state('client');
        if (ceiling && account) {
          // Only now, with a claim due, is the account's ceiling needed.
          if (typeof ceiling.limit === 'number') allowance.ceilingLimit = ceiling.limit;
          else {
            allowance.ceilingLimit = await ceiling.limit();
            if (allowance.held > 0 || allowance.counted >= limit) continue; // a claim landed meanwhile
          }
          if (account.counted >= allowance.ceilingLimit) return state('account');
        }
        allowance.claim ??= claimUnits(client, allowance, limit, ceiling).finally(() => {
          allowance.claim = undefined;
        });
        await allowance.claim;
      }
    } finally {
      allowance.waiting--;
    }
  };

  function accountCountOf(accountId: string, windowStart: number): AccountCount {
    let account = accounts.get(accountId);
    if (!account || account.windowStart !== windowStart) {
      account = { windowStart, counted: 0, held: 0 };
      accounts.set(accountId, account);
    }
    return account;
  }
}

export const consumeRateLimit = createRateLimiter();

export function rateLimitHeaders(state: RateLimitState): Record<string, string> {
  return {
    'RateLimit-Limit': String(state.limit),
    'RateLimit-Remaining': String(state.remaining),
    'RateLimit-Reset': String(state.resetSeconds),
  };
}

export function assertWithinLimit(state: RateLimitResult): void {
  if (state.exceeded) {
    // The same code and headers whichever ceiling refused; only the message and details.scope tell them apart.
    const of = state.scope === 'account' ? " for this account's credentials together" : '';
    throw new ApiError(
      'rate_limited',
      `Rate limit of ${state.limit} requests per minute${of} exceeded; retry in ${state.resetSeconds} s`,
      { limit: state.limit, retryAfterSeconds: state.resetSeconds, scope: state.scope ?? 'client' },
      { 'Retry-After': String(state.resetSeconds) },
    );
  }
}
