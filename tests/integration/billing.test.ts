import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DeleteCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { BILLING_SHARDS } from '../../shared/db/table.ts';
import type { SQSEvent } from 'aws-lambda';
import { startTestApi, expectEnvelope, type TestApi } from '../helpers/stack.ts';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { getRaw, queryPartition, setAttributes } from '../helpers/db.ts';
import { expectLedgerInvariant, ledgerOf } from '../helpers/money.ts';
import { keys } from '../../shared/db/keys.ts';
import { db, tableName } from '../../shared/db/client.ts';
import { HOUR_MS, hourStart } from '../../shared/pricing/hours.ts';
import { hoursLeftInMonth } from '../../shared/budgets/index.ts';
import { planPass, readWatermark, runPassInProcess } from '../../shared/billing/pass.ts';
import { openPassRecord } from '../../shared/billing/fanout.ts';
import { worker } from '../../functions/billing-pass/handler.ts';
import { countDynamoCalls } from '../../bench/harness.ts';
import { customer } from '../helpers/customer.ts';

/**
 * Hourly billing against DynamoDB Local and the panel simulator. Time is moved by writing a
 * server's stored history into the past (as if it had been created then) and running the pass
 * `at` chosen instants, exactly as `POST /dev/billing/run {"at"}` does.
 */
let api: TestApi;
let sim: PanelSim;
beforeAll(async () => {
  // This file tests its own rules, not the panel's call budget (tests/integration/panel-fairness*.test.ts):
  // a burst of 20 deploys by one account would otherwise meet that account's share of the panel's calls.
  api = await startTestApi({
    panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0, rateLimits: { application: 100_000, client: 100_000 } },
  });
  sim = api.panel!.sim;
});
afterAll(async () => api?.stop());

// Each scenario starts from an empty watermark, six hours back, and leaves nothing billable behind,
// so scenarios never bill each other's servers (the service would drop them itself once billed).
let H0 = 0;
beforeEach(async () => {
  await db().send(new DeleteCommand({ TableName: tableName(), Key: keys.billingWatermark() }));
  H0 = hourStart(Date.now()) - 6 * HOUR_MS;
});
afterEach(async () => {
  await expectLedgerInvariant();
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
});

const t = (hours: number, minutes = 0) => H0 + hours * HOUR_MS + minutes * 60_000;
const iso = (ms: number) => new Date(ms).toISOString();
const pass = (ms: number) => runPassInProcess(new Date(ms));

const small = { name: 'billed server', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 }; // 1 cent an hour
const medium = { ramMb: 4096, cpuPercent: 200, diskMb: 20480 }; // 3 cents an hour

/** Deploys through the API, then moves the server's life into the past: created at `createdMs`. */
async function deployAt(token: string, accountId: string, createdMs: number, body = small) {
  const server = (await api.call('POST', '/v1/servers', { token, body })).body;
  await setAttributes(keys.server(accountId, server.id), {
    createdAt: iso(createdMs),
    history: [{ at: iso(createdMs), status: 'active', priceCentsPerHour: server.priceCentsPerHour }],
  });
  return server as { id: string; identifier: string; priceCentsPerHour: number };
}

/** As deployAt, with the exact price in the history (servers recorded since exact pricing). */
async function deployExactAt(token: string, accountId: string, createdMs: number, body: Record<string, unknown>) {
  const server = (await api.call('POST', '/v1/servers', { token, body: { ...small, ...body } })).body;
  await setAttributes(keys.server(accountId, server.id), {
    createdAt: iso(createdMs),
    history: [
      {
        at: iso(createdMs),
        status: 'active',
        priceCentsPerHour: server.priceCentsPerHour,
        priceMillicentsPerHour: server.priceMillicentsPerHour,
      },
    ],
  });
  return server as { id: string; priceCentsPerHour: number; priceMillicentsPerHour: number };
}

async function chargeEntries(accountId: string) {
  return (await ledgerOf(accountId))
    .filter((e) => e.type === 'charge')
    .map((e) => {
      const ref = e.reference as { hour: string; lines: { millicents: number }[]; accruedAfterMillicents: number };
      return {
        hour: ref.hour,
        cents: -Number(e.amountCents),
        millicents: ref.lines.reduce((s, l) => s + l.millicents, 0),
        carried: ref.accruedAfterMillicents,
      };
    })
    .sort((a, b) => a.hour.localeCompare(b.hour));
}

