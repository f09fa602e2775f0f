import { signedStripeEvent } from '../helpers/stripe-events.ts';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, expectEnvelope, type TestApi } from '../helpers/stack.ts';
import { startFakeStripe, type FakeStripe } from '../helpers/fake-stripe.ts';
import { expectLedgerInvariant, ledgerOf } from '../helpers/money.ts';
import { getRaw, setAttributes } from '../helpers/db.ts';
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '../../shared/db/client.ts';
import { runPassInProcess } from '../../shared/billing/pass.ts';
import { HOUR_MS, hourStart } from '../../shared/pricing/hours.ts';
import { keys } from '../../shared/db/keys.ts';
import { resetConfig, SANDBOX_WEBHOOK_SECRET } from '../../shared/config/env.ts';
import { attemptAutoTopUp, runAutoTopUps } from '../../shared/payments/autotopup.ts';

/**
 * Auto top-up with a saved card, end to end: the card saved through Checkout in setup mode (the
 * sandbox's card page, then Stripe's own client against the fake Stripe API), the rule, debits
 * through the admin API, the every-minute loop run here (the file's own loop is off, so each run
 * is the test's), and the signed webhooks. The adversaries: concurrent debits and two loops at
 * once (one PaymentIntent, one credit), a webhook replayed (books once), a card that keeps
 * failing (no credit, the rule turns off), and another account (sees and charges nothing).
 */
let api: TestApi;

beforeAll(async () => {
  delete process.env.STRIPE_SECRET_KEY;
  delete process.env.STRIPE_WEBHOOK_SECRET;
  delete process.env.STRIPE_API_URL;
  resetConfig();
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0 }, repairs: false, webhooks: false });
});
afterAll(async () => api?.stop());
afterEach(async () => {
  await expectLedgerInvariant();
});

async function customer(email: string) {
  const token = await api.session(email);
  const { id } = (await api.call('GET', '/v1/account', { token })).body;
  return { token, id: id as string };
}

const balanceOf = async (id: string) => Number((await getRaw(keys.account(id)))!.balanceCents);
const profileOf = async (id: string) => (await getRaw(keys.account(id)))!;

/** A debit as an admin makes one (the same ledger path as every charge). */
async function debit(id: string, cents: number) {
  const res = await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: -cents, note: 'auto top-up test' } });
  expect(res.status, res.text).toBe(200);
}

/** Saves one of the sandbox's cards through its card page and the signed webhook. */
async function saveSandboxCard(token: string, card: string) {
  const setup = await api.call('POST', '/v1/billing/payment-method/checkout', { token, body: {} });
  expect(setup.status, setup.text).toBe(201);
  const done = await api.call('POST', `/dev/payment-method/${setup.body.sessionId}/complete`, { token: null, body: { card } });
  expect(done.body).toEqual({ received: true, outcome: 'card_saved' });
  return setup.body as { url: string; sessionId: string };
}

const rule = (over: Record<string, unknown> = {}) => ({ enabled: true, belowCents: 300, amountCents: 1000, maxPerDay: 3, ...over });

