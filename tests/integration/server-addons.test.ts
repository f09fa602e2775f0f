import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeleteCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { backupsOf } from '../../dev/panel-sim/backups.ts';
import { runPassInProcess } from '../../shared/billing/pass.ts';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { BILLING_SHARDS } from '../../shared/db/table.ts';
import { HOUR_MS, hourStart } from '../../shared/pricing/hours.ts';
import { featureLimitsOf, serverPriceMillicents } from '../../shared/pricing/index.ts';
import { DEFAULT_SETTINGS } from '../../shared/settings/index.ts';
import { customer } from '../helpers/customer.ts';
import { getRaw, setAttributes } from '../helpers/db.ts';
import { expectLedgerInvariant, ledgerOf } from '../helpers/money.ts';
import { panelCalls as panelCallsOf } from '../helpers/panel-requests.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * Add-ons (shared/servers/addons.ts) against DynamoDB Local and the panel simulator: a deploy with
 * add-ons writes the panel's feature limits (included + extras) and is priced resources + add-ons;
 * PUT /v1/servers/:id/addons changes both with two panel calls, checks credit and the maxima, refuses
 * lowering below what the server holds; two concurrent changes end consistent; and the hourly
 * billing pass charges the add-ons at their exact price, and stops after one is removed.
 *
 * Default prices: a 1024 MB / 100 % / 2048 MB server is 720 millicents an hour; a backup slot 70,
 * a database 140, a port 70.
 */
let api: TestApi;
let sim: PanelSim;

const small = { eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 };
const RESOURCES_MC = 720;
const { backupMillicentsPerHour: B, databaseMillicentsPerHour: D, portMillicentsPerHour: P } = DEFAULT_SETTINGS.addons;

const simServer = (identifier: string) => sim.state.serverByIdentifier(identifier)!;
const limitsOnPanel = (identifier: string) => {
  const s = simServer(identifier);
  return { databases: s.database_limit, allocations: s.allocation_limit, backups: s.backup_limit };
};

async function deploy(token: string, name: string, addons?: Record<string, number>) {
  const res = await api.call('POST', '/v1/servers', { token, body: { ...small, name, ...(addons ? { addons } : {}) } });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; identifier: string; priceMillicentsPerHour: number; addons: Record<string, number> };
}

beforeAll(async () => {
  api = await startTestApi({
    panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0, rateLimits: { application: 100_000, client: 100_000 } },
  });
  sim = api.panel!.sim;
});
afterAll(async () => api?.stop());

