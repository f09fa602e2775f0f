import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, expectEnvelope, type TestApi } from '../helpers/stack.ts';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { setAttributes } from '../helpers/db.ts';
import { expectLedgerInvariant } from '../helpers/money.ts';
import { keys } from '../../shared/db/keys.ts';
import { HOUR_MS, hourStart } from '../../shared/pricing/hours.ts';
import { runPassInProcess } from '../../shared/billing/pass.ts';
import { customer } from '../helpers/customer.ts';

/**
 * The suspension grace (setting `suspensionGraceMinutes`, docs/api.md "Suspension grace") and the
 * runway warnings timed against it (`balance.runway_warning`, setting `runwayWarningHours`).
 * DynamoDB Local and the panel simulator; time is the test stack's clock (tests/helpers/clock.ts),
 * moved an hour at a time, and the billing pass runs at the clock's time as the hourly scheduler
 * would (`runPassInProcess`, as tests/integration/billing.test.ts drives it). A server's life is
 * placed at the clock's hour (its stored createdAt and history), so the pass charges it by that clock.
 *
 * The server costs 2,400 millicents an hour; with 60 cents its credit lasts exactly 25 hours:
 * after n charged hours the balance is 60 − ⌊2.4 n⌋ cents.
 */
let api: TestApi;
let sim: PanelSim;
beforeAll(async () => {
  // Without the webhook dispatcher: this file moves the clock by days.
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0 }, webhooks: false });
  sim = api.panel!.sim;
});
afterAll(async () => api?.stop());
afterEach(async () => {
  await expectLedgerInvariant();
  await settings({ suspensionGraceMinutes: 0, runwayWarningHours: [24, 2] });
});

const medium = { name: 'graced server', eggId: 1, ramMb: 4096, cpuPercent: 200, diskMb: 20480 }; // 2,400 millicents an hour
const iso = (ms: number) => new Date(ms).toISOString();

async function settings(body: Record<string, unknown>) {
  const res = await api.call('PUT', '/v1/admin/settings', { body });
  expect(res.status, res.text).toBe(200);
}

/** Moves the test clock forward to `ms` (never back). */
function clockTo(ms: number) {
  const now = api.clock.now();
  if (ms > now) api.clock.advance(ms - now);
}

/** The pass at `ms` (the clock moved there first). */
async function passAt(ms: number) {
  clockTo(ms);
  return runPassInProcess(new Date(ms));
}

/** A customer with 60 cents and one running server whose life starts at the clock's hour, T. */
async function runningAt60(email: string) {
  const { token, id } = await customer(api, email);
  const server = (await api.call('POST', '/v1/servers', { token, body: medium })).body;
  expect(server.priceMillicentsPerHour).toBe(2400);
  const T = hourStart(api.clock.now()) + HOUR_MS;
  clockTo(T);
  await setAttributes(keys.server(id, server.id), {
    createdAt: iso(T),
    history: [{ at: iso(T), status: 'active', priceCentsPerHour: server.priceCentsPerHour, priceMillicentsPerHour: 2400 }],
  });
  const deducted = await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: -440, note: 'leave 60 cents' } });
  expect(deducted.status, deducted.text).toBe(200);
  /** The pass of hour n: 5 minutes after the n-th hour of the server's life ended. */
  const hour = (n: number) => T + n * HOUR_MS + 5 * 60_000;
  return { token, id, server: server as { id: string; identifier: string }, T, hour };
}

const account = async (token: string) => (await api.call('GET', '/v1/account', { token })).body;
const status = async (token: string, serverId: string) => (await api.call('GET', `/v1/servers/${serverId}`, { token })).body.status;

async function events(token: string, type: string) {
  const page = await api.call('GET', `/v1/events?type=${type}&limit=100`, { token });
  expect(page.status, page.text).toBe(200);
  return page.body.data.map((e: { data: Record<string, unknown> }) => e.data).reverse();
}

