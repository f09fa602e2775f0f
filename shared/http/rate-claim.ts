import { createHash } from 'node:crypto';
import { writeItem } from '../db/write.ts';
import { keys } from '../db/keys.ts';
import type { AccountCeiling, Allowance } from './rate-limit.ts';
import { MAX_CLAIM, WINDOW_SECONDS } from './rate-window.ts';

/** Minutes per counter item: a sparse caller's claim covers the rest of its block. */
export const BLOCK_MINUTES = 5;
const BLOCK_SECONDS = WINDOW_SECONDS * BLOCK_MINUTES;
/** A caller with at most this many requests a minute claims the later minutes of the block ahead, this many units each at most. */
const AHEAD_MAX = 2;

/** Where a window's count lives: the item of its block and the minute's attribute suffix. */
export function rateCounterOf(who: string, windowStart: number): { Key: ReturnType<typeof keys.rateWindow>; minute: number } {
  const blockStart = Math.floor(windowStart / BLOCK_SECONDS) * BLOCK_SECONDS;
  return { Key: keys.rateWindow(who, blockStart), minute: (windowStart - blockStart) / WINDOW_SECONDS };
}

/**
 * The write of the shared rate limit (./rate-limit.ts): claims what the waiting requests need, plus a speculative share
 * that shrinks near the limits; for a sparse caller, units of the block's later minutes too, in the
 * same write.
 */
export async function claimUnits(client: string, allowance: Allowance, limit: number, ceiling?: AccountCeiling): Promise<void> {
  const account = allowance.account;
  const ceilingLimit = allowance.ceilingLimit ?? Number.POSITIVE_INFINITY;
  const left = Math.min(limit - allowance.counted, ceiling && account ? ceilingLimit - account.counted : Number.POSITIVE_INFINITY);
  const speculative = Math.min(allowance.nextClaim, Math.floor(left / 8));
  const claim = Math.max(1, Math.min(left, Math.max(allowance.waiting, speculative)));
  allowance.nextClaim = Math.min(MAX_CLAIM, allowance.nextClaim * 2);

  // Minute by minute: what this write asks of each (the current one first).
  const { Key, minute } = rateCounterOf(ceiling ? `acct:${ceiling.accountId}` : client, allowance.windowStart);
  const claims = new Map<number, number>([[minute, claim]]);
  const demand = Math.max(allowance.spentBefore, allowance.spent + allowance.waiting);
  if (demand <= AHEAD_MAX) {
    const each = Math.max(1, demand);
    for (let m = minute + 1; m < BLOCK_MINUTES; m++) {
      const have = allowance.ahead.get(allowance.windowStart + (m - minute) * WINDOW_SECONDS)?.held ?? 0;
      if (have < each) claims.set(m, each - have);
    }
  }
  const member = ceiling ? memberName(client) : '';
  const names: Record<string, string> = {};
  const values: Record<string, number> = { ':exp': blockExpiry(allowance.windowStart) };
  const adds: string[] = [];
  for (const [m, n] of claims) {
    values[`:n${m}`] = n;
    adds.push(`h${m} :n${m}`);
    if (ceiling) {
      names[`#c${m}`] = `${member}${m}`;
      adds.push(`#c${m} :n${m}`);
    }
  }
  const out = await writeItem({
    Update: {
      Key,
      UpdateExpression: `ADD ${adds.join(', ')} SET expiresAt = if_not_exists(expiresAt, :exp)`,
      ...(ceiling ? { ExpressionAttributeNames: names } : {}),
      ExpressionAttributeValues: values,
      ReturnValues: 'UPDATED_NEW',
    },
  });
  // Of each minute's claim, the units that were still under the limit (both limits) when it landed.
  const grantOf = (m: number, n: number): { granted: number; counted: number; total: number } => {
    const counted = Number((ceiling ? out?.[`${member}${m}`] : out?.[`h${m}`]) ?? n);
    const total = Number(out?.[`h${m}`] ?? n);
    let granted = Math.min(n, limit - (counted - n));
    if (ceiling) granted = Math.min(granted, ceilingLimit - (total - n));
    return { granted: Math.max(0, granted), counted, total };
  };
  for (const [m, n] of claims) {
    const { granted, counted, total } = grantOf(m, n);
    if (m === minute) {
      allowance.held += granted;
      if (account) {
        account.held += granted;
        account.counted = Math.max(account.counted, total);
      }
      allowance.counted = Math.max(allowance.counted, counted);
    } else {
      const at = allowance.windowStart + (m - minute) * WINDOW_SECONDS;
      const before = allowance.ahead.get(at);
      allowance.ahead.set(at, {
        held: (before?.held ?? 0) + granted,
        counted: Math.max(before?.counted ?? 0, counted),
        accountCounted: Math.max(before?.accountCounted ?? 0, total),
      });
    }
  }
}

/** The counter item outlives its block by a minute (TTL). */
const blockExpiry = (windowStart: number): number =>
  Math.floor(windowStart / BLOCK_SECONDS) * BLOCK_SECONDS + BLOCK_SECONDS + WINDOW_SECONDS;

/**
 * The prefix of the attributes that count one credential inside its account's item (the minute's
 * digit follows): 8 hex digits of its hash keep an item of five minutes near 1 KB (one write unit) for
 * a dozen busy credentials; two credentials of one account that collide share a count (refused
 * sooner, never later).
 */
export const memberName = (client: string): string => `c${createHash('sha256').update(client).digest('hex').slice(0, 8)}`;