async function setRule(token: string, body: Record<string, unknown>) {
  const res = await api.call('PUT', '/v1/billing/auto-topup', { token, body });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

async function invoicesOf(token: string) {
  const res = await api.call('GET', '/v1/invoices?limit=100', { token });
  expect(res.status).toBe(200);
  return res.body.data as { id: string; status: string; amountCents: number; creditedCents: number; payment: Record<string, unknown> }[];
}

async function eventsOf(token: string, type: string) {
  const res = await api.call('GET', `/v1/events?limit=100&type=${type}`, { token });
  expect(res.status, res.text).toBe(200);
  return res.body.data as { type: string; data: Record<string, any> }[];
}

/** Any event body signed as Stripe signs it, with the given secret. */
const signed = (type: string, object: Record<string, unknown>, secret: string) => signedStripeEvent(type, object, { secret });

const deliver = (event: { body: string; signature: string }) =>
  api.call('POST', '/v1/webhooks/stripe', {
    token: null,
    rawBody: event.body,
    headers: { 'content-type': 'application/json', 'stripe-signature': event.signature },
  });

describe('the saved card (sandbox)', () => {
  it('is saved through the card page and the signed webhook; GET shows brand and last4 only, to its own account only', async () => {
    const a = await customer('card-owner@example.com');
    const b = await customer('card-neighbour@example.com');
    expect((await api.call('GET', '/v1/billing/payment-method', { token: a.token })).body).toEqual({ card: null });

    const setup = await api.call('POST', '/v1/billing/payment-method/checkout', { token: a.token, body: {} });
    expect(setup.status, setup.text).toBe(201);
    expect(setup.body.url).toBe(`${api.baseUrl}/dev/payment-method/${setup.body.sessionId}`);
    const page = await fetch(setup.body.url);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('pm_card_chargeDeclined');

    const done = await api.call('POST', `/dev/payment-method/${setup.body.sessionId}/complete`, {
      token: null,
      body: { card: 'pm_card_visa' },
    });
    expect(done.body).toEqual({ received: true, outcome: 'card_saved' });
    // A replay of the same completion saves nothing again.
    const again = await api.call('POST', `/dev/payment-method/${setup.body.sessionId}/complete`, {
      token: null,
      body: { card: 'pm_card_chargeDeclined' },
    });
    expect(again.body).toEqual({ received: true, outcome: 'already_fulfilled' });

    const shown = await api.call('GET', '/v1/billing/payment-method', { token: a.token });
    expect(shown.body).toEqual({ card: { id: expect.any(String), brand: 'visa', last4: '4242', savedAt: expect.any(String) } });
    // The neighbour cannot forget it: the card id is 404 for them, and the card stays.
    expectEnvelope(await api.call('DELETE', `/v1/billing/payment-method/${shown.body.card.id}`, { token: b.token }), 404, 'not_found');
    // The provider's ids stay inside: no PaymentMethod, no Customer in any response.
    for (const res of [shown, await api.call('GET', '/v1/billing/auto-topup', { token: a.token })]) {
      expect(res.text).not.toMatch(/pm_card|cus_|seti_/);
    }
    expect((await api.call('GET', '/v1/billing/auto-topup', { token: a.token })).body).toMatchObject({ cardSaved: true, enabled: false });

    // The neighbour sees no card and cannot arm a rule on a card that is not theirs.
    expect((await api.call('GET', '/v1/billing/payment-method', { token: b.token })).body).toEqual({ card: null });
    expectEnvelope(await api.call('PUT', '/v1/billing/auto-topup', { token: b.token, body: rule() }), 409, 'conflict');
    // Nor complete the owner's setup session as their own: the session names its account.
    const bSetup = await api.call('POST', '/v1/billing/payment-method/checkout', { token: b.token, body: {} });
    const crossed = signed(
      'checkout.session.completed',
      {
        id: setup.body.sessionId,
        object: 'checkout.session',
        mode: 'setup',
        payment_status: 'no_payment_required',
        amount_total: null,
        currency: null,
        metadata: { account_id: b.id },
        setup_intent: 'seti_sandbox_pm_card_visa',
      },
      SANDBOX_WEBHOOK_SECRET,
    );
    expect((await deliver(crossed)).body.outcome).toBe('ignored');
    expect((await api.call('GET', '/v1/billing/payment-method', { token: b.token })).body).toEqual({ card: null });
    expect(bSetup.status).toBe(201);
  });

  it('an older setup session completing late saves nothing; DELETE forgets the card and turns the rule off', async () => {
    const a = await customer('card-forget@example.com');
    const older = await api.call('POST', '/v1/billing/payment-method/checkout', { token: a.token, body: {} });
    await saveSandboxCard(a.token, 'pm_card_visa');
    const late = await api.call('POST', `/dev/payment-method/${older.body.sessionId}/complete`, {
      token: null,
      body: { card: 'pm_card_chargeDeclined' },
    });
    expect(late.body.outcome).toBe('already_fulfilled');
    expect((await api.call('GET', '/v1/billing/payment-method', { token: a.token })).body.card.last4).toBe('4242');

    await setRule(a.token, rule());
    expect((await profileOf(a.id)).autoTopUpBelowCents).toBe(300);
    const { card } = (await api.call('GET', '/v1/billing/payment-method', { token: a.token })).body;
    // A card id of before (a client's stale view) forgets nothing.
    expectEnvelope(
      await api.call('DELETE', '/v1/billing/payment-method/00000000-0000-4000-8000-000000000000', { token: a.token }),
      404,
      'not_found',
    );
    expect((await profileOf(a.id)).autoTopUpBelowCents).toBe(300);
    const removed = await api.call('DELETE', `/v1/billing/payment-method/${card.id}`, { token: a.token });
    expect(removed.status, removed.text).toBe(200);
    expect(removed.body).toEqual({ card: null });
    expect((await api.call('GET', '/v1/billing/auto-topup', { token: a.token })).body).toMatchObject({
      enabled: false,
      cardSaved: false,
      disabledReason: 'card_removed',
    });
    // Disarmed: a debit below the threshold marks nothing.
    expect((await profileOf(a.id)).autoTopUpBelowCents).toBeUndefined();
    await debit(a.id, 400);
    expect((await profileOf(a.id)).autoTopUpDue).toBeUndefined();
    expect((await runAutoTopUps()).attempted).toBe(0);
    expect(await invoicesOf(a.token)).toEqual([]);
  });
});

describe('the rule', () => {
  it('refuses what it cannot honour, in the envelope, and changes nothing', async () => {
    const a = await customer('rule-bounds@example.com');
    // No card yet: enabling is a conflict, but a disabled rule may be set.
    expectEnvelope(await api.call('PUT', '/v1/billing/auto-topup', { token: a.token, body: rule() }), 409, 'conflict');
    expect((await profileOf(a.id)).autoTopUpBelowCents).toBeUndefined();
    await saveSandboxCard(a.token, 'pm_card_visa');
    const before = (await api.call('GET', '/v1/billing/auto-topup', { token: a.token })).body;
    for (const body of [
      rule({ amountCents: 100 }), // below the minimum top-up (500)
      rule({ amountCents: 100_001 }), // above the maximum
      rule({ maxPerDay: 0 }),
      rule({ maxPerDay: 11 }),
      rule({ belowCents: 0 }),
      rule({ belowCents: 12.5 }),
      rule({ enabled: 'yes' }),
      rule({ extra: true }),
      { enabled: true },
    ]) {
      const res = await api.call('PUT', '/v1/billing/auto-topup', { token: a.token, body });
      expectEnvelope(res, 400, 'validation_failed');
    }
    expect((await api.call('GET', '/v1/billing/auto-topup', { token: a.token })).body).toEqual(before);
    expect((await profileOf(a.id)).autoTopUpBelowCents).toBeUndefined();
    // A key with billing:read only may read, not write.
    const reader = (await api.call('POST', '/v1/keys', { token: a.token, body: { name: 'reader', scopes: ['billing:read'] } })).body.secret;
    expect((await api.call('GET', '/v1/billing/auto-topup', { token: reader })).status).toBe(200);
    expectEnvelope(await api.call('PUT', '/v1/billing/auto-topup', { token: reader, body: rule() }), 403, 'forbidden');
    const { card } = (await api.call('GET', '/v1/billing/payment-method', { token: reader })).body;
    expectEnvelope(await api.call('DELETE', `/v1/billing/payment-method/${card.id}`, { token: reader }), 403, 'forbidden');
    expect((await api.call('GET', '/v1/billing/payment-method', { token: a.token })).body.card.id).toBe(card.id);
  });
});

describe('auto top-up in the sandbox', () => {
  it('concurrent debits cross the threshold once; two loops at once: one invoice, paid and credited once', async () => {
    const a = await customer('topup-race@example.com');
    await saveSandboxCard(a.token, 'pm_card_visa');
    await setRule(a.token, rule({ belowCents: 300, amountCents: 1000 }));
    expect((await profileOf(a.id)).autoTopUpDue).toBeUndefined(); // 500 is not below 300

    // Ten debits of 30 at once: 500 → 200, the balance crosses 300 once and stays below.
    await Promise.all(Array.from({ length: 10 }, () => debit(a.id, 30)));
    expect(await balanceOf(a.id)).toBe(200);
    expect((await profileOf(a.id)).autoTopUpDue).toEqual(expect.any(String));

    const [first, second] = await Promise.all([runAutoTopUps(), runAutoTopUps()]);
    expect(first.attempted + second.attempted).toBe(1);
    const invoices = await invoicesOf(a.token);
    expect(invoices).toHaveLength(1);
    expect(invoices[0]).toMatchObject({ status: 'paid', amountCents: 1000, creditedCents: 1050, payment: { provider: 'sandbox' } });
    expect(await balanceOf(a.id)).toBe(200 + 1050);
    const credits = (await ledgerOf(a.id)).filter((e) => e.type === 'topup' || e.type === 'bonus');
    expect(credits.map((e) => [e.type, e.amountCents])).toEqual([
      ['topup', 1000],
      ['bonus', 50],
    ]);
    expect((await profileOf(a.id)).autoTopUpDue).toBeUndefined();
    expect((await api.call('GET', '/v1/billing/auto-topup', { token: a.token })).body).toMatchObject({
      attemptsToday: 1,
      inFlight: false,
      consecutiveFailures: 0,
    });
    // Nothing is due any more: later runs charge nothing.
    expect((await runAutoTopUps()).due).toBe(0);

    // The PaymentIntent's success delivered again (Stripe retries): booked once.
    const invoice = (await api.call('GET', `/v1/invoices/${invoices[0]!.id}`, { token: a.token })).body;
    const replay = signed(
      'payment_intent.succeeded',
      {
        id: invoice.payment.paymentIntentId,
        object: 'payment_intent',
        amount: 1000,
        amount_received: 1000,
        currency: 'usd',
        metadata: { auto_topup: 'true', invoice_id: invoice.id, account_id: a.id },
      },
      SANDBOX_WEBHOOK_SECRET,
    );
    const outcomes = await Promise.all(Array.from({ length: 4 }, () => deliver(replay)));
    expect(outcomes.map((r) => r.body.outcome)).toEqual(Array(4).fill('already_fulfilled'));
    expect(await balanceOf(a.id)).toBe(1250);
  });

  it('many attempts racing for one due account make one charge', async () => {
    const a = await customer('topup-claim@example.com');
    await saveSandboxCard(a.token, 'pm_card_visa');
    await setRule(a.token, rule({ belowCents: 600, amountCents: 500 }));
    // Enabled while already below: due at once.
    expect((await profileOf(a.id)).autoTopUpDue).toEqual(expect.any(String));
    const outcomes = await Promise.all(Array.from({ length: 6 }, () => attemptAutoTopUp(a.id)));
    expect(outcomes.filter((o) => o === 'attempted')).toHaveLength(1);
    expect(await invoicesOf(a.token)).toHaveLength(1);
    expect(await balanceOf(a.id)).toBe(500 + 525);
  });

  it('the hourly pass marks the account due and calls no payment provider; the loop then charges', async () => {
    const a = await customer('topup-pass@example.com');
    await saveSandboxCard(a.token, 'pm_card_visa');
    await setRule(a.token, rule({ belowCents: 500, amountCents: 500 }));
    const server = await api.call('POST', '/v1/servers', {
      token: a.token,
      body: { name: 'topped', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
    });
    expect(server.status, server.text).toBe(201);
    const at = new Date(hourStart(Date.now()) - 3 * HOUR_MS).toISOString();
    await setAttributes(keys.server(a.id, server.body.id), {
      createdAt: at,
      history: [
        {
          at,
          status: 'active',
          priceCentsPerHour: server.body.priceCentsPerHour,
          priceMillicentsPerHour: server.body.priceMillicentsPerHour,
        },
      ],
    });
    await db().send(new DeleteCommand({ TableName: tableName(), Key: keys.billingWatermark() }));
    await runPassInProcess(new Date(hourStart(Date.now()) + 5 * 60_000));
    const after = await balanceOf(a.id);
    expect(after).toBeLessThan(500);
    // The pass only marked it: no invoice, no charge of the card yet.
    expect((await profileOf(a.id)).autoTopUpDue).toEqual(expect.any(String));
    expect(await invoicesOf(a.token)).toEqual([]);
    expect((await runAutoTopUps()).attempted).toBe(1);
    expect(await balanceOf(a.id)).toBe(after + 525);
  });

  it('an attempt still in flight blocks the next; one left without an answer for 30 minutes is claimed again', async () => {
    const a = await customer('topup-stale@example.com');
    await saveSandboxCard(a.token, 'pm_card_visa');
    const lost = '11111111-2222-4333-8444-555555555555';
    await setAttributes(keys.autoTopUp(a.id), { inFlightInvoiceId: lost, inFlightAt: new Date().toISOString() });
    await setRule(a.token, rule({ belowCents: 600, amountCents: 500, maxPerDay: 5 }));
    expect(await attemptAutoTopUp(a.id)).toBe('in_flight');
    expect(await invoicesOf(a.token)).toEqual([]);
    await setAttributes(keys.autoTopUp(a.id), { inFlightAt: new Date(Date.now() - 31 * 60_000).toISOString() });
    await debit(a.id, 1);
    expect(await attemptAutoTopUp(a.id)).toBe('attempted');
    expect((await invoicesOf(a.token)).map((i) => i.status)).toEqual(['paid']);
    expect(await balanceOf(a.id)).toBe(499 + 525);
  });

  it('at most maxPerDay a UTC day; the next day it charges again', async () => {
    const a = await customer('topup-daily@example.com');
    await saveSandboxCard(a.token, 'pm_card_visa');
    // A threshold above every balance here: each debit makes it due again.
    await setRule(a.token, rule({ belowCents: 100_000, amountCents: 500, maxPerDay: 2 }));
    for (let i = 0; i < 4; i++) {
      await debit(a.id, 1);
      await runAutoTopUps();
    }
    expect((await invoicesOf(a.token)).map((i) => i.status)).toEqual(['paid', 'paid']);
    expect((await api.call('GET', '/v1/billing/auto-topup', { token: a.token })).body.attemptsToday).toBe(2);
    await debit(a.id, 1);
    await runAutoTopUps(new Date(Date.now() + 86_400_000));
    expect(await invoicesOf(a.token)).toHaveLength(3);
    expect(await balanceOf(a.id)).toBe(500 - 5 + 3 * 525);
  });

  it('a declined card: an event, no credit, the invoice void; off after the configured failures in a row', async () => {
    const a = await customer('topup-declined@example.com');
    await saveSandboxCard(a.token, 'pm_card_chargeDeclined');
    await setRule(a.token, rule({ belowCents: 480, amountCents: 500, maxPerDay: 10 }));
    for (let n = 1; n <= 3; n++) {
      await debit(a.id, 50);
      expect((await runAutoTopUps()).attempted).toBe(1);
      const failed = await eventsOf(a.token, 'auto_topup.failed');
      expect(failed).toHaveLength(n);
      expect(failed[0]!.data).toMatchObject({ code: 'card_declined', consecutiveFailures: n, ruleDisabled: n === 3, amountCents: 500 });
    }
    expect(await balanceOf(a.id)).toBe(500 - 150);
    expect((await ledgerOf(a.id)).filter((e) => e.type === 'topup')).toEqual([]);
    expect((await invoicesOf(a.token)).map((i) => i.status)).toEqual(['void', 'void', 'void']);
    const disabled = await eventsOf(a.token, 'auto_topup.disabled');
    expect(disabled.map((e) => e.data)).toEqual([expect.objectContaining({ reason: 'failures', consecutiveFailures: 3 })]);
    expect((await api.call('GET', '/v1/billing/auto-topup', { token: a.token })).body).toMatchObject({
      enabled: false,
      disabledReason: 'failures',
      consecutiveFailures: 3,
      lastFailure: { code: 'card_declined' },
    });
    // Off: the next debit marks nothing, the loop charges nothing.
    await debit(a.id, 50);
    expect((await profileOf(a.id)).autoTopUpDue).toBeUndefined();
    await runAutoTopUps();
    expect(await invoicesOf(a.token)).toHaveLength(3);

    // The failure delivered again changes nothing: no second count, no second event.
    const invoice = (await invoicesOf(a.token))[0]!;
    const replay = signed(
      'payment_intent.payment_failed',
      {
        id: 'pi_replayed',
        object: 'payment_intent',
        amount: 500,
        currency: 'usd',
        metadata: { auto_topup: 'true', invoice_id: invoice.id, account_id: a.id },
        last_payment_error: { code: 'card_declined' },
      },
      SANDBOX_WEBHOOK_SECRET,
    );
    expect((await deliver(replay)).body.outcome).toBe('kept_void');
    expect(await eventsOf(a.token, 'auto_topup.failed')).toHaveLength(3);
    expect((await api.call('GET', '/v1/billing/auto-topup', { token: a.token })).body.consecutiveFailures).toBe(3);

    // Turned on again (a new card): the count starts afresh.
    await saveSandboxCard(a.token, 'pm_card_visa');
    await setRule(a.token, rule({ belowCents: 480, amountCents: 500, maxPerDay: 10 }));
    expect((await api.call('GET', '/v1/billing/auto-topup', { token: a.token })).body).toMatchObject({
      enabled: true,
      consecutiveFailures: 0,
      disabledReason: null,
    });
  });

  it('authentication required: off-session charges stop; the event and the view link the payment page; paying it turns the rule on', async () => {
    const a = await customer('topup-sca@example.com');
    await saveSandboxCard(a.token, 'pm_card_authenticationRequired');
    await setRule(a.token, rule({ belowCents: 400, amountCents: 500, maxPerDay: 10 }));
    await debit(a.id, 200);
    await runAutoTopUps();
    const [invoice] = await invoicesOf(a.token);
    const url = `${api.baseUrl}/dev/checkout/${invoice!.id}`;
    const [failed] = await eventsOf(a.token, 'auto_topup.failed');
    expect(failed!.data).toMatchObject({ code: 'authentication_required', consecutiveFailures: 1, ruleDisabled: true, paymentUrl: url });
    expect((await eventsOf(a.token, 'auto_topup.disabled')).map((e) => e.data.reason)).toEqual(['authentication_required']);
    // The invoice stays open for the customer to pay; nothing is credited.
    expect(invoice!.status).toBe('open');
    expect(await balanceOf(a.id)).toBe(300);
    expect((await api.call('GET', '/v1/billing/auto-topup', { token: a.token })).body).toMatchObject({
      enabled: false,
      disabledReason: 'authentication_required',
      pendingPayment: { invoiceId: invoice!.id, url, expiresAt: expect.any(String) },
    });
    // Stopped: later crossings charge nothing and open no invoice (no number used per retry).
    for (let i = 0; i < 3; i++) {
      await debit(a.id, 10);
      await runAutoTopUps(new Date(Date.now() + (i + 1) * 3_600_000));
    }
    expect(await invoicesOf(a.token)).toHaveLength(1);
    expect(await eventsOf(a.token, 'auto_topup.failed')).toHaveLength(1);

    // The customer pays on the page (3-D Secure happens there): credited once, the rule on again.
    expect((await fetch(url)).status).toBe(200);
    const paid = await api.call('POST', `/dev/checkout/${invoice!.id}/complete`, { token: null, body: { outcome: 'paid' } });
    expect(paid.body.outcome).toBe('credited');
    expect(await balanceOf(a.id)).toBe(270 + 525);
    expect((await api.call('GET', '/v1/billing/auto-topup', { token: a.token })).body).toMatchObject({
      enabled: true,
      disabledReason: null,
      consecutiveFailures: 0,
      pendingPayment: null,
    });
    expect((await profileOf(a.id)).autoTopUpBelowCents).toBe(400);
  });

  it('a success after failures resets the count', async () => {
    const a = await customer('topup-recover@example.com');
    await saveSandboxCard(a.token, 'pm_card_chargeDeclined');
    await setRule(a.token, rule({ belowCents: 400, amountCents: 500, maxPerDay: 10 }));
    await debit(a.id, 200);
    await runAutoTopUps();
    expect((await api.call('GET', '/v1/billing/auto-topup', { token: a.token })).body.consecutiveFailures).toBe(1);
    await saveSandboxCard(a.token, 'pm_card_visa'); // replaces the card; the rule stays on
    await debit(a.id, 1);
    await runAutoTopUps();
    expect((await api.call('GET', '/v1/billing/auto-topup', { token: a.token })).body).toMatchObject({
      enabled: true,
      consecutiveFailures: 0,
      lastFailure: null,
    });
    expect(await balanceOf(a.id)).toBe(500 - 201 + 525);
  });

  it('an auto top-up on a debt pays it off first: its entry says how much, account.debt_settled once', async () => {
    const a = await customer('topup-debt@example.com');
    await saveSandboxCard(a.token, 'pm_card_visa');
    await setRule(a.token, rule({ belowCents: 300, amountCents: 1000 }));
    await debit(a.id, 800); // 500 → −300: a debt (docs/api.md "Debt")
    expect((await api.call('GET', '/v1/account', { token: a.token })).body).toMatchObject({ balanceCents: -300, debtCents: 300 });
    expect((await eventsOf(a.token, 'account.debt')).map((e) => e.data)).toEqual([
      expect.objectContaining({ debtCents: 300, cause: 'deduction' }),
    ]);
    expect((await runAutoTopUps()).attempted).toBe(1);
    expect((await runAutoTopUps()).due).toBe(0);
    const [topup, bonus] = (await ledgerOf(a.id)).slice(-2);
    expect(topup).toMatchObject({ type: 'topup', amountCents: 1000, balanceAfterCents: 700, reference: { settlesDebtCents: 300 } });
    expect(bonus).toMatchObject({ type: 'bonus', amountCents: 50, balanceAfterCents: 750 });
    expect(bonus!.reference).not.toHaveProperty('settlesDebtCents');
    expect((await eventsOf(a.token, 'account.debt_settled')).map((e) => e.data)).toEqual([
      expect.objectContaining({ settledCents: 300, balanceCents: 750, cause: 'topup', entrySeq: topup!.seq }),
    ]);
    expect((await api.call('GET', '/v1/account', { token: a.token })).body).toMatchObject({ balanceCents: 750, debtCents: 0 });
  });
});

describe('auto top-up through Stripe (fake Stripe API, signed webhooks)', () => {
  const WEBHOOK_SECRET = 'whsec_test_autotopup';
  let stripeFake: FakeStripe;
  beforeAll(async () => {
    stripeFake = await startFakeStripe();
    process.env.STRIPE_SECRET_KEY = 'sk_test_fake_key_for_tests';
    process.env.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET;
    process.env.STRIPE_API_URL = stripeFake.url;
    resetConfig();
  });
  afterAll(async () => {
    delete process.env.STRIPE_SECRET_KEY;
    delete process.env.STRIPE_WEBHOOK_SECRET;
    delete process.env.STRIPE_API_URL;
    resetConfig();
    await stripeFake?.close();
  });

  /** The setup session through the API, the customer choosing `card` on Stripe's page, and Stripe's signed event. */
  async function saveStripeCard(token: string, card: string) {
    const setup = await api.call('POST', '/v1/billing/payment-method/checkout', { token, body: {} });
    expect(setup.status, setup.text).toBe(201);
    const session = stripeFake.sessions.get(setup.body.sessionId)!;
    expect(setup.body.url).toBe(session.url);
    stripeFake.setupIntents.get(session.setup_intent as string)!.payment_method = card;
    const done = await deliver(signed('checkout.session.completed', { ...session, status: 'complete' }, WEBHOOK_SECRET));
    expect(done.body.outcome).toBe('card_saved');
    return session;
  }

  const intentEvent = (intent: Record<string, unknown>) =>
    signed(intent.status === 'succeeded' ? 'payment_intent.succeeded' : 'payment_intent.payment_failed', intent, WEBHOOK_SECRET);

  it('saves the card to one Customer per account (Checkout in setup mode)', async () => {
    const a = await customer('stripe-card@example.com');
    const session = await saveStripeCard(a.token, 'pm_card_visa');
    await saveStripeCard(a.token, 'pm_card_visa');
    const mine = stripeFake.customers.filter((c) => c.metadata.account_id === a.id);
    expect(mine).toHaveLength(1);
    expect(session).toMatchObject({ mode: 'setup', customer: mine[0]!.id, metadata: { account_id: a.id } });
    const created = stripeFake.requests.find((r) => r.path === '/v1/customers' && r.params['metadata[account_id]'] === a.id)!;
    expect(created.idempotencyKey).toBe(`customer:${a.id}`);
    expect((await api.call('GET', '/v1/billing/payment-method', { token: a.token })).body.card).toMatchObject({
      brand: 'visa',
      last4: '4242',
    });
    // Forgotten here and detached at Stripe.
    const { card } = (await api.call('GET', '/v1/billing/payment-method', { token: a.token })).body;
    expect((await api.call('DELETE', `/v1/billing/payment-method/${card.id}`, { token: a.token })).status).toBe(200);
    expect(stripeFake.detached).toContain('pm_card_visa');
  });

  const intentsOf = (accountId: string) => stripeFake.paymentIntents.filter((pi) => pi.metadata.account_id === accountId);
  const createsOf = (accountId: string) =>
    stripeFake.requests.filter((r) => r.path === '/v1/payment_intents' && r.params['metadata[account_id]'] === accountId);
  const ruleOf = async (token: string) => (await api.call('GET', '/v1/billing/auto-topup', { token })).body;

  it('refuses what Stripe refuses: an unknown or removed parameter, a confirmed PaymentIntent that may redirect without return_url', async () => {
    const { default: Stripe } = await import('stripe');
    const url = new URL(stripeFake.url);
    const client = new Stripe('sk_test_fake_key_for_tests', {
      host: url.hostname,
      port: Number(url.port),
      protocol: 'http',
      maxNetworkRetries: 0,
    });
    const base = { amount: 500, currency: 'usd', customer: 'cus_x', payment_method: 'pm_card_visa', off_session: true, confirm: true };
    const refusal = (params: Record<string, unknown>) =>
      client.paymentIntents.create(params as never).then(
        () => null,
        (err: { statusCode?: number; code?: string; message: string }) => ({
          status: err.statusCode,
          code: err.code,
          message: err.message,
        }),
      );
    const before = stripeFake.paymentIntents.length;
    expect(await refusal(base)).toMatchObject({ status: 400, message: expect.stringContaining('A `return_url` must be specified') });
    expect(await refusal({ ...base, payment_method_types: ['card'] })).toMatchObject({
      status: 400,
      code: 'payment_method_types_no_longer_supported',
    });
    expect(await refusal({ ...base, automatic_payment_methods: { enabled: true }, surprise: 1 })).toMatchObject({
      status: 400,
      code: 'parameter_unknown',
      message: 'Received unknown parameter: surprise',
    });
    expect(await refusal({ currency: 'usd' })).toMatchObject({ status: 400, code: 'parameter_missing' });
    expect(stripeFake.paymentIntents.length).toBe(before);
    // What the service sends passes: redirects off, or a return_url.
    expect(await refusal({ ...base, automatic_payment_methods: { enabled: true, allow_redirects: 'never' } })).toBeNull();
    expect(await refusal({ ...base, return_url: 'https://example.com/back' })).toBeNull();
  });

  it('two loops at once: one PaymentIntent, without redirects, booked from its answer; its webhook ×4 books nothing more', async () => {
    const a = await customer('stripe-topup@example.com');
    await saveStripeCard(a.token, 'pm_card_visa');
    await setRule(a.token, rule({ belowCents: 300, amountCents: 2000 }));
    await Promise.all(Array.from({ length: 5 }, () => debit(a.id, 50)));
    await Promise.all([runAutoTopUps(), runAutoTopUps()]);
    const intents = intentsOf(a.id);
    expect(intents).toHaveLength(1);
    const [request] = createsOf(a.id);
    const day = new Date().toISOString().slice(0, 10);
    expect(request!.idempotencyKey).toBe(`autotopup:${a.id}:${day}:1`);
    const [invoice] = await invoicesOf(a.token);
    expect(request!.params).toMatchObject({
      amount: '2000',
      currency: 'usd',
      off_session: 'true',
      confirm: 'true',
      payment_method: 'pm_card_visa',
      'automatic_payment_methods[enabled]': 'true',
      'automatic_payment_methods[allow_redirects]': 'never',
      'metadata[invoice_id]': invoice!.id,
      'metadata[auto_topup]': 'true',
    });
    // The answer said succeeded: credited now, not when (or whether) the webhook comes.
    expect(invoice).toMatchObject({
      status: 'paid',
      creditedCents: 2100,
      payment: { provider: 'stripe', paymentIntentId: intents[0]!.id },
    });
    expect(await balanceOf(a.id)).toBe(250 + 2100);
    expect(await ruleOf(a.token)).toMatchObject({ inFlight: false, attemptsToday: 1, consecutiveFailures: 0 });

    const event = intentEvent(intents[0]!);
    const outcomes = await Promise.all(Array.from({ length: 4 }, () => deliver(event)));
    expect(outcomes.map((r) => r.body.outcome)).toEqual(Array(4).fill('already_fulfilled'));
    await runAutoTopUps();
    expect(await balanceOf(a.id)).toBe(250 + 2100);
    expect((await ledgerOf(a.id)).filter((e) => e.type === 'topup')).toHaveLength(1);
    expect(intentsOf(a.id)).toHaveLength(1);
  });

  it('a declined card: booked from the 402 answer, counted once with its event; after the limit the rule stops charging', async () => {
    const a = await customer('stripe-declined@example.com');
    await saveStripeCard(a.token, 'pm_card_chargeDeclined');
    await setRule(a.token, rule({ belowCents: 480, amountCents: 500, maxPerDay: 10 }));
    await debit(a.id, 50);
    await runAutoTopUps();
    const [intent] = intentsOf(a.id);
    expect(intent).toMatchObject({ status: 'requires_payment_method' });
    expect((await invoicesOf(a.token))[0]!.status).toBe('void');
    expect(await ruleOf(a.token)).toMatchObject({ inFlight: false, enabled: true, consecutiveFailures: 1 });
    // Stripe's event for the same failure, twice: nothing counted again.
    const event = intentEvent(intent!);
    expect((await deliver(event)).body.outcome).toBe('kept_void');
    expect((await deliver(event)).body.outcome).toBe('kept_void');
    expect((await eventsOf(a.token, 'auto_topup.failed')).map((e) => e.data)).toEqual([
      expect.objectContaining({ code: 'card_declined', consecutiveFailures: 1, ruleDisabled: false, paymentUrl: null }),
    ]);
    for (let n = 2; n <= 4; n++) {
      await debit(a.id, 10);
      await runAutoTopUps();
    }
    // Three failures (the platform's limit), then no fourth charge.
    expect(createsOf(a.id)).toHaveLength(3);
    expect((await eventsOf(a.token, 'auto_topup.failed')).map((e) => e.data.consecutiveFailures)).toEqual([3, 2, 1]);
    expect(await ruleOf(a.token)).toMatchObject({ enabled: false, disabledReason: 'failures', consecutiveFailures: 3 });
    expect((await invoicesOf(a.token)).map((i) => i.status)).toEqual(['void', 'void', 'void']);
    expect(await balanceOf(a.id)).toBe(500 - 80);
  });

  it('a charge Stripe refuses (4xx) and one without an answer count as failures too', async () => {
    const a = await customer('stripe-refused@example.com');
    await saveStripeCard(a.token, 'pm_card_visa');
    await setRule(a.token, rule({ belowCents: 480, amountCents: 500, maxPerDay: 10 }));
    stripeFake.failNext(400, { type: 'invalid_request_error', code: 'resource_missing', message: 'No such PaymentMethod' });
    await debit(a.id, 50);
    await runAutoTopUps();
    expect(await eventsOf(a.token, 'auto_topup.failed')).toEqual([
      expect.objectContaining({ data: expect.objectContaining({ code: 'resource_missing', consecutiveFailures: 1 }) }),
    ]);
    // Refused: nothing was charged, the attempt ends and its invoice is void.
    expect(await ruleOf(a.token)).toMatchObject({ inFlight: false, consecutiveFailures: 1, enabled: true });
    expect((await invoicesOf(a.token))[0]!.status).toBe('void');

    // No answer at all (the client's two retries lost too): counted, but Stripe may have charged, so it stays in flight.
    stripeFake.loseAnswers(3);
    await debit(a.id, 10);
    await runAutoTopUps();
    expect((await eventsOf(a.token, 'auto_topup.failed'))[0]!.data).toMatchObject({ code: 'provider_unreachable', consecutiveFailures: 2 });
    expect(await ruleOf(a.token)).toMatchObject({ inFlight: true, consecutiveFailures: 2 });
    expect((await invoicesOf(a.token)).map((i) => i.status)).toEqual(['open', 'void']);
  });

  it('a stale attempt whose PaymentIntent succeeded is read back from Stripe and booked, never charged again', async () => {
    const [a, b, c] = await Promise.all(
      ['stripe-stale-a@example.com', 'stripe-stale-b@example.com', 'stripe-stale-c@example.com'].map(customer),
    );
    for (const x of [a!, b!, c!]) {
      await saveStripeCard(x.token, 'pm_card_visa');
      await setRule(x.token, rule({ belowCents: 480, amountCents: 500, maxPerDay: 10 }));
      // Stripe charges, and every answer is lost (the create, and the client's two retries).
      stripeFake.loseAnswers(3);
      await debit(x.id, 50);
      await runAutoTopUps();
      expect(intentsOf(x.id)).toEqual([expect.objectContaining({ status: 'succeeded' })]);
      expect(await balanceOf(x.id)).toBe(450);
      expect(await ruleOf(x.token)).toMatchObject({ inFlight: true });
    }
    const later = (ms: number) => new Date(Date.now() + ms);
    // Within Stripe's idempotency window: the same request under the same key gets the same PaymentIntent.
    await debit(a!.id, 1);
    // Two loops at once: one reads it back.
    const atOnce = await Promise.all([attemptAutoTopUp(a!.id, later(31 * 60_000)), attemptAutoTopUp(a!.id, later(31 * 60_000))]);
    expect(atOnce.sort()).toEqual(['resolved', 'taken']);
    // Past it: a search by the invoice in the metadata.
    await debit(b!.id, 1);
    expect(await attemptAutoTopUp(b!.id, later(25 * 3_600_000))).toBe('resolved');
    expect(stripeFake.requests.filter((r) => r.path.startsWith('/v1/payment_intents/search'))).toHaveLength(1);
    // Its id was kept (the answer came, the booking did not finish): read back by id.
    await setAttributes(keys.autoTopUp(c!.id), { inFlightPaymentIntentId: intentsOf(c!.id)[0]!.id });
    await debit(c!.id, 1);
    expect(await attemptAutoTopUp(c!.id, later(31 * 60_000))).toBe('resolved');
    expect(stripeFake.requests.filter((r) => r.path === `/v1/payment_intents/${intentsOf(c!.id)[0]!.id}`)).toHaveLength(1);

    for (const x of [a!, b!, c!]) {
      expect(intentsOf(x.id)).toHaveLength(1); // one charge, however it was read back
      expect(await balanceOf(x.id)).toBe(449 + 525);
      expect((await invoicesOf(x.token)).map((i) => i.status)).toEqual(['paid']);
      expect(await ruleOf(x.token)).toMatchObject({ inFlight: false, consecutiveFailures: 0 });
      // Its webhook, late: nothing more.
      expect((await deliver(intentEvent(intentsOf(x.id)[0]!))).body.outcome).toBe('already_fulfilled');
    }
    expect(createsOf(c!.id)).toHaveLength(3); // the first try and the client's two retries, never one after
  });

  it('authentication required: Stripe Checkout for the same invoice, linked in the event and the view; paid there, the rule is on again', async () => {
    const a = await customer('stripe-sca@example.com');
    await saveStripeCard(a.token, 'pm_card_authenticationRequired');
    await setRule(a.token, rule({ belowCents: 480, amountCents: 500, maxPerDay: 10 }));
    await debit(a.id, 50);
    await runAutoTopUps();
    const [invoice] = await invoicesOf(a.token);
    const session = [...stripeFake.sessions.values()].find((s) => s.client_reference_id === invoice!.id)!;
    expect(session).toMatchObject({ mode: 'payment', amount_total: 500, metadata: { purpose: 'auto_topup_authentication' } });
    const [failed] = await eventsOf(a.token, 'auto_topup.failed');
    expect(failed!.data).toMatchObject({ code: 'authentication_required', ruleDisabled: true, paymentUrl: session.url });
    expect(await ruleOf(a.token)).toMatchObject({
      enabled: false,
      disabledReason: 'authentication_required',
      pendingPayment: { invoiceId: invoice!.id, url: session.url },
    });
    expect(invoice!.status).toBe('open');
    // Stripe's payment_failed event for it changes nothing: the invoice stays payable.
    expect((await deliver(intentEvent(intentsOf(a.id)[0]!))).body.outcome).toBe('kept_open');
    // No more off-session attempts, however often the balance crosses.
    for (let i = 0; i < 3; i++) {
      await debit(a.id, 10);
      await runAutoTopUps(new Date(Date.now() + (i + 1) * 3_600_000));
    }
    expect(createsOf(a.id)).toHaveLength(1);
    expect(await invoicesOf(a.token)).toHaveLength(1);

    const paid = signed(
      'checkout.session.completed',
      { ...session, status: 'complete', payment_status: 'paid', payment_intent: 'pi_test_on_session' },
      WEBHOOK_SECRET,
    );
    expect((await deliver(paid)).body.outcome).toBe('credited');
    expect((await deliver(paid)).body.outcome).toBe('already_fulfilled');
    expect(await balanceOf(a.id)).toBe(420 + 525);
    expect(await ruleOf(a.token)).toMatchObject({ enabled: true, disabledReason: null, consecutiveFailures: 0, pendingPayment: null });
  });

  it('no answer, then Stripe says authentication required: counted once, the rule stops with the link', async () => {
    const a = await customer('stripe-sca-late@example.com');
    await saveStripeCard(a.token, 'pm_card_authenticationRequired');
    await setRule(a.token, rule({ belowCents: 480, amountCents: 500, maxPerDay: 10 }));
    stripeFake.loseAnswers(3);
    await debit(a.id, 50);
    await runAutoTopUps();
    expect(await ruleOf(a.token)).toMatchObject({ enabled: true, inFlight: true, consecutiveFailures: 1 });
    expect((await deliver(intentEvent(intentsOf(a.id)[0]!))).body.outcome).toBe('kept_open');
    const [invoice] = await invoicesOf(a.token);
    const session = [...stripeFake.sessions.values()].find((s) => s.client_reference_id === invoice!.id)!;
    expect(await ruleOf(a.token)).toMatchObject({
      enabled: false,
      inFlight: false,
      consecutiveFailures: 1,
      disabledReason: 'authentication_required',
      pendingPayment: { invoiceId: invoice!.id, url: session.url },
    });
    expect((await eventsOf(a.token, 'auto_topup.failed')).map((e) => [e.data.code, e.data.consecutiveFailures, e.data.paymentUrl])).toEqual(
      [
        ['authentication_required', 1, session.url],
        ['provider_unreachable', 1, null],
      ],
    );
  });

  it('an event naming another account than its invoice’s credits nothing', async () => {
    const a = await customer('stripe-owner@example.com');
    const b = await customer('stripe-thief@example.com');
    await saveStripeCard(a.token, 'pm_card_visa');
    await setRule(a.token, rule({ belowCents: 400, amountCents: 500 }));
    await debit(a.id, 200);
    await runAutoTopUps();
    const [intent] = intentsOf(a.id);
    const forged = intentEvent({ ...intent!, metadata: { ...intent!.metadata, account_id: b.id } });
    expect((await deliver(forged)).body.outcome).toBe('unknown_invoice');
    expect(await balanceOf(b.id)).toBe(500);
    expect(await balanceOf(a.id)).toBe(300 + 525); // its own, booked once from Stripe's answer
  });
});
