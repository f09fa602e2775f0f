import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { rateCounterOf } from '../../shared/http/rate-claim.ts';
import { createRateLimiter } from '../../shared/http/rate-limit.ts';
import { getRaw } from '../helpers/db.ts';
import { countRateWrites } from '../helpers/rate-writes.ts';
import { expectEnvelope, startTestApi, type ApiResponse, type TestApi } from '../helpers/stack.ts';
import { customer } from '../helpers/customer.ts';

/**
 * Limits that stop one tenant from multiplying its share (issue 21, item 5), attacked the way an
 * abusive tenant would: many API keys created at once, then many keys each under the
 * per-credential 240 a minute that together pass the account's ceiling (600), and a trial account
 * trying to hold what a paying one may. Real DynamoDB Local and real HTTP throughout.
 */
let api: TestApi;
let writes = { n: 0 };
beforeAll(async () => {
  api = await startTestApi();
  writes = countRateWrites();
});
afterAll(async () => api?.stop());

// An admin grant ends the trial (so does a top-up): this account is held to the paid limits.
const PAID = { grantCents: 100, grantBy: 'admin' } as const;

const createKey = (token: string, name: string) => api.call('POST', '/v1/keys', { token, body: { name } });

const statuses = (results: ApiResponse[]) => {
  const counts: Record<number, number> = {};
  for (const r of results) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
};

