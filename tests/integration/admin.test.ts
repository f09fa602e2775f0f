import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, expectEnvelope, type TestApi } from '../helpers/stack.ts';
import { DEFAULT_SETTINGS } from '../../shared/settings/index.ts';
import { EXAMPLE_SELLER } from '../../shared/invoices/parties.ts';
import { keys } from '../../shared/db/keys.ts';
import { getRaw, queryPartition, setAttributes } from '../helpers/db.ts';

const FIXED_KEY = 'operator-chosen-admin-key-0123456789';
let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({ localAdminApiKey: FIXED_KEY });
});
afterAll(async () => api?.stop());

describe('LOCAL_ADMIN_API_KEY', () => {
  it('the first admin key has exactly the given secret and is an admin', async () => {
    expect(api.adminApiKey).toBe(FIXED_KEY);
    const res = await api.call('GET', '/v1/account', { token: FIXED_KEY });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ email: 'admin@localhost', isAdmin: true });
  });
});

describe('platform settings', () => {
  it('start from the documented defaults, with the fictional seller the local stack seeds', async () => {
    const res = await api.call('GET', '/v1/admin/settings');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...DEFAULT_SETTINGS, invoiceIssuer: EXAMPLE_SELLER });
  });

  it('a partial update changes only what it names and is audit-logged with before and after', async () => {
    const res = await api.call('PUT', '/v1/admin/settings', { body: { trialCreditCents: 250, prices: { ramMillicentsPerGbHour: 500 } } });
    expect(res.status).toBe(200);
    expect(res.body.trialCreditCents).toBe(250);
    expect(res.body.prices).toEqual({ ...DEFAULT_SETTINGS.prices, ramMillicentsPerGbHour: 500 });
    expect(res.body.serverCaps).toEqual(DEFAULT_SETTINGS.serverCaps);
    expect((await api.call('GET', '/v1/admin/settings')).body).toEqual(res.body);

    const logs = await api.call('GET', '/v1/admin/logs?limit=5');
    const entry = logs.body.data.find((e: { action: string; result: string }) => e.action === 'settings.update' && e.result === 'success');
    expect(entry.details).toEqual({
      changed: ['prices.ramMillicentsPerGbHour', 'trialCreditCents'],
      before: { 'prices.ramMillicentsPerGbHour': 400, trialCreditCents: 500 },
      after: { 'prices.ramMillicentsPerGbHour': 500, trialCreditCents: 250 },
    });
  });

  it('new accounts get the trial credit the settings name', async () => {
    const token = await api.session('newcomer@example.com');
    expect((await api.call('GET', '/v1/account', { token })).body.balanceCents).toBe(250);
  });

  it('refuses bad values with the field named and changes nothing', async () => {
    const before = (await api.call('GET', '/v1/admin/settings')).body;
    const cases: [unknown, string][] = [
      [{ trialCreditCents: -1 }, 'body.trialCreditCents'],
      [{ trialCreditCents: 1.5 }, 'body.trialCreditCents'],
      [{ topUpBonusPercent: 101 }, 'body.topUpBonusPercent'],
      [{ serverCaps: { maxRamMb: 128 } }, 'body.serverCaps.maxRamMb'],
      [{ prices: { goldPerHour: 1 } }, 'body.prices'],
      [{ currency: 'jpy' }, 'body.currency'], // no cents: not a currency the ledger can count in
      [{ minimumTopUpCents: 10 }, 'body.minimumTopUpCents'],
      [{}, 'body'],
    ];
    for (const [body, field] of cases) {
      const res = await api.call('PUT', '/v1/admin/settings', { body });
      expectEnvelope(res, 400, 'validation_failed');
      expect(res.body.error.details.issues.map((i: { field: string }) => i.field)).toContain(field);
    }
    const crossed = await api.call('PUT', '/v1/admin/settings', { body: { minimumTopUpCents: 200_000 } });
    expectEnvelope(crossed, 400, 'validation_failed');
    expect(crossed.body.error.details.issues[0].field).toBe('body.minimumTopUpCents');
    expect((await api.call('GET', '/v1/admin/settings')).body).toEqual(before);
  });

  it('PUT takes back exactly what GET returned: 200, nothing changes, nothing is written (the version stays)', async () => {
    const read = await api.call('GET', '/v1/admin/settings');
    const stored = await getRaw(keys.settings());
    const res = await api.call('PUT', '/v1/admin/settings', { body: read.body });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(read.body);
    expect(await getRaw(keys.settings())).toEqual(stored);
    expect((await api.call('GET', '/v1/admin/settings')).body).toEqual(read.body);
  });

  it("GET's body with the currency changed once customers exist is 409, and nothing changes", async () => {
    const read = await api.call('GET', '/v1/admin/settings');
    const stored = await getRaw(keys.settings());
    const res = await api.call('PUT', '/v1/admin/settings', {
      body: { ...read.body, currency: 'eur', trialCreditCents: read.body.trialCreditCents + 1 },
    });
    expectEnvelope(res, 409, 'conflict');
    expect(res.body.error.message).toContain('The currency is fixed once customer accounts exist');
    expect(await getRaw(keys.settings())).toEqual(stored);
    expect((await api.call('GET', '/v1/admin/settings')).body).toEqual(read.body);
  });

  it('two admins saving from the same version: the second gets 409, not a silent overwrite', async () => {
    const item = await getRaw(keys.settings());
    // Two saves race: the version condition serialises them or refuses the loser.
    const results = await Promise.all([
      api.call('PUT', '/v1/admin/settings', { body: { maxServersPerAccount: 11 } }),
      api.call('PUT', '/v1/admin/settings', { body: { maxServersPerAccount: 12 } }),
    ]);
    const statuses = results.map((r) => r.status).sort();
    // Either both serialised (200, 200) or one lost the race (200, 409); never a 500.
    expect(statuses[0]).toBe(200);
    expect([200, 409]).toContain(statuses[1]);
    const after = await getRaw(keys.settings());
    expect(Number(after!.version)).toBe(Number(item!.version) + statuses.filter((s) => s === 200).length);
  });
});

