import { signedStripeFields } from '../helpers/stripe-events.ts';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, expectEnvelope, type TestApi } from '../helpers/stack.ts';
import { startFakeStripe, type FakeStripe } from '../helpers/fake-stripe.ts';
import { expectLedgerInvariant, ledgerOf } from '../helpers/money.ts';
import { getRaw, queryPartition } from '../helpers/db.ts';
import { keys } from '../../shared/db/keys.ts';
import { resetConfig } from '../../shared/config/env.ts';
import { customer as newCustomer } from '../helpers/customer.ts';

/**
 * Top-ups end to end: checkout through Stripe's own client against a local fake of Stripe's API
 * (STRIPE_API_URL), webhooks signed with Stripe's own library, invoices, and the sandbox.
 */
const WEBHOOK_SECRET = 'whsec_test_0123456789abcdef';
let stripeFake: FakeStripe;
let api: TestApi;

beforeAll(async () => {
  stripeFake = await startFakeStripe();
  process.env.STRIPE_SECRET_KEY = 'sk_test_fake_key_for_tests';
  process.env.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET;
  process.env.STRIPE_API_URL = stripeFake.url;
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0 } });
});
afterAll(async () => {
  await api?.stop();
  await stripeFake?.close();
});
afterEach(async () => {
  await expectLedgerInvariant();
});

/** Every customer of this file, so the last test can read every invoice the others made. */
const customers: { token: string; id: string }[] = [];

async function customer(email: string) {
  const { token, id } = await newCustomer(api, email);
  customers.push({ token, id });
  return { token, id: id as string };
}

/** The event Stripe would send about a session, as Stripe signs it. */
function stripeEvent(type: string, session: Record<string, unknown>, overrides: { timestamp?: number; secret?: string } = {}) {
  return signedEvent({ type, data: { object: session } }, overrides);
}

const signedEvent = (fields: Record<string, unknown>, overrides: { timestamp?: number; secret?: string } = {}) =>
  signedStripeFields(fields, { secret: overrides.secret ?? WEBHOOK_SECRET, timestamp: overrides.timestamp });

const deliver = (event: { body: string; signature: string }) =>
  api.call('POST', '/v1/webhooks/stripe', {
    token: null,
    rawBody: event.body,
    headers: { 'content-type': 'application/json', 'stripe-signature': event.signature },
  });

/** A checkout through the API, and the session the fake Stripe holds for it. */
async function checkout(token: string, amountCents: number) {
  const res = await api.call('POST', '/v1/billing/checkout', {
    token,
    body: { amountCents, successUrl: 'https://dashboard.example.com/paid' },
  });
  expect(res.status).toBe(201);
  const session = [...stripeFake.sessions.values()].find((s) => s.client_reference_id === res.body.invoiceId)!;
  return { ...(res.body as { url: string; invoiceNumber: string; invoiceId: string }), session };
}

const paid = (session: Record<string, unknown>) => ({
  ...session,
  status: 'complete',
  payment_status: 'paid',
  payment_intent: 'pi_test_123',
});