describe('deploy with add-ons', () => {
  it('the quote itemises resources and each add-on; the lines add up to the price', async () => {
    const { token } = await customer(api, 'addons-quote@example.com', { grantCents: 5_000 });
    const res = await api.call('POST', '/v1/servers/quote', {
      token,
      body: { ...small, name: 'quoted', addons: { backups: 2, databases: 1, ports: 0 } },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.lines).toEqual([
      { item: 'resources', quantity: 1, unitMillicentsPerHour: RESOURCES_MC, millicentsPerHour: RESOURCES_MC },
      { item: 'backups', quantity: 2, unitMillicentsPerHour: B, millicentsPerHour: 2 * B },
      { item: 'databases', quantity: 1, unitMillicentsPerHour: D, millicentsPerHour: D },
    ]);
    expect(res.body.priceMillicentsPerHour).toBe(RESOURCES_MC + 2 * B + D);
    expect(res.body.addons).toEqual({ backups: 2, databases: 1, ports: 0 });
  });

  it('the pricing endpoint lists each add-on: included, maximum, hourly and monthly price', async () => {
    const res = await api.call('GET', '/v1/pricing');
    expect(res.body.addons).toEqual([
      { addon: 'backups', included: 3, max: 20, millicentsPerUnitHour: B, millicentsPerUnitMonth: B * 730 },
      { addon: 'databases', included: 0, max: 10, millicentsPerUnitHour: D, millicentsPerUnitMonth: D * 730 },
      { addon: 'ports', included: 1, max: 10, millicentsPerUnitHour: P, millicentsPerUnitMonth: P * 730 },
    ]);
  });

  it('the server is priced resources + add-ons and the panel limits are included + extras', async () => {
    const { token, id } = await customer(api, 'addons-deploy@example.com', { grantCents: 5_000 });
    const server = await deploy(token, 'with extras', { backups: 2, databases: 1, ports: 1 });
    expect(server.priceMillicentsPerHour).toBe(RESOURCES_MC + 2 * B + D + P);
    expect(server.addons).toEqual({ backups: 2, databases: 1, ports: 1 });
    expect(limitsOnPanel(server.identifier)).toEqual({ databases: 1, allocations: 2, backups: 5 });
    expect((await api.call('GET', '/v1/account', { token })).body.burnMillicentsPerHour).toBe(RESOURCES_MC + 2 * B + D + P);
    expect((await getRaw(keys.server(id, server.id)))!.addons).toEqual({ backups: 2, databases: 1, ports: 1 });
  });

  it('above the maximum: 422 limit_exceeded naming the field, nothing deployed', async () => {
    const { token } = await customer(api, 'addons-max@example.com', { grantCents: 5_000 });
    const res = await api.call('POST', '/v1/servers', {
      token,
      body: { ...small, name: 'too many', addons: { backups: 0, databases: 11, ports: 0 } },
    });
    expectEnvelope(res, 422, 'limit_exceeded');
    expect(res.body.error.details.issues).toEqual([{ field: 'body.addons.databases', message: 'must be at most 10' }]);
    expect((await api.call('GET', '/v1/servers', { token })).body.data).toEqual([]);
  });

  it('a deploy body without add-ons is as before: no extras, limits as the settings include', async () => {
    const { token } = await customer(api, 'addons-none@example.com', { grantCents: 5_000 });
    const server = await deploy(token, 'plain');
    expect(server.priceMillicentsPerHour).toBe(RESOURCES_MC);
    expect(server.addons).toEqual({ backups: 0, databases: 0, ports: 0 });
    expect(limitsOnPanel(server.identifier)).toEqual({ databases: 0, allocations: 1, backups: 3 });
  });
});

describe('PUT /v1/servers/:id/addons', () => {
  it('changes price, history and the panel limits with two panel calls (the server with its usage, one build PATCH)', async () => {
    const { token, id } = await customer(api, 'addons-put@example.com', { grantCents: 5_000 });
    const server = await deploy(token, 'changing');
    const panelId = simServer(server.identifier).id;
    const { result: res, calls } = await panelCallsOf(sim, () =>
      api.call('PUT', `/v1/servers/${server.id}/addons`, { token, body: { backups: 1, databases: 2, ports: 3 } }),
    );
    expect(res.status, res.text).toBe(200);
    expect(calls).toEqual({ [`GET /api/application/servers/${panelId}`]: 1, [`PATCH /api/application/servers/${panelId}/build`]: 1 });
    const price = RESOURCES_MC + B + 2 * D + 3 * P;
    expect(res.body).toMatchObject({ addons: { backups: 1, databases: 2, ports: 3 }, priceMillicentsPerHour: price, priceCentsPerHour: 2 });
    expect(limitsOnPanel(server.identifier)).toEqual({ databases: 2, allocations: 4, backups: 4 });
    // The resources on the panel are untouched by the build PATCH.
    expect(simServer(server.identifier)).toMatchObject({ memory: 1024, cpu: 100, disk: 2048 });
    const record = (await getRaw(keys.server(id, server.id)))!;
    expect((record.history as { priceMillicentsPerHour: number }[]).at(-1)?.priceMillicentsPerHour).toBe(price);
    expect((await api.call('GET', '/v1/account', { token })).body.burnMillicentsPerHour).toBe(price);
    // The same add-ons again: no panel call, nothing new in the history.
    const again = await panelCallsOf(sim, () =>
      api.call('PUT', `/v1/servers/${server.id}/addons`, { token, body: { backups: 1, databases: 2, ports: 3 } }),
    );
    expect(again.result.status).toBe(200);
    expect(again.calls).toEqual({});
    expect(((await getRaw(keys.server(id, server.id)))!.history as unknown[]).length).toBe((record.history as unknown[]).length);
    const log = await api.call('GET', '/v1/account/logs?limit=10', { token });
    expect(log.body.data.find((e: { action: string }) => e.action === 'servers.addons')).toMatchObject({
      target: `server:${server.id}`,
      details: { addons: { backups: 1, databases: 2, ports: 3 }, priceMillicentsPerHour: price },
    });
  });

  it('a resize keeps the add-ons in the price and the limits', async () => {
    const { token } = await customer(api, 'addons-resize@example.com', { grantCents: 5_000 });
    const server = await deploy(token, 'resized', { backups: 0, databases: 1, ports: 1 });
    const res = await api.call('PATCH', `/v1/servers/${server.id}`, { token, body: { ramMb: 4096, cpuPercent: 200, diskMb: 20480 } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.priceMillicentsPerHour).toBe(2400 + D + P);
    expect(limitsOnPanel(server.identifier)).toEqual({ databases: 1, allocations: 2, backups: 3 });
  });

  it('without the 24-hour runway for the higher price: 402, nothing changed on the panel or the record', async () => {
    // The trial credit (500 ¢) covers 24 h of the server (173 ¢), not of 10 ports at 100,000 mc an hour each (24,000 ¢ more).
    const { token, id } = await customer(api, 'addons-credit@example.com');
    const server = await deploy(token, 'poor');
    await api.call('PUT', '/v1/admin/settings', { body: { addons: { portMillicentsPerHour: 100_000 } } });
    try {
      const res = await api.call('PUT', `/v1/servers/${server.id}/addons`, { token, body: { backups: 0, databases: 0, ports: 10 } });
      expectEnvelope(res, 402, 'insufficient_credit');
      expect(limitsOnPanel(server.identifier)).toEqual({ databases: 0, allocations: 1, backups: 3 });
      expect((await getRaw(keys.server(id, server.id)))!.priceMillicentsPerHour).toBe(RESOURCES_MC);
    } finally {
      await api.call('PUT', '/v1/admin/settings', { body: { addons: { portMillicentsPerHour: P } } });
    }
  });

  it('a monthly budget bounds add-ons as it bounds resources: 422 limit_exceeded, nothing changed', async () => {
    const { token, id } = await customer(api, 'addons-budget@example.com', { grantCents: 5_000 });
    const server = await deploy(token, 'budgeted', { backups: 0, databases: 1, ports: 0 });
    const budget = (await api.call('GET', '/v1/account/budget', { token })).body;
    // Room for the server as it is to the end of the month, not for ten databases more.
    const set = await api.call('PUT', '/v1/account/budget', {
      token,
      body: { monthlyCapCents: budget.projectedCents + 1, action: 'refuse' },
    });
    expect(set.status, set.text).toBe(200);
    const res = await api.call('PUT', `/v1/servers/${server.id}/addons`, { token, body: { backups: 0, databases: 10, ports: 0 } });
    expectEnvelope(res, 422, 'limit_exceeded');
    expect(limitsOnPanel(server.identifier).databases).toBe(1);
    expect((await getRaw(keys.server(id, server.id)))!.priceMillicentsPerHour).toBe(RESOURCES_MC + D);
    // Removing never needs room in the budget.
    const cheaper = await api.call('PUT', `/v1/servers/${server.id}/addons`, { token, body: { backups: 0, databases: 0, ports: 0 } });
    expect(cheaper.status, cheaper.text).toBe(200);
    expect(cheaper.body.priceMillicentsPerHour).toBe(RESOURCES_MC);
  });

  it('above the maxima: 422 naming the field; bad bodies 400', async () => {
    const { token } = await customer(api, 'addons-bad@example.com', { grantCents: 5_000 });
    const server = await deploy(token, 'bounded');
    const over = await api.call('PUT', `/v1/servers/${server.id}/addons`, { token, body: { backups: 21, databases: 0, ports: 0 } });
    expectEnvelope(over, 422, 'limit_exceeded');
    expect(over.body.error.details.issues).toEqual([{ field: 'body.backups', message: 'must be at most 20' }]);
    for (const body of [
      { backups: 1 },
      { backups: -1, databases: 0, ports: 0 },
      { backups: 1.5, databases: 0, ports: 0 },
      { backups: 0, databases: 0, ports: 0, x: 1 },
    ]) {
      expectEnvelope(await api.call('PUT', `/v1/servers/${server.id}/addons`, { token, body }), 400, 'validation_failed');
    }
    expect(limitsOnPanel(server.identifier)).toEqual({ databases: 0, allocations: 1, backups: 3 });
  });

  it("another account's server: 404", async () => {
    const { token } = await customer(api, 'addons-owner@example.com', { grantCents: 5_000 });
    const server = await deploy(token, 'not yours');
    const other = await customer(api, 'addons-other@example.com', { grantCents: 5_000 });
    expectEnvelope(
      await api.call('PUT', `/v1/servers/${server.id}/addons`, { token: other.token, body: { backups: 1, databases: 0, ports: 0 } }),
      404,
      'not_found',
    );
  });

  it('fewer ports than the server holds: 409 naming the count, nothing changed', async () => {
    const { token } = await customer(api, 'addons-ports@example.com', { grantCents: 5_000 });
    const server = await deploy(token, 'two ports', { backups: 0, databases: 0, ports: 1 });
    // A second allocation assigned on the panel (as the ports part or an operator would add it).
    const s = simServer(server.identifier);
    const free = [...sim.state.allocations.values()].find((a) => a.node_id === s.node_id && a.server_id === null)!;
    free.server_id = s.id;
    const res = await api.call('PUT', `/v1/servers/${server.id}/addons`, { token, body: { backups: 0, databases: 0, ports: 0 } });
    expectEnvelope(res, 409, 'conflict');
    expect(res.body.error.message).toContain('has 2 ports');
    expect(res.body.error.details).toEqual({ field: 'ports', inUse: 2, limit: 1 });
    expect(limitsOnPanel(server.identifier).allocations).toBe(2);
  });

  it('fewer backup slots than the server has backups: 409 naming the count (two panel calls to find out)', async () => {
    const { token } = await customer(api, 'addons-backups@example.com', { grantCents: 5_000 });
    await api.call('PUT', '/v1/admin/settings', { body: { backupsPerServer: 0 } });
    try {
      const server = await deploy(token, 'backed up', { backups: 2, databases: 0, ports: 0 });
      await until(async () => (await api.call('GET', `/v1/servers/${server.id}`, { token })).body.live?.installStatus === 'installed');
      for (const name of ['one', 'two']) {
        const made = await api.call('POST', `/v1/servers/${server.id}/backups`, { token, body: { name } });
        expect(made.status, made.text).toBe(201);
      }
      backupsOf(sim.wings).end(simServer(server.identifier));
      const { result: res, calls } = await panelCallsOf(sim, () =>
        api.call('PUT', `/v1/servers/${server.id}/addons`, { token, body: { backups: 1, databases: 0, ports: 0 } }),
      );
      expectEnvelope(res, 409, 'conflict');
      expect(res.body.error.message).toContain('has 2 backups');
      expect(Object.values(calls).reduce((a, b) => a + b, 0)).toBe(2);
      expect(limitsOnPanel(server.identifier).backups).toBe(2);
      // Keeping two slots is fine.
      const kept = await api.call('PUT', `/v1/servers/${server.id}/addons`, { token, body: { backups: 2, databases: 0, ports: 1 } });
      expect(kept.status, kept.text).toBe(200);
    } finally {
      await api.call('PUT', '/v1/admin/settings', { body: { backupsPerServer: DEFAULT_SETTINGS.backupsPerServer } });
    }
  });

  it('two concurrent changes on one server end with the panel limits and one price of the same add-ons', async () => {
    const { token, id } = await customer(api, 'addons-race@example.com', { grantCents: 5_000 });
    const server = await deploy(token, 'raced');
    const settings = (await api.call('GET', '/v1/admin/settings')).body;
    for (const [a, b] of [
      [
        { backups: 1, databases: 0, ports: 2 },
        { backups: 4, databases: 3, ports: 0 },
      ],
      [
        { backups: 0, databases: 1, ports: 1 },
        { backups: 2, databases: 0, ports: 3 },
      ],
      [
        { backups: 5, databases: 5, ports: 5 },
        { backups: 0, databases: 0, ports: 0 },
      ],
    ]) {
      const results = await Promise.all([a, b].map((body) => api.call('PUT', `/v1/servers/${server.id}/addons`, { token, body })));
      for (const r of results) expect([200, 409], r.text).toContain(r.status);
      expect(results.some((r) => r.status === 200)).toBe(true);
      const record = (await getRaw(keys.server(id, server.id)))!;
      const addons = record.addons as { backups: number; databases: number; ports: number };
      expect([a, b]).toContainEqual(addons);
      expect(limitsOnPanel(server.identifier)).toEqual(featureLimitsOf(addons, settings));
      const price = serverPriceMillicents(small, addons, settings);
      expect(record.priceMillicentsPerHour).toBe(price);
      expect((record.history as { priceMillicentsPerHour: number }[]).at(-1)?.priceMillicentsPerHour).toBe(price);
      expect((await api.call('GET', '/v1/account', { token })).body.burnMillicentsPerHour).toBe(price);
    }
  });
});

describe('billing', () => {
  const iso = (ms: number) => new Date(ms).toISOString();
  const pass = (ms: number) => runPassInProcess(new Date(ms));
  const chargedMillicents = async (accountId: string) =>
    (await ledgerOf(accountId))
      .filter((e) => e.type === 'charge')
      .map((e) => {
        const ref = e.reference as { hour: string; lines: { millicents: number }[] };
        return { hour: ref.hour, cents: -Number(e.amountCents), millicents: ref.lines.reduce((s, l) => s + l.millicents, 0) };
      })
      .sort((x, y) => x.hour.localeCompare(y.hour));

  it('the next pass charges the add-ons at their hourly price; after one is removed, the hour after the change no longer pays it', async () => {
    await db().send(new DeleteCommand({ TableName: tableName(), Key: keys.billingWatermark() }));
    const { token, id } = await customer(api, 'addons-billing@example.com', { grantCents: 5_000 });
    const H0 = hourStart(Date.now()) - 3 * HOUR_MS;
    const server = await deploy(token, 'billed extras', { backups: 2, databases: 1, ports: 1 });
    const withAll = RESOURCES_MC + 2 * B + D + P; // 1,070 millicents
    // Its life moved into the past: deployed at the start of the hour three hours ago.
    await setAttributes(keys.server(id, server.id), {
      createdAt: iso(H0),
      history: [{ at: iso(H0), status: 'active', priceCentsPerHour: 2, priceMillicentsPerHour: withAll }],
    });
    await pass(H0 + 2 * HOUR_MS + 5 * 60_000);
    expect(await chargedMillicents(id)).toEqual([
      { hour: iso(H0), cents: 1, millicents: withAll },
      { hour: iso(H0 + HOUR_MS), cents: 1, millicents: withAll },
    ]);
    // Remove the database and both backup slots now: the current hour pays the higher price it had, the next one the lower.
    const removed = await api.call('PUT', `/v1/servers/${server.id}/addons`, { token, body: { backups: 0, databases: 0, ports: 1 } });
    expect(removed.status, removed.text).toBe(200);
    expect(removed.body.priceMillicentsPerHour).toBe(RESOURCES_MC + P);
    const now = hourStart(Date.now());
    await pass(now + 2 * HOUR_MS + 5 * 60_000);
    const all = await chargedMillicents(id);
    expect(all.find((e) => e.hour === iso(now))?.millicents).toBe(withAll);
    expect(all.find((e) => e.hour === iso(now + HOUR_MS))?.millicents).toBe(RESOURCES_MC + P);
    // Every millicent charged is the exact prices of the hours, paid in whole cents with the rest carried.
    const totalMc = all.reduce((s, e) => s + e.millicents, 0);
    expect(all.reduce((s, e) => s + e.cents, 0)).toBe(Math.floor(totalMc / 1000));
    expect((await api.call('GET', '/v1/account', { token })).body.accruedMillicents).toBe(totalMc % 1000);
    await expectLedgerInvariant();
    // Leave nothing billable for other files' passes.
    for (let shard = 0; shard < BILLING_SHARDS; shard++) {
      const out = await db().send(
        new QueryCommand({
          TableName: tableName(),
          IndexName: 'GSI2',
          KeyConditionExpression: 'GSI2PK = :pk',
          ExpressionAttributeValues: { ':pk': keys.billableShard(shard) },
        }),
      );
      for (const item of out.Items ?? []) {
        await db().send(
          new UpdateCommand({ TableName: tableName(), Key: { PK: item.PK, SK: item.SK }, UpdateExpression: 'REMOVE GSI2PK, GSI2SK' }),
        );
      }
    }
  }, 120_000);
});