describe('API keys per account', () => {
  it('40 keys created at once by a paying account: exactly 25 exist, the rest 422 limit_exceeded; a revocation frees one slot', async () => {
    const { token, id } = await customer(api, 'keys-burst@example.com', PAID);
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => createKey(token, `burst ${i}`)));
    expect(statuses(results)).toEqual({ 201: 25, 422: 15 });
    for (const r of results.filter((r) => r.status === 422)) {
      expectEnvelope(r, 422, 'limit_exceeded');
      expect(r.body.error.details).toEqual({ limit: 25 });
    }
    expect((await getRaw(keys.account(id)))!.apiKeyCount).toBe(25);
    expect((await api.call('GET', '/v1/keys?limit=100', { token })).body.data).toHaveLength(25);

    // Two revocations of the same key at once free one slot, not two.
    const victim = results.find((r) => r.status === 201)!.body.id;
    const revoked = await Promise.all([1, 2].map(() => api.call('DELETE', `/v1/keys/${victim}`, { token })));
    expect(revoked.map((r) => r.status)).toEqual([200, 200]);
    expect((await getRaw(keys.account(id)))!.apiKeyCount).toBe(24);
    const again = await Promise.all([1, 2, 3].map((i) => createKey(token, `after ${i}`)));
    expect(statuses(again)).toEqual({ 201: 1, 422: 2 });
    expect((await getRaw(keys.account(id)))!.apiKeyCount).toBe(25);
  });

  it('a trial account holds at most trialMaxApiKeys (5); its first admin grant lifts it to the paid limit', async () => {
    const { token, id } = await customer(api, 'keys-trial@example.com');
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => createKey(token, `trial ${i}`)));
    expect(statuses(results)).toEqual({ 201: 5, 422: 3 });
    expect(results.find((r) => r.status === 422)!.body.error.details).toEqual({ limit: 5 });
    const limits = await api.call('GET', `/v1/admin/users/${id}/limits`);
    expect(limits.body).toEqual({
      accountId: id,
      overrides: { maxApiKeys: null, requestsPerMinute: null, maxServers: null },
      effective: { maxApiKeys: 5, requestsPerMinute: 600, maxServers: 10, trial: true },
      apiKeyCount: 5,
    });

    expect((await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: 100, note: 'grant' } })).status).toBe(200);
    expect((await createKey(token, 'paid now')).status).toBe(201);
    expect((await api.call('GET', `/v1/admin/users/${id}/limits`)).body.effective).toEqual({
      maxApiKeys: 25,
      requestsPerMinute: 600,
      maxServers: 10,
      trial: false,
    });
  });

  it('an admin override replaces the platform limit for one account; null removes it; every change is audit-logged', async () => {
    const { token, id } = await customer(api, 'keys-override@example.com', PAID);
    const set = await api.call('PUT', `/v1/admin/users/${id}/limits`, { body: { maxApiKeys: 2 } });
    expect(set.status).toBe(200);
    expect(set.body.overrides).toEqual({ maxApiKeys: 2, requestsPerMinute: null, maxServers: null });
    expect(set.body.effective.maxApiKeys).toBe(2);
    const results = await Promise.all(Array.from({ length: 5 }, (_, i) => createKey(token, `o ${i}`)));
    expect(statuses(results)).toEqual({ 201: 2, 422: 3 });

    // Bad input: a clear 400 and nothing changed.
    for (const body of [{}, { maxApiKeys: -1 }, { maxApiKeys: 1.5 }, { requestsPerMinute: 0 }, { other: 1 }]) {
      expectEnvelope(await api.call('PUT', `/v1/admin/users/${id}/limits`, { body }), 400, 'validation_failed');
    }
    expectEnvelope(
      await api.call('PUT', '/v1/admin/users/00000000-0000-4000-8000-000000000000/limits', { body: { maxApiKeys: 3 } }),
      404,
      'not_found',
    );
    expectEnvelope(await api.call('GET', '/v1/admin/users/00000000-0000-4000-8000-000000000000/limits'), 404, 'not_found');
    // Not for customers.
    expectEnvelope(await api.call('PUT', `/v1/admin/users/${id}/limits`, { token, body: { maxApiKeys: 100 } }), 403, 'forbidden');
    expect((await getRaw(keys.account(id)))!.limits).toEqual({ maxApiKeys: 2 });

    const cleared = await api.call('PUT', `/v1/admin/users/${id}/limits`, { body: { maxApiKeys: null } });
    expect(cleared.body.overrides.maxApiKeys).toBeNull();
    expect(cleared.body.effective.maxApiKeys).toBe(25);
    expect((await createKey(token, 'o more')).status).toBe(201);

    const logs = (await api.call('GET', '/v1/admin/logs?limit=100')).body.data.filter(
      (e: { action: string; target: string; result: string }) =>
        e.action === 'accounts.limits' && e.target === `account:${id}` && e.result === 'success',
    );
    expect(logs.map((e: { details: unknown }) => e.details)).toEqual([
      {
        before: { maxApiKeys: 2, requestsPerMinute: null, maxServers: null },
        after: { maxApiKeys: null, requestsPerMinute: null, maxServers: null },
      },
      {
        before: { maxApiKeys: null, requestsPerMinute: null, maxServers: null },
        after: { maxApiKeys: 2, requestsPerMinute: null, maxServers: null },
      },
    ]);
  });

  it('an account whose keys predate the count: it is set from the keys it holds, not from zero', async () => {
    const { token, id } = await customer(api, 'keys-legacy@example.com', PAID);
    for (let i = 0; i < 4; i++) expect((await createKey(token, `old ${i}`)).status).toBe(201);
    const listed = (await api.call('GET', '/v1/keys', { token })).body.data;
    await api.call('DELETE', `/v1/keys/${listed[0].id}`, { token });
    // As stored before the count existed.
    await db().send(new UpdateCommand({ TableName: tableName(), Key: keys.account(id), UpdateExpression: 'REMOVE apiKeyCount' }));
    await api.call('PUT', `/v1/admin/users/${id}/limits`, { body: { maxApiKeys: 5 } });
    const results = await Promise.all(Array.from({ length: 4 }, (_, i) => createKey(token, `new ${i}`)));
    expect(statuses(results)).toEqual({ 201: 2, 422: 2 });
    expect((await getRaw(keys.account(id)))!.apiKeyCount).toBe(5);
  });
});