describe('checkout', () => {
  it('opens an invoice and a Stripe Checkout Session (payment mode, dynamic amount, our idempotency key)', async () => {
    const { token, id } = await customer('buyer@example.com');
    const config = await api.call('GET', '/v1/billing/config', { token });
    expect(config.body).toEqual({
      currency: 'usd',
      minimumTopUpCents: 500,
      maximumTopUpCents: 100_000,
      bonusPercent: 5,
      paymentsEnabled: true,
      provider: 'stripe',
    });
    const result = await checkout(token, 2500);
    expect(result.url).toBe(`https://checkout.stripe.test/c/pay/${result.session.id}`);
    expect(result.invoiceNumber).toMatch(/^INV-\d{4}-\d{6}$/);
    const request = stripeFake.requests.find((r) => r.params.client_reference_id === result.invoiceId)!;
    expect(request.params).toMatchObject({
      mode: 'payment',
      'line_items[0][quantity]': '1',
      'line_items[0][price_data][currency]': 'usd',
      'line_items[0][price_data][unit_amount]': '2500',
      'metadata[invoice_id]': result.invoiceId,
      'payment_intent_data[metadata][invoice_id]': result.invoiceId,
      success_url: 'https://dashboard.example.com/paid',
    });
    expect(request.idempotencyKey).toBe(`checkout:${result.invoiceId}`);
    expect(request.authorization).toBe('Bearer sk_test_fake_key_for_tests');
    const invoice = await api.call('GET', `/v1/invoices/${result.invoiceId}`, { token });
    expect(invoice.body).toMatchObject({
      number: result.invoiceNumber,
      status: 'open',
      amountCents: 2500,
      lineItems: [{ type: 'topup', description: 'Credit top-up', amountCents: 2500, chargedCents: 2500, creditedCents: 0 }],
      totalCents: 2500,
      paidCents: 0,
      credits: [],
      creditedCents: 0,
      payment: { provider: 'stripe', sessionId: result.session.id },
    });
    expect((await getRaw(keys.account(id)))!.balanceCents).toBe(500); // nothing credited before the webhook
  });

  it('refuses amounts outside the bounds with the field named, and without billing:write', async () => {
    const { token } = await customer('bounds@example.com');
    for (const amountCents of [499, 100_001, 0, -5]) {
      const res = await api.call('POST', '/v1/billing/checkout', { token, body: { amountCents } });
      expectEnvelope(res, 400, 'validation_failed');
      expect(res.body.error.details.issues[0].field).toBe('body.amountCents');
    }
    const reader = (await api.call('POST', '/v1/keys', { token, body: { name: 'reader', scopes: ['billing:read'] } })).body.secret;
    expectEnvelope(await api.call('POST', '/v1/billing/checkout', { token: reader, body: { amountCents: 1000 } }), 403, 'forbidden');
    expect((await api.call('GET', '/v1/invoices', { token: reader })).status).toBe(200);
    const writer = (await api.call('POST', '/v1/keys', { token, body: { name: 'writer', scopes: ['billing:write'] } })).body.secret;
    expectEnvelope(await api.call('GET', '/v1/invoices', { token: writer }), 403, 'forbidden');
  });

  it('a Stripe failure voids the invoice (its number stays used) and answers 502', async () => {
    const { token } = await customer('stripedown@example.com');
    stripeFake.failNext(500);
    const res = await api.call('POST', '/v1/billing/checkout', { token, body: { amountCents: 1000 } });
    expectEnvelope(res, 502, 'payment_provider_error');
    const invoices = (await api.call('GET', '/v1/invoices', { token })).body.data;
    expect(invoices).toHaveLength(1);
    expect(invoices[0]).toMatchObject({ status: 'void', number: res.body.error.details.invoiceNumber });
  });

  it('invoice numbers stay sequential and gapless with 20 concurrent checkouts', async () => {
    const buyers = await Promise.all(Array.from({ length: 5 }, (_, i) => customer(`rush${i}@example.com`)));
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        api.call('POST', '/v1/billing/checkout', { token: buyers[i % 5]!.token, body: { amountCents: 500 + i } }),
      ),
    );
    expect(results.filter((r) => r.status !== 201).map((r) => r.text)).toEqual([]);
    const numbers = results.map((r) => Number(r.body.invoiceNumber.split('-')[2])).sort((a, b) => a - b);
    expect(new Set(numbers).size).toBe(20);
    expect(numbers.at(-1)! - numbers[0]! + 1).toBe(20); // consecutive: no gap, no repeat
    const year = new Date().getUTCFullYear();
    expect(Number((await getRaw(keys.invoiceCounter(year)))!.last)).toBe(numbers.at(-1));
  }, 60_000);
});