async function appendHistory(
  accountId: string,
  serverId: string,
  event: { at: number; status: string; priceCentsPerHour: number },
  extra: Record<string, unknown> = {},
) {
  const item = await getRaw(keys.server(accountId, serverId));
  await setAttributes(keys.server(accountId, serverId), {
    history: [...(item!.history as unknown[]), { ...event, at: iso(event.at) }],
    ...extra,
  });
}

const charges = async (accountId: string) =>
  (await ledgerOf(accountId))
    .filter((e) => e.type === 'charge')
    .map((e) => ({ hour: (e.reference as { hour: string }).hour, cents: -Number(e.amountCents) }));

describe('exact prices', () => {
  it('a 0.18 ¢ an hour server billed for 1,000 hours has paid 180 cents: never more than its exact prices, never a cent behind', async () => {
    const { token, id } = await customer(api, 'exact@example.com');
    const start = hourStart(Date.now()) - 1000 * HOUR_MS;
    const server = await deployExactAt(token, id, start, { ramMb: 256, cpuPercent: 25, diskMb: 512 });
    expect(server).toMatchObject({ priceMillicentsPerHour: 180, priceCentsPerHour: 1 });
    await pass(start + 1000 * HOUR_MS + 5 * 60_000);
    const entries = await chargeEntries(id);
    expect(entries.length).toBe(1000);
    let paid = 0;
    entries.forEach((e, i) => {
      paid += e.cents;
      const exact = 180 * (i + 1);
      // After every hour: whole cents of what is owed so far, the rest carried.
      expect(paid).toBe(Math.floor(exact / 1000));
      expect(e.carried).toBe(exact % 1000);
    });
    expect(paid).toBe(180);
    expect((await api.call('GET', '/v1/account', { token })).body).toMatchObject({ accruedMillicents: 0, burnMillicentsPerHour: 180 });
    await expectLedgerInvariant();
  }, 120_000);

  it('with a monthly cap of 500 hours, a server running a whole month pays exactly 500 hours of its price', async () => {
    const { token, id } = await customer(api, 'monthcap@example.com');
    await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: 10_000, note: 'test funds' } });
    await api.call('PUT', '/v1/admin/settings', { body: { monthlyCapHours: 500 } });
    try {
      const now = new Date();
      const lastMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1);
      const thisMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
      await deployExactAt(token, id, lastMonth, medium); // 2,400 millicents an hour
      await pass(hourStart(Date.now()) + 5 * 60_000);
      const entries = await chargeEntries(id);
      const inLastMonth = entries.filter((e) => Date.parse(e.hour) < thisMonth);
      expect(inLastMonth.length).toBe((thisMonth - lastMonth) / HOUR_MS);
      expect(inLastMonth.reduce((s, e) => s + e.millicents, 0)).toBe(500 * 2400);
      expect(inLastMonth.reduce((s, e) => s + e.cents, 0)).toBe(1200);
      const inThisMonth = entries.filter((e) => Date.parse(e.hour) >= thisMonth);
      expect(inThisMonth.reduce((s, e) => s + e.millicents, 0)).toBe(Math.min(inThisMonth.length, 500) * 2400);
    } finally {
      await api.call('PUT', '/v1/admin/settings', { body: { monthlyCapHours: null } });
    }
    await expectLedgerInvariant();
  }, 120_000);
});

