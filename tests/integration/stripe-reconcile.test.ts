import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { startFakeStripe, type FakeEvent, type FakeStripe } from '../helpers/fake-stripe.ts';
import { signedStripeFields } from '../helpers/stripe-events.ts';
import { expectLedgerInvariant, ledgerOf } from '../helpers/money.ts';
import { getRaw, setAttributes } from '../helpers/db.ts';
import { customer } from '../helpers/customer.ts';
import { keys } from '../../shared/db/keys.ts';
import { FIRST_LOOKBACK_S, OVERLAP_S, reconcileStripeEvents } from '../../shared/payments/reconcile-events.ts';
import { STRIPE_EVENT_TYPES } from '../../shared/payments/stripe-events.ts';

/**
 * The Stripe event reconciliation (shared/payments/reconcile-events.ts): events Stripe would send
 * are recorded in the local Stripe fake (Stripe's API cannot run offline) and listed from it by
 * Stripe's own library; a test delivers an event's webhook (signed with Stripe's library) or never.
 * Whatever the order, each payment, refund and dispute is booked exactly once.
 */
const WEBHOOK_SECRET = 'whsec_test_reconcile_0123456789';
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

/** The event's webhook, as Stripe would deliver it: the same id, type and object, signed. */
const deliver = (event: FakeEvent) => {
  const { body, signature } = signedStripeFields({ type: event.type, data: event.data }, { secret: WEBHOOK_SECRET, id: event.id });
  return api.call('POST', '/v1/webhooks/stripe', {
    token: null,
    rawBody: body,
    headers: { 'content-type': 'application/json', 'stripe-signature': signature },
  });
};

/** A run now, as if the last one were an interval ago (the stored claim moved back, not slept out). */
async function runNow() {
  await setAttributes(keys.stripeEventsCursor(), { runAt: 0 });
  const summary = await reconcileStripeEvents(new Date());
  expect(summary).not.toBeNull();
  return summary!;
}

/** A checkout through the API and the paid session Stripe would report. */
async function paidCheckout(token: string, amountCents: number) {
  const res = await api.call('POST', '/v1/billing/checkout', { token, body: { amountCents } });
  expect(res.status).toBe(201);
  const session = [...stripeFake.sessions.values()].find((s) => s.client_reference_id === res.body.invoiceId)!;
  const paymentIntent = `pi_test_${res.body.invoiceId.replace(/-/g, '')}`;
  return {
    invoiceId: res.body.invoiceId as string,
    paymentIntent,
    session: { ...session, status: 'complete', payment_status: 'paid', payment_intent: paymentIntent },
  };
}

const topUpsOf = async (accountId: string, invoiceId: string) =>
  (await ledgerOf(accountId))
    .filter((e) => (e.reference as { invoiceId?: string }).invoiceId === invoiceId)
    .map((e) => [e.type, e.amountCents]);