describe('the webhook', () => {
  it('credits amount and bonus once, as two ledger entries and two credits, however often and concurrently it arrives', async () => {
    const { token, id } = await customer('paid@example.com');
    const { invoiceId, session } = await checkout(token, 2000);
    const event = stripeEvent('checkout.session.completed', paid(session));
    const results = await Promise.all([1, 2, 3, 4, 5].map(() => deliver(event)));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(results.map((r) => r.body.outcome).sort()).toEqual([
      'already_fulfilled',
      'already_fulfilled',
      'already_fulfilled',
      'already_fulfilled',
      'credited',
    ]);
    expect((await getRaw(keys.account(id)))!.balanceCents).toBe(500 + 2000 + 100);
    const entries = (await ledgerOf(id)).filter((e) => (e.reference as { invoiceId?: string }).invoiceId === invoiceId);
    expect(entries.map((e) => [e.type, e.amountCents, e.granted])).toEqual([
      ['topup', 2000, false],
      ['bonus', 100, true],
    ]);
    const invoice = (await api.call('GET', `/v1/invoices/${invoiceId}`, { token })).body;
    // A bonus is recorded as a line item: the card paid the top-up line, the balance received both lines.
    expect(invoice.lineItems).toEqual([
      { type: 'topup', description: 'Credit top-up', amountCents: 2000, chargedCents: 2000, creditedCents: 2000 },
      { type: 'bonus', description: 'Top-up bonus (5 %)', amountCents: 100, chargedCents: 0, creditedCents: 100 },
    ]);
    expect(invoice).toMatchObject({
      status: 'paid',
      totalCents: 2000,
      paidCents: 2000,
      credits: [
        { type: 'topup', description: 'Credit top-up', amountCents: 2000 },
        { type: 'bonus', description: 'Top-up bonus (5 %)', amountCents: 100 },
      ],
      creditedCents: 2100,
      paidAt: expect.any(String),
      payment: { paymentIntentId: 'pi_test_123' },
    });
    // A different event id for the same payment (async success after completion): still once.
    expect((await deliver(stripeEvent('checkout.session.async_payment_succeeded', paid(session)))).body.outcome).toBe('already_fulfilled');
    expect((await getRaw(keys.account(id)))!.balanceCents).toBe(2600);
    const activity = (await api.call('GET', '/v1/account/logs', { token })).body.data.filter(
      (e: { action: string }) => e.action === 'billing.payment',
    );
    expect(activity).toHaveLength(1);
  });

  it('expired after paid stays paid; expired before payment voids; a late payment of a void invoice still credits', async () => {
    const { token, id } = await customer('order@example.com');
    const first = await checkout(token, 1000);
    await deliver(stripeEvent('checkout.session.completed', paid(first.session)));
    const late = await deliver(stripeEvent('checkout.session.expired', { ...first.session, status: 'expired' }));
    expect(late.body.outcome).toBe('kept_paid');
    expect((await api.call('GET', `/v1/invoices/${first.invoiceId}`, { token })).body.status).toBe('paid');

    const second = await checkout(token, 1000);
    expect((await deliver(stripeEvent('checkout.session.expired', { ...second.session, status: 'expired' }))).body.outcome).toBe('voided');
    expect((await api.call('GET', `/v1/invoices/${second.invoiceId}`, { token })).body).toMatchObject({
      status: 'void',
      voidedAt: expect.any(String),
    });
    // Out of order: the money did arrive, so the void invoice turns paid and is credited.
    expect((await deliver(stripeEvent('checkout.session.completed', paid(second.session)))).body.outcome).toBe('credited');
    expect((await api.call('GET', `/v1/invoices/${second.invoiceId}`, { token })).body.status).toBe('paid');
    expect((await getRaw(keys.account(id)))!.balanceCents).toBe(500 + 2 * 1050);
  });

  it('a delayed payment: completed unpaid keeps the invoice open, async success credits, async failure voids', async () => {
    const { token, id } = await customer('delayed@example.com');
    const a = await checkout(token, 800);
    expect(
      (await deliver(stripeEvent('checkout.session.completed', { ...a.session, status: 'complete', payment_status: 'unpaid' }))).body
        .outcome,
    ).toBe('awaiting_payment');
    expect((await api.call('GET', `/v1/invoices/${a.invoiceId}`, { token })).body.status).toBe('open');
    expect((await deliver(stripeEvent('checkout.session.async_payment_succeeded', paid(a.session)))).body.outcome).toBe('credited');
    const b = await checkout(token, 900);
    expect(
      (await deliver(stripeEvent('checkout.session.async_payment_failed', { ...b.session, status: 'complete', payment_status: 'unpaid' })))
        .body.outcome,
    ).toBe('voided');
    expect((await getRaw(keys.account(id)))!.balanceCents).toBe(500 + 800 + 40);
  });

  it('bad, foreign, old or future-dated signatures are 400 and change nothing', async () => {
    const { token, id } = await customer('forger@example.com');
    const { session, invoiceId } = await checkout(token, 5000);
    const good = stripeEvent('checkout.session.completed', paid(session));
    const now = Math.floor(Date.now() / 1000);
    const cases = [
      { body: good.body, signature: stripeEvent('checkout.session.completed', paid(session), { secret: 'whsec_someone_else' }).signature },
      { body: good.body.replace('"amount_total":5000', '"amount_total":50000'), signature: good.signature },
      stripeEvent('checkout.session.completed', paid(session), { timestamp: now - 600 }),
      stripeEvent('checkout.session.completed', paid(session), { timestamp: now + 600 }),
      stripeEvent('checkout.session.completed', paid(session), { timestamp: now + 310 }), // just past the 5 minutes
      { body: good.body, signature: 't=123,v1=deadbeef' },
      { body: good.body, signature: '' },
    ];
    for (const event of cases) {
      const res = await api.call('POST', '/v1/webhooks/stripe', {
        token: null,
        rawBody: event.body,
        headers: { 'content-type': 'application/json', ...(event.signature ? { 'stripe-signature': event.signature } : {}) },
      });
      expectEnvelope(res, 400, 'invalid_signature');
    }
    expect((await getRaw(keys.account(id)))!.balanceCents).toBe(500);
    expect((await api.call('GET', `/v1/invoices/${invoiceId}`, { token })).body.status).toBe('open');
  });

  it('a signature dated a little ahead (clock skew under 5 minutes) is accepted', async () => {
    const { token, id } = await customer('skew@example.com');
    const { session } = await checkout(token, 1000);
    const ahead = stripeEvent('checkout.session.completed', paid(session), { timestamp: Math.floor(Date.now() / 1000) + 240 });
    expect((await deliver(ahead)).body.outcome).toBe('credited');
    expect((await getRaw(keys.account(id)))!.balanceCents).toBe(500 + 1050);
  });

  it('a signed Checkout Session event without a readable data.object is 400 naming the field and changes nothing', async () => {
    const { token, id } = await customer('malformed@example.com');
    const { session, invoiceNumber } = await checkout(token, 3000);
    const ledgerBefore = await ledgerOf(id);
    const invoiceBefore = await getRaw(keys.invoice(id, invoiceNumber));
    const cases: [Record<string, unknown>, string][] = [
      [{ type: 'checkout.session.completed' }, 'body.data'],
      [{ type: 'checkout.session.completed', data: {} }, 'body.data.object'],
      [{ type: 'checkout.session.completed', data: { object: 'cs_test_not_an_object' } }, 'body.data.object'],
      [
        { type: 'checkout.session.completed', data: { object: { ...paid(session), amount_total: 3000.5 } } },
        'body.data.object.amount_total',
      ],
      [
        { type: 'checkout.session.completed', data: { object: { ...paid(session), amount_total: '3000' } } },
        'body.data.object.amount_total',
      ],
      [
        { type: 'checkout.session.async_payment_succeeded', data: { object: { ...paid(session), client_reference_id: 42 } } },
        'body.data.object.client_reference_id',
      ],
      [{ type: 'checkout.session.expired', data: { object: null } }, 'body.data.object'],
      [{ type: 42, data: { object: paid(session) } }, 'body.type'],
    ];
    for (const [fields, field] of cases) {
      const res = await deliver(signedEvent(fields));
      expectEnvelope(res, 400, 'validation_failed');
      expect(res.body.error.details.issues.map((i: { field: string }) => i.field)).toContain(field);
    }
    expect(await ledgerOf(id)).toEqual(ledgerBefore);
    expect(await getRaw(keys.invoice(id, invoiceNumber))).toEqual(invoiceBefore);
    expect((await getRaw(keys.account(id)))!.balanceCents).toBe(500);
    // Nothing was half done: the well-formed delivery still credits, once.
    expect((await deliver(stripeEvent('checkout.session.completed', paid(session)))).body.outcome).toBe('credited');
    expect((await getRaw(keys.account(id)))!.balanceCents).toBe(500 + 3150);
  });

  it('an amount that does not match the invoice is not credited; unknown invoices and other events are acknowledged', async () => {
    const { token, id } = await customer('mismatch@example.com');
    const { session } = await checkout(token, 1500);
    expect((await deliver(stripeEvent('checkout.session.completed', { ...paid(session), amount_total: 150 }))).body.outcome).toBe(
      'amount_mismatch',
    );
    expect(
      (
        await deliver(
          stripeEvent('checkout.session.completed', {
            ...paid(session),
            client_reference_id: '00000000-0000-4000-8000-000000000000',
            metadata: {},
          }),
        )
      ).body.outcome,
    ).toBe('unknown_invoice');
    expect((await deliver(stripeEvent('customer.created', { id: 'cus_1', object: 'customer' }))).body.outcome).toBe('ignored');
    expect((await getRaw(keys.account(id)))!.balanceCents).toBe(500);
  });

  it('a top-up that brings the balance above zero unsuspends the servers on the panel', async () => {
    const { token, id } = await customer('comeback@example.com');
    const server = (
      await api.call('POST', '/v1/servers', { token, body: { name: 'back online', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 } })
    ).body;
    await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: -600, note: 'overdrawn' } });
    await api.call('POST', '/dev/billing/run', { token: null, body: {} });
    expect((await api.call('GET', `/v1/servers/${server.id}`, { token })).body.status).toBe('suspended');
    expect(api.panel!.sim.server(server.identifier)!.status).toBe('suspended');
    const { session } = await checkout(token, 1000);
    expect((await deliver(stripeEvent('checkout.session.completed', paid(session)))).body.outcome).toBe('credited');
    expect((await api.call('GET', `/v1/servers/${server.id}`, { token })).body.status).toBe('active');
    expect(api.panel!.sim.server(server.identifier)!.status).not.toBe('suspended');
  });
});