describe('hourly charges', () => {
  it('a server created mid-hour pays that hour, once, at the pass after the hour', async () => {
    const { token, id } = await customer(api, 'midhour@example.com');
    await deployAt(token, id, t(0, 20));
    await pass(t(0, 59)); // the hour has not ended: nothing yet
    expect(await charges(id)).toEqual([]);
    const summary = await pass(t(1, 5));
    expect(await charges(id)).toEqual([{ hour: iso(t(0)), cents: 1 }]);
    expect(summary).toMatchObject({ throughHour: iso(t(0)), errors: 0 });
    await pass(t(1, 5)); // re-run: nothing more
    await pass(t(1, 50));
    expect(await charges(id)).toEqual([{ hour: iso(t(0)), cents: 1 }]);
    expect((await getRaw(keys.account(id)))!.balanceCents).toBe(499);
  });

  it('waits for the grace period after the hour before billing it', async () => {
    const { token, id } = await customer(api, 'grace@example.com');
    await deployAt(token, id, t(0, 10));
    await pass(t(1, 1)); // one minute after the hour: inside the grace period
    expect(await charges(id)).toEqual([]);
    await pass(t(1, 3));
    expect(await charges(id)).toHaveLength(1);
  });

  it('a server resized mid-hour pays the highest price it had in that hour', async () => {
    const { token, id } = await customer(api, 'resize@example.com');
    const server = await deployAt(token, id, t(0, 0));
    await appendHistory(id, server.id, { at: t(1, 30), status: 'active', priceCentsPerHour: 3 });
    await appendHistory(id, server.id, { at: t(2, 40), status: 'active', priceCentsPerHour: 2 }); // down again
    await pass(t(4, 5));
    expect(await charges(id)).toEqual([
      { hour: iso(t(0)), cents: 1 },
      { hour: iso(t(1)), cents: 3 },
      { hour: iso(t(2)), cents: 3 },
      { hour: iso(t(3)), cents: 2 },
    ]);
  });

  it('a resize through the API is billed at the new price from its hour on', async () => {
    const { token, id } = await customer(api, 'apiresize@example.com');
    const server = await deployAt(token, id, t(0, 0));
    await pass(t(1, 5));
    const resized = await api.call('PATCH', `/v1/servers/${server.id}`, { token, body: medium });
    expect(resized.body.priceCentsPerHour).toBe(3);
    // The resize happened "now", later than the backdated hours; bill up to the current hour.
    const now = Date.now();
    await pass(hourStart(now) + HOUR_MS + 3 * 60_000);
    const all = await charges(id);
    // The resized hour is charged its exact price, 2,400 millicents: 2 cents now, 400 carried to the next hour.
    expect(all.at(-1)).toEqual({ hour: iso(hourStart(now)), cents: 2 });
    expect(all.at(-2)?.cents).toBe(1);
    expect((await api.call('GET', '/v1/account', { token })).body.accruedMillicents).toBe(400);
  });

  it('a server deleted mid-hour pays the hour of deletion and never after', async () => {
    const { token, id } = await customer(api, 'deleted@example.com');
    const server = await deployAt(token, id, t(0, 0));
    await appendHistory(
      id,
      server.id,
      { at: t(2, 20), status: 'deleted', priceCentsPerHour: 1 },
      { status: 'deleted', deletedAt: iso(t(2, 20)) },
    );
    await pass(t(2, 10));
    expect((await charges(id)).map((c) => c.hour)).toEqual([iso(t(0)), iso(t(1))]);
    // Still in the billable index: the hour of deletion is not billed yet.
    expect((await getRaw(keys.server(id, server.id)))!.GSI2PK).toBeDefined();
    await pass(t(3, 5));
    await pass(t(6, 5));
    expect((await charges(id)).map((c) => c.hour)).toEqual([iso(t(0)), iso(t(1)), iso(t(2))]);
    // Fully billed: dropped from the sparse index, so later passes never read it again.
    expect((await getRaw(keys.server(id, server.id)))!.GSI2PK).toBeUndefined();
  });

  it('missed passes are caught up by the next one, hour by hour', async () => {
    const { token, id } = await customer(api, 'missed@example.com');
    await deployAt(token, id, t(0, 45), { ...small, ...medium });
    await pass(t(1, 5));
    // Passes at 2:05, 3:05 and 4:05 never ran.
    const summary = await pass(t(5, 5));
    expect((await charges(id)).map((c) => c.hour)).toEqual([0, 1, 2, 3, 4].map((h) => iso(t(h))));
    expect((await charges(id)).every((c) => c.cents === 3)).toBe(true);
    expect(summary.serverHoursCharged).toBeGreaterThanOrEqual(4);
    expect(await readWatermark()).toBe(t(4));
  });

  it('two passes at the same time charge once, and their summaries add up exactly', async () => {
    const { token, id } = await customer(api, 'concurrent@example.com');
    await deployAt(token, id, t(0, 5));
    await deployAt(token, id, t(0, 15), { ...small, ...medium });
    // More accounts, so several shards work at once.
    for (let i = 0; i < 5; i++) {
      const other = await customer(api, `concurrent${i}@example.com`);
      await deployAt(other.token, other.id, t(0, 30));
    }
    const [a, b] = await Promise.all([pass(t(3, 5)), pass(t(3, 5))]);
    expect(a.errors + b.errors).toBe(0);
    // 2 + 5 servers, 3 hours each: 21 server-hours and 3 × (4 + 5) cents, split between the passes.
    expect(a.serverHoursCharged + b.serverHoursCharged).toBe(21);
    expect(a.cents + b.cents).toBe(27);
    const mine = await charges(id);
    expect(mine.map((c) => c.hour)).toEqual([iso(t(0)), iso(t(1)), iso(t(2))]);
    expect(mine.every((c) => c.cents === 4)).toBe(true); // one entry per hour: 1 + 3
    expect((await getRaw(keys.account(id)))!.balanceCents).toBe(500 - 12);
  });

  it('keeps a month-spend counter the budget reads', async () => {
    const { token, id } = await customer(api, 'spend@example.com');
    await deployAt(token, id, t(0, 5), { ...small, ...medium });
    await pass(t(4, 5));
    const months = new Set([0, 1, 2, 3].map((h) => iso(t(h)).slice(0, 7)));
    let counted = 0;
    for (const month of months) counted += Number((await getRaw(keys.monthSpend(id, month)))?.cents ?? 0);
    expect(counted).toBe(12);
  });

  it('reads only the sparse billable index: no Scan, a bounded number of reads per server', async () => {
    const { token, id } = await customer(api, 'reads@example.com');
    for (let i = 0; i < 3; i++) await deployAt(token, id, t(0, 5 + i));
    const counter = countDynamoCalls();
    counter.reset();
    await pass(t(1, 5));
    const calls = counter.calls();
    expect(calls).not.toContain('ScanCommand');
    expect(calls.filter((c) => c === 'QueryCommand').length).toBeGreaterThanOrEqual(16); // one per shard at least
  });
});

