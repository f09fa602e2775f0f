import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../shared/db/keys.ts';
import { createRateLimiter } from '../../shared/http/rate-limit.ts';
import { getRaw } from '../helpers/db.ts';
import { countRateWrites } from '../helpers/rate-writes.ts';
import { startTestApi, type TestApi } from '../helpers/stack.ts';

/**
 * The shared rate limit (shared/http/rate-limit.ts) against DynamoDB Local: claims in batches,
 * never more than the limit across processes. Each `createRateLimiter()` stands for one process
 * (one Lambda instance): its own memory, the same table.
 */
let api: TestApi;
let writes = { n: 0 };
beforeAll(async () => {
  api = await startTestApi();
  writes = countRateWrites();
});
afterAll(async () => api?.stop());

// Inside one window whatever the clock says: the limiter takes `now`.
const minute = (n: number) => Date.UTC(2026, 10, 23, 12, n, 5);

describe('the shared rate limit', () => {
  it('one busy client in one process: every one of 240 requests admitted, the 241st refused, far fewer writes than requests', async () => {
    const limiter = createRateLimiter();
    writes.n = 0;
    const remaining: number[] = [];
    for (let i = 0; i < 240; i++) {
      const state = await limiter('cred:busy', minute(1));
      expect(state.exceeded, `request ${i + 1}`).toBeUndefined();
      remaining.push(state.remaining);
    }
    const written = writes.n;
    // The header counts down one by one, as if every request were counted on its own.
    expect(remaining).toEqual(Array.from({ length: 240 }, (_, i) => 239 - i));
    const refused = await limiter('cred:busy', minute(1));
    expect(refused).toMatchObject({ exceeded: true, remaining: 0 });
    expect(writes.n).toBe(written); // refused without a write: the count cannot fall within a window
    expect((await getRaw(keys.rateWindow('cred:busy', minute(1) / 1000 - 5)))?.hits).toBe(240);
    console.log(`rate limit: 240 requests of one client in one process cost ${written} counter writes (was 240)`);
    expect(written).toBeLessThan(60);

    // A new window starts from nothing.
    expect((await limiter('cred:busy', minute(2))).exceeded).toBeUndefined();
  });

  it('a client polling every 5 s: 4 writes for its 12 requests in its first minute, then 2 a minute', async () => {
    const limiter = createRateLimiter();
    const perMinute: number[] = [];
    for (const m of [3, 4, 5]) {
      writes.n = 0;
      for (let i = 0; i < 12; i++)
        expect((await limiter('cred:poller', Date.UTC(2026, 10, 23, 12, m, 0) + i * 5000)).exceeded).toBeUndefined();
      perMinute.push(writes.n);
    }
    // The first claim of a minute covers what the caller spent in the one before (at most 8).
    expect(perMinute).toEqual([4, 2, 2]);
  });

  it('a caller twice a minute pays one write per request only in its first minute; once a minute, one each', async () => {
    const limiter = createRateLimiter();
    const twice: number[] = [];
    const once: number[] = [];
    for (const m of [10, 11, 12]) {
      writes.n = 0;
      for (const s of [0, 30]) await limiter('cred:twice', Date.UTC(2026, 10, 23, 12, m, s));
      twice.push(writes.n);
      writes.n = 0;
      await limiter('cred:once', Date.UTC(2026, 10, 23, 12, m, 0));
      once.push(writes.n);
    }
    expect(twice).toEqual([2, 1, 1]);
    expect(once).toEqual([1, 1, 1]);
  });

  it('three processes sharing one client, concurrently: never more than 240 admitted in the window', async () => {
    const processes = [createRateLimiter(), createRateLimiter(), createRateLimiter()];
    let admitted = 0;
    let refused = 0;
    await Promise.all(
      processes.map(async (limiter) => {
        for (let i = 0; i < 120; i++) {
          const state = await limiter('cred:spread', minute(4));
          if (state.exceeded) refused++;
          else admitted++;
        }
      }),
    );
    console.log(`rate limit: 3 processes × 120 requests → ${admitted} admitted, ${refused} refused (limit 240)`);
    expect(admitted + refused).toBe(360);
    expect(admitted).toBeLessThanOrEqual(240);
    // Claims shrink to one unit near the limit, so little lapses unspent in the other processes.
    expect(admitted).toBeGreaterThanOrEqual(230);
  });

  it('many concurrent requests in one process: exactly the limit admitted', async () => {
    const limiter = createRateLimiter();
    const states = await Promise.all(Array.from({ length: 300 }, () => limiter('cred:burst', minute(5))));
    expect(states.filter((s) => !s.exceeded)).toHaveLength(240);
  });

  it('clients do not share their budgets', async () => {
    const limiter = createRateLimiter();
    for (let i = 0; i < 240; i++) await limiter('ip:203.0.113.9', minute(6));
    expect((await limiter('ip:203.0.113.9', minute(6))).exceeded).toBe(true);
    expect((await limiter('ip:203.0.113.10', minute(6))).exceeded).toBeUndefined();
  });
});