describe('trial webhook endpoints', () => {
  it('trialMaxWebhookEndpoints holds a trial account below the 10 of a paying one, also when created at once', async () => {
    expect((await api.call('PUT', '/v1/admin/settings', { body: { trialMaxWebhookEndpoints: 2 } })).status).toBe(200);
    try {
      const trial = await customer(api, 'wh-trial@example.com');
      const create = (token: string, i: number) =>
        api.call('POST', '/v1/webhook-endpoints', { token, body: { url: `http://127.0.0.1:9/hook/${i}` } });
      const results = await Promise.all(Array.from({ length: 5 }, (_, i) => create(trial.token, i)));
      expect(statuses(results)).toEqual({ 201: 2, 422: 3 });
      expect(results.find((r) => r.status === 422)!.body.error.details).toEqual({ limit: 2 });
      expect((await getRaw(keys.account(trial.id)))!.webhookEndpointCount).toBe(2);

      const paid = await customer(api, 'wh-paid@example.com', PAID);
      const paidResults = await Promise.all(Array.from({ length: 5 }, (_, i) => create(paid.token, i)));
      expect(statuses(paidResults)).toEqual({ 201: 5 });
    } finally {
      await api.call('PUT', '/v1/admin/settings', { body: { trialMaxWebhookEndpoints: null } });
    }
  });
});