describe('suspension', () => {
  it('at or below zero the servers are suspended on the panel and stop accruing; a top-up unsuspends them', async () => {
    const { token, id } = await customer(api, 'broke@example.com');
    const server = await deployAt(token, id, t(0, 0), { ...small, ...medium }); // 3 cents an hour
    // Leave 4 cents: two hours of charges take the balance to -2.
    const deducted = await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: -496, note: 'test: leave 4 cents' } });
    expect(deducted.status).toBe(200);
    expect(deducted.body.balanceCents).toBe(4);
    const summary = await pass(t(2, 5));
    expect(summary.suspended).toBeGreaterThanOrEqual(1);
    expect((await getRaw(keys.account(id)))!.balanceCents).toBe(-2);
    expect(sim.server(server.identifier)!.status).toBe('suspended');
    const view = await api.call('GET', `/v1/servers/${server.id}`, { token });
    expect(view.body).toMatchObject({
      status: 'suspended',
      suspendedAt: expect.any(String),
      suspendedReason: 'balance',
      live: { suspendedOnPanel: true },
    });
    const logged = (await api.call('GET', '/v1/account/logs?limit=100', { token })).body.data.find(
      (e: { action: string }) => e.action === 'servers.suspend',
    );
    expect(logged).toMatchObject({ target: `server:${server.id}`, details: { reason: 'balance' } });
    expect((await getRaw(keys.account(id)))!.burnCentsPerHour).toBe(0);
    expectEnvelope(await api.call('POST', `/v1/servers/${server.id}/power`, { token, body: { signal: 'start' } }), 409, 'conflict');
    const logs = (await api.call('GET', '/v1/account/logs?limit=50', { token })).body.data.map((e: { action: string }) => e.action);
    expect(logs).toContain('servers.suspend');

    // Suspended servers accrue nothing: later hours are not charged.
    const suspendedAt = Date.parse(view.body.suspendedAt);
    await pass(hourStart(suspendedAt) + 3 * HOUR_MS + 5 * 60_000);
    const afterSuspension = (await charges(id)).filter((c) => Date.parse(c.hour) > hourStart(suspendedAt));
    expect(afterSuspension).toEqual([]);

    // A grant that brings the balance above zero unsuspends at once, on the panel too.
    const granted = await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: 1000, note: 'goodwill' } });
    expect(granted.body.balanceCents).toBeGreaterThan(0);
    expect(sim.server(server.identifier)!.status).not.toBe('suspended');
    expect((await api.call('GET', `/v1/servers/${server.id}`, { token })).body).toMatchObject({
      status: 'active',
      suspendedAt: null,
      suspendedReason: null,
    });
    expect((await getRaw(keys.account(id)))!.burnCentsPerHour).toBe(3);
  });

  it('a panel that refuses to unsuspend is retried by the next pass until it confirms', async () => {
    const { token, id } = await customer(api, 'retry@example.com');
    const server = await deployAt(token, id, t(0, 0), { ...small, ...medium });
    await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: -499, note: 'leave 1 cent' } });
    await pass(t(1, 5));
    expect(sim.server(server.identifier)!.status).toBe('suspended');
    sim.faults.add({ method: 'POST', path: /\/unsuspend$/, count: 10, effect: { kind: 'status', status: 503 } });
    await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: 500, note: 'paid' } });
    expect((await api.call('GET', `/v1/servers/${server.id}`, { token })).body.status).toBe('suspended');
    const failing = await pass(t(1, 10));
    expect(failing.panelErrors).toBeGreaterThanOrEqual(1);
    sim.faults.clear();
    const ok = await pass(t(1, 15));
    expect(ok.unsuspended).toBeGreaterThanOrEqual(1);
    expect(sim.server(server.identifier)!.status).not.toBe('suspended');
  });

  it('warns once when the runway drops under 24 hours', async () => {
    const { token, id } = await customer(api, 'lowbalance@example.com');
    await deployAt(token, id, t(0, 0), { ...small, ...medium }); // 3 cents an hour: 72 for 24 h
    await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: -440, note: 'leave 60' } });
    const first = await pass(t(1, 5));
    expect(first.lowBalanceWarnings).toBeGreaterThanOrEqual(1);
    await pass(t(2, 5));
    const warnings = (await api.call('GET', '/v1/account/logs?limit=50', { token })).body.data.filter(
      (e: { action: string }) => e.action === 'billing.low_balance',
    );
    expect(warnings).toHaveLength(1);
    expect(warnings[0].details).toMatchObject({ burnCentsPerHour: 3 });
  });

  it('suspended servers are deleted only after the retention period the operator sets', async () => {
    const { token, id } = await customer(api, 'retention@example.com');
    const server = await deployAt(token, id, t(0, 0));
    await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: -500, note: 'empty' } });
    await pass(t(1, 5));
    expect((await api.call('GET', `/v1/servers/${server.id}`, { token })).body.status).toBe('suspended');
    await setAttributes(keys.server(id, server.id), { suspendedAt: iso(Date.now() - 3 * 24 * HOUR_MS) });
    await pass(t(1, 10));
    expect((await api.call('GET', `/v1/servers/${server.id}`, { token })).body.status).toBe('suspended'); // no retention set
    await api.call('PUT', '/v1/admin/settings', { body: { suspendedRetentionDays: 2 } });
    try {
      const summary = await pass(t(1, 15));
      expect(summary.deletedByRetention).toBe(1);
      expect((await api.call('GET', `/v1/servers/${server.id}`, { token })).body.status).toBe('deleted');
      expect(sim.server(server.identifier)).toBeUndefined();
    } finally {
      await api.call('PUT', '/v1/admin/settings', { body: { suspendedRetentionDays: null } });
    }
  });
});