describe('invoices', () => {
  it("are listed newest first; another account's invoice is 404 like an unknown one", async () => {
    const a = await customer('inv-a@example.com');
    const b = await customer('inv-b@example.com');
    const first = await checkout(a.token, 600);
    const second = await checkout(a.token, 700);
    const list = await api.call('GET', '/v1/invoices', { token: a.token });
    expect(list.body.data.map((i: { id: string }) => i.id)).toEqual([second.invoiceId, first.invoiceId]);
    expectEnvelope(await api.call('GET', `/v1/invoices/${first.invoiceId}`, { token: b.token }), 404, 'not_found');
    expectEnvelope(await api.call('GET', '/v1/invoices/00000000-0000-4000-8000-000000000000', { token: b.token }), 404, 'not_found');
    expect((await api.call('GET', '/v1/invoices', { token: b.token })).body.data).toEqual([]);
  });
});

describe('invoice totals', () => {
  it('a top-up at a bonus rate of 0 has the top-up as its one line (no bonus line of 0) and its one credit', async () => {
    const { token, id } = await customer('nobonus@example.com');
    expect((await api.call('PUT', '/v1/admin/settings', { body: { topUpBonusPercent: 0 } })).status).toBe(200);
    try {
      const { session, invoiceId } = await checkout(token, 1200);
      expect((await deliver(stripeEvent('checkout.session.completed', paid(session)))).body.outcome).toBe('credited');
      expect((await api.call('GET', `/v1/invoices/${invoiceId}`, { token })).body).toMatchObject({
        status: 'paid',
        bonusPercent: 0,
        lineItems: [{ type: 'topup', description: 'Credit top-up', amountCents: 1200, chargedCents: 1200, creditedCents: 1200 }],
        totalCents: 1200,
        paidCents: 1200,
        credits: [{ type: 'topup', amountCents: 1200 }],
        creditedCents: 1200,
      });
      const entries = (await ledgerOf(id)).filter((e) => (e.reference as { invoiceId?: string }).invoiceId === invoiceId);
      expect(entries.map((e) => [e.type, e.amountCents])).toEqual([['topup', 1200]]);
    } finally {
      await api.call('PUT', '/v1/admin/settings', { body: { topUpBonusPercent: 5 } });
    }
  });
});

