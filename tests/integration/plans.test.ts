import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { runPassInProcess } from '../../shared/billing/pass.ts';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { HOUR_MS, hourStart } from '../../shared/pricing/hours.ts';
import { DEFAULT_SETTINGS } from '../../shared/settings/index.ts';
import { customer } from '../helpers/customer.ts';
import { getRaw, setAttributes } from '../helpers/db.ts';
import { expectLedgerInvariant, ledgerOf } from '../helpers/money.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';

/**
 * Plans (shared/plans) against DynamoDB Local and the panel simulator: admin CRUD and its
 * validation, the catalog's list of visible plans, a deploy naming a plan checked against its
 * unchanged body (422 `plan_mismatch` naming each field), a set price recorded on the server and
 * charged exactly by the billing pass, hidden plans, and the plans-only setting.
 *
 * Default prices: 1024 MB / 100 % / 2048 MB is 720 millicents an hour; a backup slot 70.
 */
let api: TestApi;
const resources = { ramMb: 1024, cpuPercent: 100, diskMb: 2048 };
const DERIVED_MC = 720;
const B = DEFAULT_SETTINGS.addons.backupMillicentsPerHour;

const planBody = (over: Record<string, unknown> = {}) => ({
  name: 'Starter',
  description: 'A small survival world',
  pictureUrl: 'https://cdn.example.com/starter.png',
  category: 'Minecraft',
  resources,
  addons: { backups: 1, databases: 0, ports: 0 },
  eggIds: [1],
  setPriceMillicentsPerHour: null,
  visible: true,
  ...over,
});

async function createPlan(over: Record<string, unknown> = {}) {
  const res = await api.call('POST', '/v1/admin/plans', { body: planBody(over) });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; priceMillicentsPerHour: number; monthlyEstimateCents: number };
}

beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20, rateLimits: { application: 100_000, client: 100_000 } } });
});
afterAll(async () => api?.stop());

describe('admin CRUD', () => {
  it('creates a plan priced from its resources and add-ons, lists, changes and deletes it', async () => {
    const plan = await createPlan();
    expect(plan.priceMillicentsPerHour).toBe(DERIVED_MC + B);
    expect(plan.monthlyEstimateCents).toBe(Math.ceil(((DERIVED_MC + B) * 730) / 1000));
    const changed = await api.call('PATCH', `/v1/admin/plans/${plan.id}`, { body: { setPriceMillicentsPerHour: 1234, name: 'Starter+' } });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body).toMatchObject({ name: 'Starter+', priceMillicentsPerHour: 1234, priceCentsPerHour: 2, category: 'Minecraft' });
    const listed = await api.call('GET', '/v1/admin/plans');
    expect(listed.body.data.map((p: { id: string }) => p.id)).toContain(plan.id);
    const deleted = await api.call('DELETE', `/v1/admin/plans/${plan.id}`);
    expect(deleted.body).toEqual({ id: plan.id, deleted: true });
    expectEnvelope(await api.call('PATCH', `/v1/admin/plans/${plan.id}`, { body: { name: 'x' } }), 404, 'not_found');
  });

  it.each([
    ['an http picture', { pictureUrl: 'http://cdn.example.com/a.png' }, 'pictureUrl'],
    ['resources below the minimum', { resources: { ...resources, ramMb: 10 } }, 'resources.ramMb'],
    ['an empty name', { name: ' ' }, 'name'],
    ['a zero price', { setPriceMillicentsPerHour: 0 }, 'setPriceMillicentsPerHour'],
    ['an unknown field', { colour: 'red' }, ''],
  ])('refuses %s with 400, writing nothing', async (_, over, field) => {
    const before = (await api.call('GET', '/v1/admin/plans')).body.data.length;
    const res = await api.call('POST', '/v1/admin/plans', { body: planBody(over) });
    expectEnvelope(res, 400, 'validation_failed');
    if (field) expect(JSON.stringify(res.body.error.details)).toContain(field);
    expect((await api.call('GET', '/v1/admin/plans')).body.data.length).toBe(before);
  });

  it('customers cannot reach the admin routes', async () => {
    const { token } = await customer(api, 'plans-not-admin@example.com');
    expectEnvelope(await api.call('POST', '/v1/admin/plans', { token, body: planBody() }), 403, 'forbidden');
  });
});