describe('budgets', () => {
  it('GET and PUT: cap, spent, projected, remaining; deploys refused at the cap', async () => {
    const { token, id } = await customer(api, 'budget@example.com');
    expect((await api.call('GET', '/v1/account/budget', { token })).body).toMatchObject({
      monthlyCapCents: null,
      action: 'refuse',
      spentCents: 0,
      capReached: false,
      remainingCents: null,
    });
    await deployAt(token, id, Date.now() - 2 * HOUR_MS, { ...small, ...medium });
    await pass(Date.now() + 3 * 60_000);
    const spent = (await api.call('GET', '/v1/account/budget', { token })).body.spentCents;
    expect(spent).toBeGreaterThanOrEqual(6);

    const put = await api.call('PUT', '/v1/account/budget', { token, body: { monthlyCapCents: spent, action: 'refuse' } });
    expect(put.body).toMatchObject({ monthlyCapCents: spent, capReached: true, remainingCents: 0, burnCentsPerHour: 3 });
    expect(put.body.projectedCents).toBeGreaterThanOrEqual(spent);
    const refused = await api.call('POST', '/v1/servers', { token, body: small });
    expectEnvelope(refused, 422, 'limit_exceeded');
    expect(refused.body.error.details).toMatchObject({ monthlyCapCents: spent });

    // A cap the month would overrun at the new burn refuses too; clearing it allows.
    await api.call('PUT', '/v1/account/budget', { token, body: { monthlyCapCents: spent + 10, action: 'refuse' } });
    expectEnvelope(await api.call('POST', '/v1/servers', { token, body: small }), 422, 'limit_exceeded');
    await api.call('PUT', '/v1/account/budget', { token, body: { monthlyCapCents: null } });
    expect((await api.call('POST', '/v1/servers', { token, body: small })).status).toBe(201);
    expectEnvelope(await api.call('PUT', '/v1/account/budget', { token, body: { monthlyCapCents: -1 } }), 400, 'validation_failed');
  });

  it('20 concurrent deploys, then 10 concurrent upsizes, under a refuse budget never take the projected month past the cap', async () => {
    const { token, id } = await customer(api, 'budgetrace@example.com');
    await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: 100_000, note: 'test funds' } });
    await api.call('PUT', '/v1/admin/settings', { body: { maxServersPerAccount: 50 } });
    try {
      const hoursLeft = hoursLeftInMonth(Date.now());
      // Room for five of these servers (720 millicents an hour each) until the month ends, not six.
      const cap = Math.ceil((5.5 * 720 * hoursLeft) / 1000);
      await api.call('PUT', '/v1/account/budget', { token, body: { monthlyCapCents: cap, action: 'refuse' } });
      const deploys = await Promise.all(
        Array.from({ length: 20 }, (_, i) => api.call('POST', '/v1/servers', { token, body: { ...small, name: `budget race ${i}` } })),
      );
      for (const res of deploys) if (res.status !== 201) expectEnvelope(res, 422, 'limit_exceeded');
      const projected = async () => (await api.call('GET', '/v1/account/budget', { token })).body.projectedCents as number;
      expect(deploys.filter((r) => r.status === 201).length).toBeLessThanOrEqual(5);
      expect(await projected()).toBeLessThanOrEqual(cap);

      const created = deploys.filter((r) => r.status === 201).map((r) => r.body.id as string);
      const upsizes = await Promise.all(
        created.flatMap((serverId) => [0, 1].map(() => api.call('PATCH', `/v1/servers/${serverId}`, { token, body: { ...medium } }))),
      );
      for (const res of upsizes) {
        if (res.status === 200) continue;
        expect([422, 409], res.text).toContain(res.status);
      }
      expect(await projected()).toBeLessThanOrEqual(cap);
    } finally {
      await api.call('PUT', '/v1/admin/settings', { body: { maxServersPerAccount: 10 } });
    }
  });

  it('with the suspend action, reaching the cap suspends; raising it unsuspends', async () => {
    const { token, id } = await customer(api, 'budgetsuspend@example.com');
    const server = await deployAt(token, id, Date.now() - 2 * HOUR_MS, { ...small, ...medium });
    await api.call('PUT', '/v1/account/budget', { token, body: { monthlyCapCents: 3, action: 'suspend' } });
    await pass(Date.now() + 3 * 60_000);
    expect((await api.call('GET', `/v1/servers/${server.id}`, { token })).body).toMatchObject({
      status: 'suspended',
      suspendedReason: 'budget',
    });
    expect(sim.server(server.identifier)!.status).toBe('suspended');
    await api.call('PUT', '/v1/account/budget', { token, body: { monthlyCapCents: 10_000, action: 'suspend' } });
    expect((await api.call('GET', `/v1/servers/${server.id}`, { token })).body.status).toBe('active');
  });
});

