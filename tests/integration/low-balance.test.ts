import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, expectEnvelope, type TestApi } from '../helpers/stack.ts';
import { appendLedger } from '../../shared/ledger/index.ts';
import * as accessPatterns from '../../shared/db/access-patterns.ts';

/**
 * balance.low (docs/api.md "Low-balance warning"): the threshold is a platform setting with a
 * per-account override the account sets itself; a trial spending down is warned before 0; the
 * event fires once and re-arms only when the balance is back at or above the threshold. Real
 * DynamoDB Local; charges go through appendLedger, as the billing pass does.
 */
let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
  // The trial: 300 cents, under the old fixed 500-cent threshold, so it was never warned.
  const set = await api.call('PUT', '/v1/admin/settings', { body: { trialCreditCents: 300 } });
  expect(set.status, set.text).toBe(200);
});
afterAll(async () => api?.stop());

async function customer(email: string) {
  const token = await api.session(email);
  const { id, balanceCents } = (await api.call('GET', '/v1/account', { token })).body;
  expect(balanceCents).toBe(300);
  return { token, id: id as string };
}

let n = 0;
const charge = (id: string, cents: number) =>
  appendLedger(id, [{ type: 'charge', amountCents: -cents, idempotencyKey: `lowbal-test:${id}:${++n}` }]);
const credit = (id: string, cents: number) =>
  appendLedger(id, [{ type: 'grant', amountCents: cents, idempotencyKey: `lowbal-test:${id}:${++n}` }]);

async function lows(token: string): Promise<Array<{ balanceCents: number; thresholdCents: number }>> {
  const page = await api.call('GET', '/v1/events?type=balance.low&limit=100', { token });
  expect(page.status, page.text).toBe(200);
  return page.body.data.map((e: { data: { balanceCents: number; thresholdCents: number } }) => e.data).reverse();
}

describe('the platform threshold', () => {
  it('defaults to 100 cents; a 300-cent trial spending down to 0 and past it is warned exactly once, before 0', async () => {
    expect((await api.call('GET', '/v1/admin/settings')).body.lowBalanceThresholdCents).toBe(100);
    const { token, id } = await customer('lb-trial@example.com');
    for (let i = 0; i < 4; i++) await charge(id, 50); // 250, 200, 150, 100: not below
    expect(await lows(token)).toEqual([]);
    await charge(id, 50); // 50
    expect(await lows(token)).toEqual([{ balanceCents: 50, thresholdCents: 100 }]);
    await charge(id, 50); // 0
    await charge(id, 50); // -50
    expect(await lows(token)).toEqual([{ balanceCents: 50, thresholdCents: 100 }]);
    const alerts = await api.call('GET', '/v1/account/alerts', { token });
    expect(alerts.body).toEqual({
      lowBalanceThresholdCents: 100,
      override: null,
      platformThresholdCents: 100,
      armed: false,
      balanceCents: -50,
    });
  });

  it('a threshold at or above the trial credit still warns the trial: its first charge fires', async () => {
    const { token, id } = await customer('lb-high@example.com');
    expect((await api.call('PUT', '/v1/account/alerts', { token, body: { lowBalanceThresholdCents: 500 } })).status).toBe(200);
    expect(await lows(token)).toEqual([]); // the trial credit itself is not a warning
    await charge(id, 1);
    await charge(id, 1);
    expect(await lows(token)).toEqual([{ balanceCents: 299, thresholdCents: 500 }]);
  });

  it('an admin change of the platform setting applies to accounts without an override', async () => {
    const set = await api.call('PUT', '/v1/admin/settings', { body: { lowBalanceThresholdCents: 200 } });
    expect(set.status, set.text).toBe(200);
    try {
      const { token, id } = await customer('lb-platform@example.com');
      await charge(id, 100); // 200: not below
      expect(await lows(token)).toEqual([]);
      await charge(id, 1);
      expect(await lows(token)).toEqual([{ balanceCents: 199, thresholdCents: 200 }]);
    } finally {
      await api.call('PUT', '/v1/admin/settings', { body: { lowBalanceThresholdCents: 100 } });
    }
  });
});

