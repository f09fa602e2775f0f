import { writeItem } from '../db/write.ts';
import { keys } from '../db/keys.ts';
import { getConfig } from '../config/env.ts';
import { ApiError } from '../errors.ts';

/**
 * Fixed one-minute windows counted in DynamoDB, so every Lambda instance (and every local process)
 * shares one budget per client. One UpdateItem per request; the counter expires through TTL.
 */
export interface RateLimitState {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

const WINDOW_SECONDS = 60;

export async function consumeRateLimit(client: string, now = Date.now()): Promise<RateLimitState> {
  const limit = getConfig().rateLimitPerMinute;
  const windowStart = Math.floor(now / 1000 / WINDOW_SECONDS) * WINDOW_SECONDS;
  const out = await writeItem({
    Update: {
      Key: keys.rateWindow(client, windowStart),
      UpdateExpression: 'ADD hits :one SET expiresAt = if_not_exists(expiresAt, :exp)',
      ExpressionAttributeValues: { ':one': 1, ':exp': windowStart + WINDOW_SECONDS * 2 },
      ReturnValues: 'UPDATED_NEW',
    },
  });
  const hits = Number(out?.hits ?? 1);
  const resetSeconds = Math.max(1, windowStart + WINDOW_SECONDS - Math.floor(now / 1000));
  return { limit, remaining: Math.max(0, limit - hits), resetSeconds, ...(hits > limit ? { exceeded: true } : {}) };
}

export function rateLimitHeaders(state: RateLimitState): Record<string, string> {
  return {
    'RateLimit-Limit': String(state.limit),
    'RateLimit-Remaining': String(state.remaining),
    'RateLimit-Reset': String(state.resetSeconds),
  };
}

export function assertWithinLimit(state: RateLimitState & { exceeded?: boolean }): void {
  if (state.exceeded) {
    throw new ApiError(
      'rate_limited',
      `Rate limit of ${state.limit} requests per minute exceeded; retry in ${state.resetSeconds} s`,
      { limit: state.limit, retryAfterSeconds: state.resetSeconds },
      { 'Retry-After': String(state.resetSeconds) },
    );
  }
}