describe('admin credit and the ledger listing', () => {
  it('grants and deductions are ledger entries with the note and the admin; the listing is newest first', async () => {
    const { token, id } = await customer(api, 'credited@example.com');
    const admin = (await api.call('GET', '/v1/account')).body;
    const grant = await api.call('POST', `/v1/admin/users/${id}/credits`, {
      body: { amountCents: 250, note: 'welcome back' },
      headers: { 'idempotency-key': 'grant-1' },
    });
    expect(grant.body).toMatchObject({
      accountId: id,
      balanceCents: 750,
      entry: { type: 'grant', amountCents: 250, granted: true, reference: { note: 'welcome back' } },
    });
    const replay = await api.call('POST', `/v1/admin/users/${id}/credits`, {
      body: { amountCents: 250, note: 'welcome back' },
      headers: { 'idempotency-key': 'grant-1' },
    });
    expect(replay.body.entry.seq).toBe(grant.body.entry.seq);
    const deduction = await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: -1000, note: 'chargeback' } });
    expect(deduction.body).toMatchObject({ balanceCents: -250, entry: { type: 'deduction', amountCents: -1000, granted: false } });
    expect((await ledgerOf(id)).at(-1)!.actorId).toBe(admin.id);

    const list = await api.call('GET', '/v1/account/transactions?limit=2', { token });
    expect(list.body.data.map((e: { type: string }) => e.type)).toEqual(['deduction', 'grant']);
    const next = await api.call('GET', `/v1/account/transactions?limit=2&cursor=${list.body.nextCursor}`, { token });
    expect(next.body.data.map((e: { type: string }) => e.type)).toEqual(['trial']);
    expect(next.body.nextCursor).toBeNull();

    const audit = (await api.call('GET', '/v1/admin/logs?limit=20')).body.data.filter(
      (e: { action: string; target: string }) => e.action === 'credits.adjust' && e.target === `account:${id}`,
    );
    expect(audit).toHaveLength(2);
    expect(audit[0]).toMatchObject({ accountId: admin.id, actorEmail: 'admin@localhost' });

    for (const body of [{ amountCents: 0, note: 'x' }, { amountCents: 1.5, note: 'x' }, { amountCents: 5 }, { amountCents: 5, note: '' }]) {
      expectEnvelope(await api.call('POST', `/v1/admin/users/${id}/credits`, { body }), 400, 'validation_failed');
    }
    expectEnvelope(
      await api.call('POST', '/v1/admin/users/00000000-0000-4000-8000-000000000000/credits', { body: { amountCents: 5, note: 'x' } }),
      404,
      'not_found',
    );
    expectEnvelope(
      await api.call('POST', `/v1/admin/users/${id}/credits`, { token, body: { amountCents: 5, note: 'x' } }),
      403,
      'forbidden',
    );
  });
});