describe('the account override', () => {
  it('the account sets its own threshold (billing:write), fires at it, and clears it with null', async () => {
    const { token, id } = await customer('lb-override@example.com');
    const put = await api.call('PUT', '/v1/account/alerts', { token, body: { lowBalanceThresholdCents: 250 } });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toEqual({ lowBalanceThresholdCents: 250, override: 250, platformThresholdCents: 100, armed: true, balanceCents: 300 });
    await charge(id, 40); // 260
    expect(await lows(token)).toEqual([]);
    await charge(id, 20); // 240
    expect(await lows(token)).toEqual([{ balanceCents: 240, thresholdCents: 250 }]);

    const logs = await api.call('GET', '/v1/account/logs?limit=10', { token });
    expect(logs.body.data.find((e: { action: string }) => e.action === 'alerts.update')).toMatchObject({
      result: 'success',
      details: { before: null, after: 250 },
    });

    const cleared = await api.call('PUT', '/v1/account/alerts', { token, body: { lowBalanceThresholdCents: null } });
    expect(cleared.body).toMatchObject({ lowBalanceThresholdCents: 100, override: null });
    expect((await accessPatterns.accountById(id))?.lowBalanceThresholdCents).toBeUndefined();
  });

  it('bad input is refused with nothing changed; a read-only key cannot set it; another account is untouched', async () => {
    const { token, id } = await customer('lb-bad@example.com');
    for (const body of [
      { lowBalanceThresholdCents: -1 },
      { lowBalanceThresholdCents: 10_000_001 },
      { lowBalanceThresholdCents: 1.5 },
      { lowBalanceThresholdCents: '100' },
      { lowBalanceThresholdCents: 100, balanceCents: 1_000_000 },
      {},
    ]) {
      expectEnvelope(await api.call('PUT', '/v1/account/alerts', { token, body }), 400, 'validation_failed');
    }
    expect((await accessPatterns.accountById(id))?.lowBalanceThresholdCents).toBeUndefined();

    const key = await api.call('POST', '/v1/keys', { token, body: { name: 'reader', scopes: ['billing:read'] } });
    expect(key.status, key.text).toBe(201);
    const reader = key.body.secret as string;
    expect((await api.call('GET', '/v1/account/alerts', { token: reader })).status).toBe(200);
    expectEnvelope(await api.call('PUT', '/v1/account/alerts', { token: reader, body: { lowBalanceThresholdCents: 0 } }), 403, 'forbidden');
    expect((await accessPatterns.accountById(id))?.lowBalanceThresholdCents).toBeUndefined();

    const other = await customer('lb-bad-other@example.com');
    await api.call('PUT', '/v1/account/alerts', { token: other.token, body: { lowBalanceThresholdCents: 299 } });
    await charge(id, 1);
    expect(await lows(token)).toEqual([]);
  });
});

describe('the admin override', () => {
  it('an admin sets the same override for an account (audit-logged); a customer cannot; an unknown account is 404', async () => {
    const { token, id } = await customer('lb-admin@example.com');
    const set = await api.call('PUT', `/v1/admin/users/${id}/alerts`, { body: { lowBalanceThresholdCents: 150 } });
    expect(set.status, set.text).toBe(200);
    expect(set.body).toMatchObject({ lowBalanceThresholdCents: 150, override: 150, armed: true });
    expect((await api.call('GET', '/v1/account/alerts', { token })).body.override).toBe(150);
    expect((await api.call('GET', `/v1/admin/users/${id}/alerts`)).body).toEqual(set.body);
    await charge(id, 151); // 149
    expect(await lows(token)).toEqual([{ balanceCents: 149, thresholdCents: 150 }]);

    const logs = await api.call('GET', '/v1/admin/logs?limit=10');
    expect(logs.body.data.find((e: { action: string }) => e.action === 'accounts.alerts')).toMatchObject({
      result: 'success',
      target: `account:${id}`,
      details: { before: null, after: 150 },
    });
    expectEnvelope(
      await api.call('PUT', `/v1/admin/users/${id}/alerts`, { token, body: { lowBalanceThresholdCents: 0 } }),
      403,
      'forbidden',
    );
    expect((await api.call('GET', '/v1/account/alerts', { token })).body.override).toBe(150);
    expectEnvelope(
      await api.call('PUT', '/v1/admin/users/00000000-0000-4000-8000-000000000000/alerts', { body: { lowBalanceThresholdCents: 1 } }),
      404,
      'not_found',
    );
  });
});

describe('re-arming', () => {
  it('fires again only after the balance was back at or above the threshold; a credit that stays below does not re-arm', async () => {
    const { token, id } = await customer('lb-rearm@example.com');
    await charge(id, 250); // 50: fires
    await credit(id, 40); // 90: still below, stays fired
    await charge(id, 10); // 80: no second warning
    expect(await lows(token)).toEqual([{ balanceCents: 50, thresholdCents: 100 }]);
    expect((await api.call('GET', '/v1/account/alerts', { token })).body.armed).toBe(false);

    await credit(id, 20); // 100: at the threshold, re-armed
    expect((await api.call('GET', '/v1/account/alerts', { token })).body.armed).toBe(true);
    await charge(id, 1); // 99: fires again
    expect(await lows(token)).toEqual([
      { balanceCents: 50, thresholdCents: 100 },
      { balanceCents: 99, thresholdCents: 100 },
    ]);
  });

  it('concurrent charges crossing the threshold fire exactly once (the flag is in the transaction that moves the balance)', async () => {
    const { token, id } = await customer('lb-race@example.com');
    const results = await Promise.all(Array.from({ length: 10 }, () => charge(id, 29)));
    expect(results.every((r) => r.applied)).toBe(true);
    expect((await api.call('GET', '/v1/account', { token })).body.balanceCents).toBe(10);
    const fired = await lows(token);
    expect(fired).toHaveLength(1);
    expect(fired[0]).toEqual({ balanceCents: 97, thresholdCents: 100 });
  });
});
