import { createHash } from 'node:crypto';
import { writeItem } from '../db/write.ts';
import { keys } from '../db/keys.ts';
import { getConfig } from '../config/env.ts';
import { ApiError } from '../errors.ts';

/**
 * Fixed one-minute windows counted in DynamoDB, so every Lambda instance (and every local process)
 * shares one budget per client; the counter expires through TTL.
 *
 * A process claims units of the shared counter in small batches and spends them from memory: the
 * first request of a client in a window claims 1, the next claims 2, then 4, then 8 (at most), so a
 * client that keeps calling costs one write per several requests instead of one each (a dashboard
 * polling every 5 s: 4 writes in its first minute for 12 requests, then 2 a minute, as each
 * window's first claim is sized by what the caller spent in the previous one; 240 requests in a
 * minute: 51 writes). Every admitted
 * request is backed by a unit the counter granted below the limit, so all processes together never
 * admit more than the limit in a window. Concurrent requests of one process wait for one claim
 * sized to all of them, instead of each sending its own. Units a process claimed and did not spend lapse with the
 * window; claims shrink to 1 as the counter nears the limit (an eighth of what is left, at most 8),
 * so what can lapse there is a few units per process — but each process judges "what is left" from
 * the last count it saw, so a caller spread over many Lambda instances may be refused somewhat
 * before the limit (never after). Once the counter has passed the limit, later
 * requests of that window are refused without a write: the count never falls within a window.
 *
 * An authenticated credential is also held to its account's ceiling (all its API keys and session
 * tokens together), or else an account could multiply the per-credential limit by making keys. Both
 * counts are in the account's item and move with the same write (`hits` and the credential's own
 * attribute), so the ceiling adds no write, and a claim grants only units under both.
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
 * live in one item (`RATE#acct:<id>#<window>`: `hits` for the account, one attribute per
 * credential), moved by the same write: the second ceiling costs no write of its own.
 */
export interface AccountCeiling {
  accountId: string;
  limit: number;
}

const WINDOW_SECONDS = 60;
const MAX_CLAIM = 8;

interface Allowance {
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
  /** The claim in flight: one at a time per client and process; the others wait for it. */
  claim?: Promise<void>;
  /** The account's count and the units this process holds for it, shared by its clients here. */
  account?: AccountCount;
}

interface AccountCount {
  windowStart: number;
  counted: number;
  held: number;
}

/** One limiter per process (module state); tests make several to stand for several processes. */
export function createRateLimiter() {
  const allowances = new Map<string, Allowance>();
  const accounts = new Map<string, AccountCount>();
  let sweptWindow = -1;

  /** Claims what the waiting requests need, plus a speculative share that shrinks near the limits. */
  async function claimUnits(client: string, allowance: Allowance, limit: number, ceiling?: AccountCeiling): Promise<void> {
    const account = allowance.account;
    const left = Math.min(limit - allowance.counted, ceiling && account ? ceiling.limit - account.counted : Number.POSITIVE_INFINITY);
    const speculative = Math.min(allowance.nextClaim, Math.floor(left / 8));
    const claim = Math.max(1, Math.min(left, Math.max(allowance.waiting, speculative)));
    allowance.nextClaim = Math.min(MAX_CLAIM, allowance.nextClaim * 2);
    const expires = allowance.windowStart + WINDOW_SECONDS * 2;
    const out = await writeItem({
      Update: ceiling
        ? {
            Key: keys.rateWindow(`acct:${ceiling.accountId}`, allowance.windowStart),
            UpdateExpression: 'ADD hits :n, #client :n SET expiresAt = if_not_exists(expiresAt, :exp)',
            // A short name per credential keeps the item under 1 KB (one write unit) for dozens of them.
            ExpressionAttributeNames: { '#client': memberName(client) },
            ExpressionAttributeValues: { ':n': claim, ':exp': expires },
            ReturnValues: 'UPDATED_NEW',
          }
        : {
            Key: keys.rateWindow(client, allowance.windowStart),
            UpdateExpression: 'ADD hits :n SET expiresAt = if_not_exists(expiresAt, :exp)',
            ExpressionAttributeValues: { ':n': claim, ':exp': expires },
            ReturnValues: 'UPDATED_NEW',
          },
    });
    const counted = Number((ceiling ? out?.[memberName(client)] : out?.hits) ?? claim);
    // Of this claim, the units that were still under the limit (both limits) when it landed.
    let granted = Math.min(claim, limit - (counted - claim));
    if (ceiling && account) {
      const total = Number(out?.hits ?? claim);
      granted = Math.min(granted, ceiling.limit - (total - claim));
      account.counted = Math.max(account.counted, total);
    }
    granted = Math.max(0, granted);
    allowance.held += granted;
    if (account) account.held += granted;
    allowance.counted = Math.max(allowance.counted, counted);
  }

  return async function consume(client: string, now = Date.now(), ceiling?: AccountCeiling): Promise<RateLimitResult> {
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
      const last = found?.windowStart === windowStart - WINDOW_SECONDS ? found.spent : 1;
      found = { windowStart, held: 0, nextClaim: Math.min(MAX_CLAIM, Math.max(1, last)), counted: 0, waiting: 0, spent: 0 };
      allowances.set(client, found);
    }
    const allowance = found;
    if (ceiling && allowance.account?.windowStart !== windowStart) {
      let account = accounts.get(ceiling.accountId);
      if (!account || account.windowStart !== windowStart) {
        account = { windowStart, counted: 0, held: 0 };
        accounts.set(ceiling.accountId, account);
      }
      allowance.account = account;
    }
    const account = ceiling ? allowance.account : undefined;
    // The headers show the tighter of the two: what is left of the client's own limit, or of the
    // account's as this process last saw it.
    const state = (exceeded?: RateLimitScope): RateLimitResult => {
      const own = { limit, remaining: Math.max(0, limit - allowance.counted) + allowance.held };
      const shared =
        ceiling && account ? { limit: ceiling.limit, remaining: Math.max(0, ceiling.limit - account.counted) + account.held } : own;
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
        if (ceiling && account && account.counted >= ceiling.limit) return state('account');
        allowance.claim ??= claimUnits(client, allowance, limit, ceiling).finally(() => {
          allowance.claim = undefined;
        });
        await allowance.claim;
      }
    } finally {
      allowance.waiting--;
    }
  };
}

/** The attribute that counts one credential inside its account's item: 12 hex digits of its hash. */
const memberName = (client: string): string => `c${createHash('sha256').update(client).digest('hex').slice(0, 12)}`;

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