describe('fan-out through a queue (the AWS shape)', () => {
  it('workers charge their shards and the last one moves the watermark; a failed shard is reported for retry', async () => {
    const { token, id } = await customer(api, 'queued@example.com');
    await deployAt(token, id, t(0, 30));
    const plan = await planPass(new Date(t(1, 5)));
    await openPassRecord(plan);
    const message = (shard: number) => ({
      messageId: `m${shard}`,
      body: JSON.stringify({ at: plan.at, throughHour: plan.throughHour, fromWatermark: plan.fromWatermark, shard }),
    });
    const half = plan.shards.slice(0, 8);
    const rest = plan.shards.slice(8);
    expect((await worker({ Records: half.map(message) } as unknown as SQSEvent)).batchItemFailures).toEqual([]);
    expect(await readWatermark()).toBeNull(); // not every shard is done yet
    const broken = { messageId: 'bad', body: '{not json' };
    const result = await worker({ Records: [...rest.map(message), broken] } as unknown as SQSEvent);
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: 'bad' }]);
    expect(await readWatermark()).toBe(t(0));
    expect(await charges(id)).toEqual([{ hour: iso(t(0)), cents: 1 }]);
    // The queue redelivers a shard: nothing is charged twice.
    await worker({ Records: plan.shards.map(message) } as unknown as SQSEvent);
    expect(await charges(id)).toEqual([{ hour: iso(t(0)), cents: 1 }]);
  });
});