describe('the local sandbox (no STRIPE_SECRET_KEY)', () => {
  it('serves a payment page that completes through the same signed webhook', async () => {
    delete process.env.STRIPE_SECRET_KEY;
    delete process.env.STRIPE_WEBHOOK_SECRET;
    resetConfig();
    try {
      const { token, id } = await customer('sandbox@example.com');
      expect((await api.call('GET', '/v1/billing/config', { token })).body).toMatchObject({ provider: 'sandbox', paymentsEnabled: true });
      const res = await api.call('POST', '/v1/billing/checkout', { token, body: { amountCents: 1000 } });
      expect(res.body.url).toBe(`${api.baseUrl}/dev/checkout/${res.body.invoiceId}`);
      const page = await fetch(res.body.url);
      expect(await page.text()).toContain(res.body.invoiceNumber);
      const requestsBefore = stripeFake.requests.length;
      const done = await api.call('POST', `/dev/checkout/${res.body.invoiceId}/complete`, { token: null, body: { outcome: 'paid' } });
      expect(done.body).toEqual({ received: true, outcome: 'credited' });
      expect(stripeFake.requests.length).toBe(requestsBefore); // Stripe never called
      expect((await getRaw(keys.account(id)))!.balanceCents).toBe(500 + 1050);
      expect((await api.call('GET', `/v1/invoices/${res.body.invoiceId}`, { token })).body).toMatchObject({
        status: 'paid',
        payment: { provider: 'sandbox' },
      });
    } finally {
      process.env.STRIPE_SECRET_KEY = 'sk_test_fake_key_for_tests';
      process.env.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET;
      resetConfig();
    }
  });
});