describe('the per-account request ceiling', () => {
  it('four keys, each under its 240 a minute, together 800: the account gets 600, then 429 with the same envelope and headers', async () => {
    const { token, id } = await customer(api, 'ceiling-keys@example.com', PAID);
    const secrets: string[] = [];
    for (let i = 0; i < 4; i++) secrets.push((await createKey(token, `amp ${i}`)).body.secret);
    // A minute of its own, without the key creations above in it, from the burst to the count read at the end.
    await api.clock.inFreshMinute(async () => {
      // 200 requests per key, in waves of 40 at a time across the keys.
      const results: ApiResponse[] = [];
      for (let wave = 0; wave < 20; wave++) {
        results.push(
          ...(await Promise.all(
            secrets.flatMap((key) => Array.from({ length: 10 }, () => api.call('GET', '/v1/account', { token: key }))),
          )),
        );
      }
      // The session token's earlier requests (the key creations) claimed a unit or two of this minute
      // ahead (shared/http/rate-limit.ts: a sparse caller claims the rest of its block): those count
      // against the account too, so the keys get 600 less what it holds, and it spends them.
      const keysAdmitted = statuses(results)[200] ?? 0;
      expect(keysAdmitted).toBeGreaterThanOrEqual(596);
      expect(keysAdmitted + (statuses(results)[429] ?? 0)).toBe(800);
      const byToken: ApiResponse[] = [];
      for (let i = 0; i < 5; i++) byToken.push(await api.call('GET', '/v1/account', { token }));
      const tokenAdmitted = byToken.filter((r) => r.status === 200).length;
      expect(keysAdmitted + tokenAdmitted).toBe(600);
      expect(byToken.at(-1)!.status).toBe(429);
      const refused = results.find((r) => r.status === 429)!;
      expectEnvelope(refused, 429, 'rate_limited');
      expect(refused.body.error.details).toMatchObject({ limit: 600, scope: 'account' });
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(refused.headers.get('ratelimit-limit')).toBe('600');
      expect(refused.headers.get('ratelimit-remaining')).toBe('0');
      // The account's session token is one more credential of the same account: refused too.
      const session = await api.call('GET', '/v1/account', { token });
      expectEnvelope(session, 429, 'rate_limited');
      // Another account is not touched.
      const other = await customer(api, 'ceiling-bystander@example.com', PAID);
      expect((await api.call('GET', '/v1/account', { token: other.token })).status).toBe(200);
      const { Key, minute } = rateCounterOf(`acct:${id}`, Math.floor(api.clock.now() / 60_000) * 60);
      const counted = await getRaw(Key);
      // Both counts in one item: `h<minute>` for the account (never more than the ceiling admitted + refused claims).
      expect(Number(counted?.[`h${minute}`])).toBeGreaterThanOrEqual(600);
    });
  }, 60_000);

  it('RateLimit-* report the tighter limit: a fresh key of a busy account sees what is left of the account, not its own 240', async () => {
    const { token, id } = await customer(api, 'ceiling-headers@example.com', PAID);
    await api.call('PUT', `/v1/admin/users/${id}/limits`, { body: { requestsPerMinute: 300 } });
    const a = (await createKey(token, 'a')).body.secret;
    const b = (await createKey(token, 'b')).body.secret;
    const { last, fresh } = await api.clock.inFreshMinute(async () => {
      let last: ApiResponse | undefined;
      for (let i = 0; i < 200; i++) last = await api.call('GET', '/v1/account', { token: a });
      return { last, fresh: await api.call('GET', '/v1/account', { token: b }) };
    });
    expect(last!.headers.get('ratelimit-limit')).toBe('240'); // its own 40 left is tighter than the account's 100
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get('ratelimit-limit')).toBe('300');
    expect(Number(fresh.headers.get('ratelimit-remaining'))).toBeLessThanOrEqual(99);
  });

  it('an admin override below 240 slows one account down, even with a single key', async () => {
    const { token, id } = await customer(api, 'ceiling-slow@example.com', PAID);
    expect(
      (await api.call('PUT', `/v1/admin/users/${id}/limits`, { body: { requestsPerMinute: 30 } })).body.effective.requestsPerMinute,
    ).toBe(30);
    const results = await api.clock.inFreshMinute(async () => {
      const results: ApiResponse[] = [];
      for (let i = 0; i < 40; i++) results.push(await api.call('GET', '/v1/account', { token }));
      return results;
    });
    expect(statuses(results)).toEqual({ 200: 30, 429: 10 });
    expect(results[29]!.headers.get('ratelimit-remaining')).toBe('0');
    expect(results[30]!.body.error.details).toMatchObject({ limit: 30, scope: 'account' });
  });

  it('three processes, three keys of one account, 250 requests each at once: never more than 600 admitted, no extra writes', async () => {
    const processes = [createRateLimiter(), createRateLimiter(), createRateLimiter()];
    const minute = Date.UTC(2026, 10, 23, 13, 7, 5);
    const ceiling = { accountId: 'amp-account', limit: 600 };
    let admitted = 0;
    const perKey = [0, 0, 0];
    writes.n = 0;
    await Promise.all(
      processes.map(async (limiter, i) => {
        for (let n = 0; n < 250; n++) {
          const state = await limiter(`cred:key${i}`, minute, ceiling);
          if (!state.exceeded) {
            admitted++;
            perKey[i]!++;
          }
        }
      }),
    );
    console.log(`account ceiling: 3 processes × 3 keys × 250 → ${admitted} admitted (ceiling 600), ${writes.n} counter writes`);
    expect(admitted).toBeLessThanOrEqual(600);
    expect(admitted).toBeGreaterThanOrEqual(580);
    for (const n of perKey) expect(n).toBeLessThanOrEqual(240);
    // One write moves both counts: about as many writes as the per-credential limit alone needs.
    expect(writes.n).toBeLessThan(200);

    // A single busy credential pays the same writes with the ceiling as without it.
    const one = createRateLimiter();
    writes.n = 0;
    for (let n = 0; n < 240; n++) await one('cred:solo', minute, { accountId: 'solo-account', limit: 600 });
    const withCeiling = writes.n;
    const bare = createRateLimiter();
    writes.n = 0;
    for (let n = 0; n < 240; n++) await bare('cred:bare', minute);
    expect(withCeiling).toBe(writes.n);
  });
});