describe('deploy on a plan', () => {
  it('the catalog lists visible plans only; a hidden plan is not deployable', async () => {
    const shown = await createPlan({ name: 'Shown' });
    const hidden = await createPlan({ name: 'Hidden', visible: false });
    const { token } = await customer(api, 'plans-hidden@example.com', { grantCents: 5_000 });
    const ids = (await api.call('GET', '/v1/plans', { token })).body.data.map((p: { id: string }) => p.id);
    expect(ids).toContain(shown.id);
    expect(ids).not.toContain(hidden.id);
    const res = await api.call('POST', '/v1/servers', {
      token,
      body: { name: 'hidden one', eggId: 1, ...resources, addons: { backups: 1, databases: 0, ports: 0 }, planId: hidden.id },
    });
    expectEnvelope(res, 422, 'plan_mismatch');
    expect(res.body.error.details.issues).toEqual([{ field: 'body.planId', message: expect.stringContaining('not a plan on sale') }]);
    expect((await api.call('GET', '/v1/servers', { token })).body.data).toEqual([]);
  });

  it('refuses a body that differs from its plan, naming every field, and creates nothing', async () => {
    const plan = await createPlan({ name: 'Strict', addons: { backups: 2, databases: 0, ports: 0 } });
    const { token } = await customer(api, 'plans-mismatch@example.com', { grantCents: 5_000 });
    const body = {
      name: 'wrong',
      eggId: 2,
      ramMb: 2048,
      cpuPercent: 100,
      diskMb: 2048,
      addons: { backups: 1, databases: 0, ports: 0 },
      planId: plan.id,
    };
    for (const path of ['/v1/servers', '/v1/servers/quote']) {
      const res = await api.call('POST', path, { token, body });
      expectEnvelope(res, 422, 'plan_mismatch');
      expect(res.body.error.details.issues.map((i: { field: string }) => i.field)).toEqual([
        'body.ramMb',
        'body.eggId',
        'body.addons.backups',
      ]);
    }
    expect((await api.call('GET', '/v1/servers', { token })).body.data).toEqual([]);
  });

  it('a set price is quoted, recorded on the server and charged exactly by the billing pass', async () => {
    await db().send(new DeleteCommand({ TableName: tableName(), Key: keys.billingWatermark() }));
    const SET = 1_333;
    const plan = await createPlan({ name: 'Fixed', setPriceMillicentsPerHour: SET });
    const { token, id } = await customer(api, 'plans-billing@example.com', { grantCents: 5_000 });
    // One backup more than the plan includes: the extra is priced as an add-on on top of the set price.
    const body = { name: 'fixed price', eggId: 1, ...resources, addons: { backups: 2, databases: 0, ports: 0 }, planId: plan.id };
    const quote = await api.call('POST', '/v1/servers/quote', { token, body });
    expect(quote.status, quote.text).toBe(200);
    expect(quote.body).toMatchObject({ planId: plan.id, priceMillicentsPerHour: SET + B });
    expect(quote.body.lines).toEqual([
      { item: 'resources', quantity: 1, unitMillicentsPerHour: SET, millicentsPerHour: SET },
      { item: 'backups', quantity: 1, unitMillicentsPerHour: B, millicentsPerHour: B },
    ]);
    const res = await api.call('POST', '/v1/servers', { token, body });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ planId: plan.id, resources, priceMillicentsPerHour: SET + B, priceCentsPerHour: 2 });
    const stored = await getRaw(keys.server(id, res.body.id));
    expect(stored?.history).toEqual([expect.objectContaining({ priceMillicentsPerHour: SET + B })]);

    // A later change of the plan's price does not reach a deployed server.
    await api.call('PATCH', `/v1/admin/plans/${plan.id}`, { body: { setPriceMillicentsPerHour: 99_999 } });
    const H0 = hourStart(Date.now()) - 3 * HOUR_MS;
    const iso = (ms: number) => new Date(ms).toISOString();
    await setAttributes(keys.server(id, res.body.id), {
      createdAt: iso(H0),
      history: [{ at: iso(H0), status: 'active', priceCentsPerHour: 2, priceMillicentsPerHour: SET + B }],
    });
    await runPassInProcess(new Date(H0 + 2 * HOUR_MS + 5 * 60_000));
    const charges = (await ledgerOf(id))
      .filter((e) => e.type === 'charge')
      .map((e) => (e.reference as { lines: { millicents: number }[] }).lines.reduce((s, l) => s + l.millicents, 0));
    expect(charges).toEqual([SET + B, SET + B]);
    expect((await api.call('GET', '/v1/account', { token })).body.accruedMillicents).toBe((2 * (SET + B)) % 1000);
    await expectLedgerInvariant();
    await api.call('DELETE', `/v1/servers/${res.body.id}`, { token });
  });

  it('a set price is kept across add-on changes and a same-size resize; a custom resize leaves the plan', async () => {
    const SET = 1_111;
    const D = DEFAULT_SETTINGS.addons.databaseMillicentsPerHour;
    const plan = await createPlan({ name: 'Kept', setPriceMillicentsPerHour: SET });
    const { token, id } = await customer(api, 'plans-kept@example.com', { grantCents: 5_000 });
    const body = { name: 'kept price', eggId: 1, ...resources, addons: { backups: 1, databases: 0, ports: 0 }, planId: plan.id };
    const res = await api.call('POST', '/v1/servers', { token, body });
    expect(res.status, res.text).toBe(201);
    const serverId = res.body.id as string;
    expect(res.body.priceMillicentsPerHour).toBe(SET);
    // The admin's later change of the plan does not reach the server.
    await api.call('PATCH', `/v1/admin/plans/${plan.id}`, { body: { setPriceMillicentsPerHour: 99_999 } });

    const more = await api.call('PUT', `/v1/servers/${serverId}/addons`, { token, body: { backups: 2, databases: 1, ports: 0 } });
    expect(more.status, more.text).toBe(200);
    expect(more.body).toMatchObject({
      planId: plan.id,
      priceMillicentsPerHour: SET + B + D,
      priceCentsPerHour: Math.ceil((SET + B + D) / 1000),
    });
    const back = await api.call('PUT', `/v1/servers/${serverId}/addons`, { token, body: { backups: 1, databases: 0, ports: 0 } });
    expect(back.body).toMatchObject({ planId: plan.id, priceMillicentsPerHour: SET });
    // Below what the plan includes: refused as a deploy would be, nothing changed.
    const below = await api.call('PUT', `/v1/servers/${serverId}/addons`, { token, body: { backups: 0, databases: 0, ports: 0 } });
    expectEnvelope(below, 422, 'plan_mismatch');
    expect(below.body.error.details.issues).toEqual([{ field: 'body.backups', message: expect.stringContaining('at least 1') }]);

    const same = await api.call('PATCH', `/v1/servers/${serverId}`, { token, body: resources });
    expect(same.status, same.text).toBe(200);
    expect(same.body).toMatchObject({ planId: plan.id, priceMillicentsPerHour: SET });
    let stored = await getRaw(keys.server(id, serverId));
    expect(stored?.priceMillicentsPerHour).toBe(SET);

    // Another size is a custom size: off the plan, priced from its resources and every add-on bought.
    const bigger = { ramMb: 2048, cpuPercent: 100, diskMb: 2048 };
    const custom = await api.call('PATCH', `/v1/servers/${serverId}`, { token, body: bigger });
    expect(custom.status, custom.text).toBe(200);
    const fromResources = 1_120 + B; // (2048·400·100 + 100·300·1024 + 2048·10·100) / 102,400 = 1,120
    expect(custom.body.planId).toBeUndefined();
    expect(custom.body.priceMillicentsPerHour).toBe(fromResources);
    stored = await getRaw(keys.server(id, serverId));
    expect(stored?.planId).toBeUndefined();
    expect(stored?.planPrice).toBeUndefined();
    // Off the plan, its add-ons are priced as on any server.
    const after = await api.call('PUT', `/v1/servers/${serverId}/addons`, { token, body: { backups: 0, databases: 0, ports: 0 } });
    expect(after.body.priceMillicentsPerHour).toBe(1_120);
    expect((await api.call('GET', '/v1/account', { token })).body.burnMillicentsPerHour).toBe(1_120);
    await expectLedgerInvariant();
    await api.call('DELETE', `/v1/servers/${serverId}`, { token });
  });

  it('plans only: a deploy without planId is refused, one with a plan goes through', async () => {
    const plan = await createPlan({ name: 'Only', eggIds: [] });
    const { token } = await customer(api, 'plans-only@example.com', { grantCents: 5_000 });
    expect((await api.call('PUT', '/v1/admin/settings', { body: { customSizesAllowed: false } })).status).toBe(200);
    try {
      const custom = await api.call('POST', '/v1/servers', { token, body: { name: 'custom', eggId: 1, ...resources } });
      expectEnvelope(custom, 422, 'plan_mismatch');
      expect(custom.body.error.details.issues[0].field).toBe('body.planId');
      const onPlan = await api.call('POST', '/v1/servers', {
        token,
        body: { name: 'planned', eggId: 1, ...resources, addons: { backups: 1, databases: 0, ports: 0 }, planId: plan.id },
      });
      expect(onPlan.status, onPlan.text).toBe(201);
      expect(onPlan.body.priceMillicentsPerHour).toBe(DERIVED_MC + B);
      await api.call('DELETE', `/v1/servers/${onPlan.body.id}`, { token });
    } finally {
      await api.call('PUT', '/v1/admin/settings', { body: { customSizesAllowed: true } });
    }
  });
});