describe('activity and audit log', () => {
  it('every mutation is logged with who, credential, action, target, result, time and source IP', async () => {
    const token = await api.session('logger@example.com');
    const created = await api.call('POST', '/v1/keys', { token, body: { name: 'logged' } });
    await api.call('DELETE', `/v1/keys/${created.body.id}`, { token });
    await api.call('POST', '/v1/keys', { token, body: { name: 'logged', scopes: ['admin'] } });
    const logs = await api.call('GET', '/v1/account/logs', { token });
    expect(logs.status).toBe(200);
    const [denied, revoke, create] = logs.body.data;
    expect(create).toMatchObject({
      action: 'keys.create',
      target: `key:${created.body.id}`,
      result: 'success',
      status: 201,
      actorEmail: 'logger@example.com',
      credential: { kind: 'session' },
      sourceIp: expect.any(String),
    });
    expect(revoke).toMatchObject({ action: 'keys.revoke', target: `key:${created.body.id}`, result: 'success', status: 200 });
    expect(denied).toMatchObject({ action: 'keys.create', result: 'failure', status: 403, errorCode: 'forbidden' });
    expect(Date.parse(create.at)).toBeGreaterThan(Date.now() - 60_000);
    // The admin sees them platform-wide; a reader of the account sees only its own.
    const platform = await api.call('GET', '/v1/admin/logs?limit=100');
    expect(platform.body.data.filter((e: { actorEmail: string }) => e.actorEmail === 'logger@example.com')).toHaveLength(3);
    const mine = await api.call('GET', '/v1/account/logs?limit=100');
    expect(mine.body.data.some((e: { actorEmail: string }) => e.actorEmail === 'logger@example.com')).toBe(false);
  });

  it('entries carry a TTL and expired ones are no longer listed', async () => {
    const token = await api.session('ttl@example.com');
    const account = (await api.call('GET', '/v1/account', { token })).body;
    await api.call('POST', '/v1/keys', { token, body: { name: 'a' } });
    const [item] = await queryPartition(keys.activityPrefix(account.id));
    const ttl = Number(item!.expiresAt);
    expect(ttl - Date.now() / 1000).toBeGreaterThan(89 * 86_400);
    expect(ttl - Date.now() / 1000).toBeLessThan(91 * 86_400);
    await setAttributes({ PK: item!.PK as string, SK: item!.SK as string }, { expiresAt: Math.floor(Date.now() / 1000) - 10 });
    expect((await api.call('GET', '/v1/account/logs', { token })).body.data).toHaveLength(0);
  });

  it('reads are not logged, so the log holds only mutations', async () => {
    const token = await api.session('reader@example.com');
    await api.call('GET', '/v1/account', { token });
    await api.call('GET', '/v1/keys', { token });
    expect((await api.call('GET', '/v1/account/logs', { token })).body.data).toHaveLength(0);
  });
});