describe('a grace of 2 hours', () => {
  it('a server at zero balance keeps running (charged into debt) 2 hours, the 24 h and 2 h warnings come first, once each, then it is suspended once', async () => {
    await settings({ suspensionGraceMinutes: 120 });
    const { token, server, hour } = await runningAt60('grace-2h@example.com');
    // Before any charge: credit for 25 hours, and the grace after it.
    const before = await account(token);
    expect(before).toMatchObject({ balanceCents: 60, runwayHours: 25 });
    expect(Date.parse(before.suspendAt) - Date.parse(before.fundedUntil)).toBe(2 * HOUR_MS);

    for (let n = 1; n <= 2; n++) await passAt(hour(n));
    expect(await events(token, 'balance.runway_warning')).toEqual([]);

    // Hour 3: 24 hours left before the suspension (22 of credit and the grace). Passes running at once, and again, warn once.
    await Promise.all([passAt(hour(3)), passAt(hour(3)), passAt(hour(3))]);
    await passAt(hour(3));
    const suspendAt = iso(hour(27));
    expect(await events(token, 'balance.runway_warning')).toEqual([
      { horizonHours: 24, hoursLeft: 24, suspendAt, balanceCents: 53, burnMillicentsPerHour: 2400, graceMinutes: 120 },
    ]);
    // The account view says the same (from its own moment: the clock runs on between passes).
    const view = await account(token);
    expect(Date.parse(view.suspendAt) - Date.parse(view.fundedUntil)).toBe(2 * HOUR_MS);
    expect(Math.abs(Date.parse(view.suspendAt) - hour(27))).toBeLessThan(60_000);

    for (let n = 4; n <= 24; n++) await passAt(hour(n));
    expect(await events(token, 'balance.runway_warning')).toHaveLength(1);

    // Hour 25 uses the last cent: the grace starts; the 2-hour warning, at once and once.
    await Promise.all([passAt(hour(25)), passAt(hour(25))]);
    expect(await account(token)).toMatchObject({ balanceCents: 0, debtCents: 0, suspendAt });
    expect(await status(token, server.id)).toBe('active');
    expect(await events(token, 'balance.runway_warning')).toEqual([
      expect.objectContaining({ horizonHours: 24 }),
      { horizonHours: 2, hoursLeft: 2, suspendAt, balanceCents: 0, burnMillicentsPerHour: 2400, graceMinutes: 120 },
    ]);

    // An hour into the grace: still running, still charged, the balance below zero is a debt.
    await passAt(hour(26));
    expect(await account(token)).toMatchObject({ balanceCents: -2, debtCents: 2, suspendAt });
    expect(await status(token, server.id)).toBe('active');
    expect(sim.server(server.identifier)!.status).not.toBe('suspended');
    expect(await events(token, 'server.suspended')).toEqual([]);

    // Two hours after it began, the grace is over: passes at once suspend it once.
    const runs = await Promise.all([passAt(hour(27)), passAt(hour(27)), passAt(hour(27))]);
    expect(runs.reduce((sum, r) => sum + r.suspended, 0)).toBe(1);
    expect(await status(token, server.id)).toBe('suspended');
    expect(sim.server(server.identifier)!.status).toBe('suspended');
    expect(await account(token)).toMatchObject({ balanceCents: -4, debtCents: 4, suspendAt: null });
    await passAt(hour(27));
    await passAt(hour(28));
    expect(await events(token, 'server.suspended')).toEqual([expect.objectContaining({ id: server.id, reason: 'balance' })]);
    expect(await events(token, 'balance.runway_warning')).toHaveLength(2);
    const logs = (await api.call('GET', '/v1/account/logs?limit=100', { token })).body.data;
    expect(logs.filter((e: { action: string }) => e.action === 'servers.suspend')).toHaveLength(1);
  }, 120_000);

  it('a top-up during the grace that lifts the balance above zero ends it: nothing is suspended, and the next episode has its own grace', async () => {
    await settings({ suspensionGraceMinutes: 120 });
    const { token, id, server, hour } = await runningAt60('grace-topup@example.com');
    await passAt(hour(25)); // the last cent: the grace starts, to end at hour 27
    expect(await account(token)).toMatchObject({ balanceCents: 0, suspendAt: iso(hour(27)) });
    await passAt(hour(26));
    expect(await account(token)).toMatchObject({ balanceCents: -2, debtCents: 2 });

    // A top-up of 500 cents, paid through the sandbox checkout (the local stack's Stripe stand-in), with its 5 % bonus.
    const checkout = await api.call('POST', '/v1/billing/checkout', { token, body: { amountCents: 500 } });
    expect(checkout.status, checkout.text).toBe(201);
    const paid = await api.call('POST', `/dev/checkout/${checkout.body.invoiceId}/complete`, { token: null, body: { outcome: 'paid' } });
    expect(paid.status, paid.text).toBe(200);
    // 523 cents, and a whole grace after the credit runs out.
    const after = await account(token);
    expect(after).toMatchObject({ balanceCents: 523, debtCents: 0 });
    expect(Date.parse(after.suspendAt) - Date.parse(after.fundedUntil)).toBe(2 * HOUR_MS);

    // The old grace's end passes: nothing is suspended.
    for (const n of [27, 28]) await passAt(hour(n));
    expect(await status(token, server.id)).toBe('active');
    expect(sim.server(server.identifier)!.status).not.toBe('suspended');
    expect(await events(token, 'server.suspended')).toEqual([]);
    expect((await account(token)).balanceCents).toBe(523 - 5); // hours 27 and 28: 4,800 millicents on 400 carried

    // Back at zero later, a new grace of its own begins (not the old one's end).
    const deducted = await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: -518, note: 'back to zero' } });
    expect(deducted.status, deducted.text).toBe(200);
    await passAt(hour(29));
    expect(await account(token)).toMatchObject({ balanceCents: -2, suspendAt: iso(hour(31)) });
    await passAt(hour(30));
    expect(await status(token, server.id)).toBe('active');
    await passAt(hour(31));
    expect(await status(token, server.id)).toBe('suspended');
    // Hour 25 reached both horizons at once: only the nearest was sent. The top-up re-armed it; the new episode sent it again.
    const warnings = await events(token, 'balance.runway_warning');
    expect(warnings.map((w: { horizonHours: number; suspendAt: string }) => [w.horizonHours, w.suspendAt])).toEqual([
      [2, iso(hour(27))],
      [2, iso(hour(31))],
    ]);
  }, 120_000);

  it('a credit that leaves the balance at or below zero does not end it: the suspension comes when the grace ends', async () => {
    await settings({ suspensionGraceMinutes: 120 });
    const { token, id, server, hour } = await runningAt60('grace-partial@example.com');
    await passAt(hour(25));
    await passAt(hour(26)); // −2
    await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: 1, note: 'a cent' } });
    expect(await account(token)).toMatchObject({ balanceCents: -1, suspendAt: iso(hour(27)) });
    await passAt(hour(27));
    expect(await status(token, server.id)).toBe('suspended');
  }, 120_000);
});

