import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rateCounterOf } from '../../shared/http/rate-claim.ts';
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

/** The shared count of one client (or account, `acct:<id>`) in the window of `at`, as stored. */
async function countOf(who: string, at: number, attribute = 'h'): Promise<number> {
  const { Key, minute: m } = rateCounterOf(who, Math.floor(at / 60_000) * 60);
  return Number((await getRaw(Key))?.[`${attribute}${m}`] ?? 0);
}

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
    expect(await countOf('cred:busy', minute(1))).toBe(240);
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

  it('a sparse caller claims the rest of its five-minute block with one write: once or twice a minute, one write per block', async () => {
    const limiter = createRateLimiter();
    const twice: number[] = [];
    const once: number[] = [];
    // 12:10–12:14 is one block, 12:15–12:19 the next.
    for (const m of [10, 11, 12, 13, 14, 15, 16]) {
      writes.n = 0;
      for (const s of [0, 30]) expect((await limiter('cred:twice', Date.UTC(2026, 10, 23, 12, m, s))).exceeded).toBeUndefined();
      twice.push(writes.n);
      writes.n = 0;
      expect((await limiter('cred:once', Date.UTC(2026, 10, 23, 12, m, 0))).exceeded).toBeUndefined();
      once.push(writes.n);
    }
    // Twice a minute: the first request claims 1 a minute ahead, the second tops that up to 2.
    expect(twice).toEqual([2, 0, 0, 0, 0, 1, 0]);
    expect(once).toEqual([1, 0, 0, 0, 0, 1, 0]);
    // Each minute's count holds the units claimed for it, though no request of that minute wrote.
    expect(await countOf('cred:once', Date.UTC(2026, 10, 23, 12, 13, 0))).toBe(1);
    expect(await countOf('cred:twice', Date.UTC(2026, 10, 23, 12, 13, 0))).toBe(2);
  });

  it('a sparse caller turned abuser is refused at the 241st request of the minute, with units claimed ahead or without', async () => {
    const limiter = createRateLimiter();
    // One request at 12:20 claims a unit of 12:21–12:24 for this process.
    await limiter('cred:turns', Date.UTC(2026, 10, 23, 12, 20, 0));
    expect(await countOf('cred:turns', Date.UTC(2026, 10, 23, 12, 21, 0))).toBe(1);
    const at = Date.UTC(2026, 10, 23, 12, 21, 10);
    let admitted = 0;
    for (let i = 0; i < 300; i++) if (!(await limiter('cred:turns', at)).exceeded) admitted++;
    expect(admitted).toBe(240);
    expect(await countOf('cred:turns', at)).toBe(240);
    // The same, all at once, in a minute held ahead.
    const burst = await Promise.all(Array.from({ length: 300 }, () => limiter('cred:turns', Date.UTC(2026, 10, 23, 12, 22, 10))));
    expect(burst.filter((s) => !s.exceeded)).toHaveLength(240);
    expect(burst.filter((s) => s.exceeded)).toHaveLength(60);
  });

  it('units held ahead by many processes count: processes racing later in the block never admit more than 240 together', async () => {
    // Eight processes each serve one request of the credential at 12:25: each holds a unit of 12:26–12:29.
    const processes = Array.from({ length: 8 }, () => createRateLimiter());
    for (const limiter of processes) await limiter('cred:ahead', Date.UTC(2026, 10, 23, 12, 25, 0));
    expect(await countOf('cred:ahead', Date.UTC(2026, 10, 23, 12, 27, 0))).toBe(8);
    // At 12:27, three of them race with 120 requests each; the other five spend their unit too.
    const at = Date.UTC(2026, 10, 23, 12, 27, 5);
    let admitted = 0;
    await Promise.all(
      processes.map(async (limiter, i) => {
        for (let n = 0; n < (i < 3 ? 120 : 1); n++) if (!(await limiter('cred:ahead', at)).exceeded) admitted++;
      }),
    );
    console.log(`rate limit: 8 processes holding a unit ahead, 3 racing → ${admitted} admitted (limit 240)`);
    expect(admitted).toBeLessThanOrEqual(240);
    expect(admitted).toBeGreaterThanOrEqual(230);
    expect(await countOf('cred:ahead', at)).toBeGreaterThanOrEqual(admitted);
  });

  it("a sparse caller's account ceiling is asked for only when a claim is due, and still binds the account's credentials together", async () => {
    const limiter = createRateLimiter();
    let asked = 0;
    const ceiling = {
      accountId: 'sparse-account',
      limit: async () => {
        asked++;
        return 300;
      },
    };
    writes.n = 0;
    for (let m = 30; m < 40; m++) await limiter('cred:sparse-key', Date.UTC(2026, 10, 23, 12, m, 0), ceiling);
    // Ten minutes, two blocks: two writes and two lookups of the ceiling, not ten.
    expect(writes.n).toBe(2);
    expect(asked).toBe(2);
    // The same account's other credentials, in three more processes at once: 300 together at most.
    const at = Date.UTC(2026, 10, 23, 12, 31, 20);
    const others = [createRateLimiter(), createRateLimiter(), createRateLimiter()];
    const results = await Promise.all(
      others.flatMap((other, i) =>
        Array.from({ length: 150 }, () => other(`cred:other-${i}`, at, { accountId: 'sparse-account', limit: 300 })),
      ),
    );
    const admitted =
      results.filter((s) => !s.exceeded).length + (((await limiter('cred:sparse-key', at, ceiling)).exceeded ? 0 : 1) as number);
    console.log(`account ceiling with a unit held ahead: ${admitted} admitted of 451 (ceiling 300)`);
    expect(admitted).toBeLessThanOrEqual(300);
    expect(admitted).toBeGreaterThanOrEqual(285);
    expect(results.filter((s) => s.exceeded).every((s) => s.scope === 'account')).toBe(true);
    expect(await countOf('acct:sparse-account', at)).toBeGreaterThanOrEqual(admitted);
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