interface InvoiceBody {
  id: string;
  status: 'open' | 'paid' | 'void';
  amountCents: number;
  bonusPercent: number;
  lineItems: { type: string; amountCents: number; chargedCents: number; creditedCents: number }[];
  totalCents: number;
  paidCents: number;
  credits: { type: string; amountCents: number }[];
  creditedCents: number;
}

const sumOf = (lines: { amountCents: number }[]) => lines.reduce((sum, line) => sum + line.amountCents, 0);
const sumBy = <L>(lines: L[], field: (line: L) => number) => lines.reduce((sum, line) => sum + field(line), 0);

// Last in the file: it reads every invoice the tests above made.
describe('every invoice of this file', () => {
  it('adds up: what the lines charged sums to the total, what they credited to what was credited, line by line as the ledger credited it (open, paid with and without bonus, void)', async () => {
    const invoices: InvoiceBody[] = [];
    let stored = 0;
    const credited = new Map<string, number>();
    const entriesOf = new Map<string, [string, number][]>();
    for (const c of customers) {
      const res = await api.call('GET', '/v1/invoices?limit=100', { token: c.token });
      expect(res.body.nextCursor).toBeNull();
      invoices.push(...res.body.data);
      stored += (await queryPartition(keys.invoicePrefix(c.id))).length;
      for (const entry of await ledgerOf(c.id)) {
        const invoiceId = (entry.reference as { invoiceId?: string }).invoiceId;
        if (!invoiceId) continue;
        credited.set(invoiceId, (credited.get(invoiceId) ?? 0) + Number(entry.amountCents));
        entriesOf.set(invoiceId, [...(entriesOf.get(invoiceId) ?? []), [String(entry.type), Number(entry.amountCents)]]);
      }
    }
    expect(invoices).toHaveLength(stored);
    for (const invoice of invoices) {
      const label = `${invoice.id} (${invoice.status})`;
      expect(
        sumBy(invoice.lineItems, (line) => line.chargedCents),
        label,
      ).toBe(invoice.totalCents);
      expect(
        sumBy(invoice.lineItems, (line) => line.creditedCents),
        label,
      ).toBe(invoice.creditedCents);
      expect(sumOf(invoice.credits), label).toBe(invoice.creditedCents);
      // Each line credited exactly what its ledger entry did (the bonus line: the bonus entry), and only a top-up is charged.
      const creditedLines = invoice.lineItems.filter((line) => line.creditedCents > 0).map((line) => [line.type, line.creditedCents]);
      expect(creditedLines, label).toEqual(entriesOf.get(invoice.id) ?? []);
      for (const line of invoice.lineItems) expect(line.chargedCents, label).toBe(line.type === 'topup' ? line.amountCents : 0);
      expect(invoice.totalCents, label).toBe(invoice.amountCents);
      expect(invoice.creditedCents, label).toBe(credited.get(invoice.id) ?? 0);
      expect(invoice.paidCents, label).toBe(invoice.status === 'paid' ? invoice.totalCents : 0);
      if (invoice.status !== 'paid') expect(invoice.credits, label).toEqual([]);
    }
    const kinds = new Set(
      invoices.map((i) =>
        i.status === 'paid' ? (i.lineItems.some((c) => c.type === 'bonus') ? 'paid with bonus' : 'paid without bonus') : i.status,
      ),
    );
    expect([...kinds].sort()).toEqual(['open', 'paid with bonus', 'paid without bonus', 'void']);
  });
});