describe('local trigger', () => {
  it('POST /dev/billing/run runs the pass at the given time and returns the summary', async () => {
    const { token, id } = await customer(api, 'devrun@example.com');
    await deployAt(token, id, t(0, 10));
    const res = await api.call('POST', '/dev/billing/run', { token: null, body: { at: iso(t(1, 5)) } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ at: iso(t(1, 5)), throughHour: iso(t(0)), shards: 16, errors: 0 });
    expect(res.body.serverHoursCharged).toBeGreaterThanOrEqual(1);
    expect(await charges(id)).toEqual([{ hour: iso(t(0)), cents: 1 }]);
    expect(await queryPartition({ PK: keys.account(id).PK, SKPrefix: keys.monthSpend(id, '').SK })).toHaveLength(1);
  });
});

describe('the monthly cap counts each hour once', () => {
  // The adversary is the pass itself: an hour charged by one pass and covered again by the next
  // (a catch-up from creation near the watermark) must not use up the cap a second time, or the
  // cap's last hours are charged 0 and the server pays fewer hours than the cap.
  const capped = async (monthlyCapHours: number, run: () => Promise<void>) => {
    await api.call('PUT', '/v1/admin/settings', { body: { monthlyCapHours } });
    try {
      await run();
    } finally {
      await api.call('PUT', '/v1/admin/settings', { body: { monthlyCapHours: null } });
    }
  };
  const perHour = async (accountId: string) =>
    Object.fromEntries((await chargeEntries(accountId)).map((e) => [(Date.parse(e.hour) - H0) / HOUR_MS, e.millicents]));

  it('a pass that re-runs charged hours leaves the cap as it was: the third hour is paid, the fourth is not', async () => {
    const { token, id } = await customer(api, 'cap-rerun@example.com');
    await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: 10_000, note: 'test funds' } });
    await capped(3, async () => {
      await deployExactAt(token, id, t(0), medium); // 2,400 millicents an hour
      await pass(t(2, 5)); // hours 0 and 1
      await pass(t(4, 5)); // covers 0 and 1 again (created just before the watermark), then 2 and 3
      await pass(t(4, 10)); // and once more: nothing changes
      expect(await perHour(id)).toEqual({ 0: 2400, 1: 2400, 2: 2400, 3: 0 });
    });
  }, 120_000);

  it('a server deleted in the cap’s last hour pays that hour: three hours, not two', async () => {
    const { token, id } = await customer(api, 'cap-deleted@example.com');
    await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: 10_000, note: 'test funds' } });
    await capped(3, async () => {
      const server = await deployExactAt(token, id, t(0), medium);
      await pass(t(2, 5));
      await appendHistory(
        id,
        server.id,
        { at: t(2, 30), status: 'deleted', priceCentsPerHour: 3 },
        { status: 'deleted', deletedAt: iso(t(2, 30)) },
      );
      await pass(t(4, 5));
      expect(await perHour(id)).toEqual({ 0: 2400, 1: 2400, 2: 2400 });
    });
  }, 120_000);

  it('across a month end: the old month pays its cap once, the new month starts a cap of its own', async () => {
    const { token, id } = await customer(api, 'cap-month-end@example.com');
    await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: 10_000, note: 'test funds' } });
    const now = new Date();
    const monthStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
    H0 = monthStart - 3 * HOUR_MS; // hours -3..-1 are the old month's last three, 0.. the new month's
    await capped(3, async () => {
      await deployExactAt(token, id, t(0), medium);
      await pass(t(2, 5)); // the old month's first two of its last three hours
      await pass(t(6, 5)); // re-runs them, then the old month's last hour and the new month's first three
      await pass(t(7, 5)); // the new month's fourth hour: over its cap
      expect(await perHour(id)).toEqual({ 0: 2400, 1: 2400, 2: 2400, 3: 2400, 4: 2400, 5: 2400, 6: 0 });
    });
  }, 120_000);
});