describe('regions and eggs in the catalog', () => {
  it('shows the admin-set display name, city and country of a region, and an egg picture and category', async () => {
    const { token } = await customer(api, 'plans-regions@example.com');
    const [region] = (await api.call('GET', '/v1/regions', { token })).body.data;
    expect(region.city).toBeNull();
    expect(region.displayName).toBeTruthy();
    const set = await api.call('PUT', `/v1/admin/regions/${region.region}`, {
      body: { displayName: 'Frankfurt 1', city: 'Frankfurt', country: 'DE' },
    });
    expect(set.status, set.text).toBe(200);
    expectEnvelope(
      await api.call('PUT', `/v1/admin/regions/${region.region}`, { body: { displayName: null, city: null, country: 'Germany' } }),
      400,
      'validation_failed',
    );
    const again = (await api.call('GET', '/v1/regions', { token })).body.data.find((r: { region: string }) => r.region === region.region);
    expect(again).toMatchObject({ displayName: 'Frankfurt 1', city: 'Frankfurt', country: 'DE' });

    const [egg] = (await api.call('GET', '/v1/eggs', { token })).body.data;
    expect(egg).toMatchObject({ pictureUrl: null, category: egg.nestName });
    const look = await api.call('PUT', `/v1/admin/eggs/${egg.instanceId}/${egg.eggId}`, {
      body: { pictureUrl: 'https://cdn.example.com/egg.png', category: 'Sandbox' },
    });
    expect(look.status, look.text).toBe(200);
    const shown = (await api.call('GET', '/v1/eggs', { token })).body.data.find(
      (e: { instanceId: string; eggId: number }) => e.instanceId === egg.instanceId && e.eggId === egg.eggId,
    );
    expect(shown).toMatchObject({ pictureUrl: 'https://cdn.example.com/egg.png', category: 'Sandbox' });

    // A look for what is not on sale: an unregistered panel, an egg the panel's copy does not hold, an id that is not digits.
    const body = { pictureUrl: 'https://cdn.example.com/egg.png', category: 'Sandbox' };
    expectEnvelope(await api.call('PUT', `/v1/admin/eggs/${crypto.randomUUID()}/${egg.eggId}`, { body }), 404, 'not_found');
    expectEnvelope(await api.call('PUT', `/v1/admin/eggs/${egg.instanceId}/999999`, { body }), 404, 'not_found');
    expectEnvelope(await api.call('PUT', `/v1/admin/eggs/${egg.instanceId}/%20${egg.eggId}`, { body }), 400, 'validation_failed');
  });
});