describe('without a grace (the default)', () => {
  it('the server is suspended by the pass that finds the balance at zero; the warnings still come before it', async () => {
    const { token, server, hour } = await runningAt60('grace-none@example.com');
    expect((await api.call('GET', '/v1/admin/settings')).body).toMatchObject({ suspensionGraceMinutes: 0, runwayWarningHours: [24, 2] });
    const before = await account(token);
    expect(before.suspendAt).toBe(before.fundedUntil);
    await passAt(hour(1)); // 24 hours left: the 24-hour warning
    for (let n = 2; n <= 24; n++) await passAt(hour(n));
    expect(await status(token, server.id)).toBe('active');
    expect((await events(token, 'balance.runway_warning')).map((e: { horizonHours: number }) => e.horizonHours)).toEqual([24, 2]);
    await passAt(hour(25));
    expect(await status(token, server.id)).toBe('suspended');
    expect(await account(token)).toMatchObject({ balanceCents: 0, suspendAt: null });
  }, 120_000);
});

describe('the settings', () => {
  it('refuse a grace over 7 days, a negative one, horizons out of range or repeated; nothing changes', async () => {
    for (const body of [
      { suspensionGraceMinutes: 10_081 },
      { suspensionGraceMinutes: -1 },
      { suspensionGraceMinutes: 1.5 },
      { runwayWarningHours: [0] },
      { runwayWarningHours: [24, 24] },
      { runwayWarningHours: [1, 2, 3, 4, 5, 6] },
    ]) {
      expectEnvelope(await api.call('PUT', '/v1/admin/settings', { body }), 400, 'validation_failed');
    }
    expect((await api.call('GET', '/v1/admin/settings')).body).toMatchObject({ suspensionGraceMinutes: 0, runwayWarningHours: [24, 2] });
    await settings({ suspensionGraceMinutes: 10_080, runwayWarningHours: [] });
    expect((await api.call('GET', '/v1/admin/settings')).body).toMatchObject({ suspensionGraceMinutes: 10_080, runwayWarningHours: [] });
  });
});