describe('Stripe event reconciliation', () => {
  it('books a paid checkout whose webhook is never delivered, from the list of the handled types since the first look-back', async () => {
    const { token, id } = await customer(api, 'lost-webhook@example.com');
    const { invoiceId, session } = await paidCheckout(token, 2000);
    stripeFake.recordEvent('checkout.session.completed', session);
    const now = Math.floor(Date.now() / 1000);
    const summary = await reconcileStripeEvents(new Date(now * 1000)); // the first run ever: no claim to move back
    expect(summary).toMatchObject({ booked: 1, failed: 0, unreadable: 0 });
    expect(await topUpsOf(id, invoiceId)).toEqual([
      ['topup', 2000],
      ['bonus', 100],
    ]);
    expect((await getRaw(keys.account(id)))!.balanceCents).toBe(500 + 2100);
    const listing = stripeFake.requests.filter((r) => r.path.startsWith('/v1/events')).at(-1)!;
    const query = new URLSearchParams(listing.path.split('?')[1]);
    expect(STRIPE_EVENT_TYPES.map((_, i) => query.get(`types[${i}]`))).toEqual(STRIPE_EVENT_TYPES);
    expect(Number(query.get('created[gte]'))).toBeLessThanOrEqual(now - FIRST_LOOKBACK_S - OVERLAP_S);
    expect(Number(query.get('created[gte]'))).toBeGreaterThan(now - FIRST_LOOKBACK_S - OVERLAP_S - 60);
  });

  it('the webhook of an event the run booked arrives late: booked once', async () => {
    const { token, id } = await customer(api, 'late-webhook@example.com');
    const { invoiceId, session } = await paidCheckout(token, 1500);
    const event = stripeFake.recordEvent('checkout.session.completed', session);
    expect((await runNow()).booked).toBe(1);
    const late = await deliver(event);
    expect(late.status).toBe(200);
    expect(late.body.outcome).toBe('already_fulfilled');
    expect(await topUpsOf(id, invoiceId)).toEqual([
      ['topup', 1500],
      ['bonus', 75],
    ]);
  });

  it('an event the webhook booked is listed again by the run: nothing changes', async () => {
    const { token, id } = await customer(api, 'on-time@example.com');
    const { invoiceId, session } = await paidCheckout(token, 1000);
    const event = stripeFake.recordEvent('checkout.session.completed', session);
    expect((await deliver(event)).body.outcome).toBe('credited');
    const balance = (await getRaw(keys.account(id)))!.balanceCents;
    const summary = await runNow();
    expect(summary.booked).toBe(0);
    expect(summary.unchanged).toBeGreaterThanOrEqual(1);
    expect((await getRaw(keys.account(id)))!.balanceCents).toBe(balance);
    expect(await topUpsOf(id, invoiceId)).toHaveLength(2);
  });

  it('a payment and its refund, both undelivered and listed newest first, are booked oldest first, once each', async () => {
    const { token, id } = await customer(api, 'refund-lost@example.com');
    const { invoiceId, paymentIntent, session } = await paidCheckout(token, 2000);
    const created = Math.floor(Date.now() / 1000);
    stripeFake.recordEvent('checkout.session.completed', session, { created });
    const refund = stripeFake.recordEvent(
      'charge.refunded',
      {
        id: `ch_${invoiceId}`,
        object: 'charge',
        amount: 2000,
        amount_refunded: 500,
        currency: 'usd',
        payment_intent: paymentIntent,
        metadata: {},
      },
      { created: created + 1 },
    );
    expect((await runNow()).booked).toBe(2);
    expect((await deliver(refund)).body.outcome).toBe('already_booked');
    expect((await runNow()).booked).toBe(0);
    const entries = await topUpsOf(id, invoiceId);
    // One refund entry: 500 ¢ and its share of the bonus (floor(100 × 500 / 2000) = 25 ¢).
    expect(entries.filter(([type]) => type === 'refund').map(([, cents]) => cents)).toEqual([-525]);
    expect((await getRaw(keys.account(id)))!.balanceCents).toBe(500 + 2100 - 525);
  });

  it('runs at most once an interval (one claim on the cursor), and lists again from the cursor less the overlap', async () => {
    const summary = await runNow();
    const listings = () => stripeFake.requests.filter((r) => r.path.startsWith('/v1/events')).length;
    const before = listings();
    expect(await reconcileStripeEvents(new Date())).toBeNull(); // within the interval: another run's turn
    expect(listings()).toBe(before);
    expect((await getRaw(keys.stripeEventsCursor()))!.createdFrom).toBe(summary.createdFrom);
    await runNow();
    const query = new URLSearchParams(
      stripeFake.requests
        .filter((r) => r.path.startsWith('/v1/events'))
        .at(-1)!
        .path.split('?')[1],
    );
    expect(Number(query.get('created[gte]'))).toBe(summary.createdFrom - OVERLAP_S);
  });

  it('the every-minute billing entry runs it and reports its summary', async () => {
    const { token, id } = await customer(api, 'every-minute@example.com');
    const { invoiceId, session } = await paidCheckout(token, 800);
    stripeFake.recordEvent('checkout.session.completed', session);
    await setAttributes(keys.stripeEventsCursor(), { runAt: 0 });
    const { minutePasses } = await import('../../functions/billing-pass/handler.ts');
    const summary = await minutePasses();
    expect(summary.stripeEvents).toMatchObject({ booked: 1, failed: 0 });
    expect(await topUpsOf(id, invoiceId)).toEqual([
      ['topup', 800],
      ['bonus', 40],
    ]);
  });
});
