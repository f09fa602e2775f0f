import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../shared/db/keys.ts';
import { customer } from '../helpers/customer.ts';
import { getRaw } from '../helpers/db.ts';
import { startFakeStripe, type FakeStripe } from '../helpers/fake-stripe.ts';
import { expectLedgerInvariant } from '../helpers/money.ts';
import { pdfText } from '../helpers/pdf-text.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { signedStripeEvent } from '../helpers/stripe-events.ts';

/**
 * A deployment set to euros, end to end: the operator chooses the currency at set-up (admin PUT,
 * while only the operator's own account exists), and then prices, the billing rules, the Checkout
 * Session sent to Stripe (the local fake of Stripe's API), the invoice's JSON and PDF, and the
 * webhook's check of what was paid are all in EUR. Once a customer exists the currency is fixed.
 * The steps share one stack and run in order.
 */
const WEBHOOK_SECRET = 'whsec_test_currency_0123456789';
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

let n = 0;
const signed = (type: string, object: Record<string, unknown>) =>
  signedStripeEvent(type, object, { secret: WEBHOOK_SECRET, id: `evt_cur_${++n}` });

const deliver = (event: { body: string; signature: string }) =>
  api.call('POST', '/v1/webhooks/stripe', {
    token: null,
    rawBody: event.body,
    headers: { 'content-type': 'application/json', 'stripe-signature': event.signature },
  });

const balance = async (id: string) => Number((await getRaw(keys.account(id)))!.balanceCents);

/** Shared by the ordered steps below. */
const state: { buyer?: { token: string; id: string }; invoiceId?: string; paymentIntent?: string } = {};

describe('a deployment set to EUR', () => {
  it('takes the currency at set-up, while only the operator has an account; refuses one Stripe does not charge with two decimals', async () => {
    expect((await api.call('GET', '/v1/admin/settings')).body.currency).toBe('usd');
    for (const currency of ['jpy', 'kwd', 'EUR', 'euro']) {
      const refused = await api.call('PUT', '/v1/admin/settings', { body: { currency } });
      expectEnvelope(refused, 400, 'validation_failed');
      expect(refused.body.error.details.issues[0].field).toBe('body.currency');
    }
    const res = await api.call('PUT', '/v1/admin/settings', { body: { currency: 'eur' } });
    expect(res.status).toBe(200);
    expect(res.body.currency).toBe('eur');
    expect((await api.call('GET', '/v1/admin/settings')).body.currency).toBe('eur');
  });

  it('shows prices and the top-up rules in EUR', async () => {
    const pricing = await api.call('GET', '/v1/pricing', { token: null });
    expect(pricing.status).toBe(200);
    expect(pricing.body.currency).toBe('eur');
    state.buyer = await customer(api, 'euro-buyer@example.com');
    const config = await api.call('GET', '/v1/billing/config', { token: state.buyer.token });
    expect(config.body).toMatchObject({ currency: 'eur', paymentsEnabled: true, provider: 'stripe' });
  });

  it('refuses a change of currency once a customer account exists, and changes nothing', async () => {
    const read = await api.call('GET', '/v1/admin/settings');
    const stored = await getRaw(keys.settings());
    for (const body of [{ currency: 'gbp' }, { currency: 'usd', trialCreditCents: read.body.trialCreditCents + 1 }]) {
      const res = await api.call('PUT', '/v1/admin/settings', { body });
      expectEnvelope(res, 409, 'conflict');
      expect(res.body.error.message).toContain('The currency is fixed once customer accounts exist');
      expect(res.body.error.message).toContain('EUR');
    }
    expect(await getRaw(keys.settings())).toEqual(stored);
    expect((await api.call('GET', '/v1/admin/settings')).body).toEqual(read.body);
    // Sending back what GET returned (the same currency) is still fine.
    expect((await api.call('PUT', '/v1/admin/settings', { body: read.body })).status).toBe(200);
  });

  it('opens the Checkout Session in eur and the invoice keeps its currency', async () => {
    const { token } = state.buyer!;
    const res = await api.call('POST', '/v1/billing/checkout', { token, body: { amountCents: 2500 } });
    expect(res.status).toBe(201);
    state.invoiceId = res.body.invoiceId;
    const request = stripeFake.requests.find((r) => r.params.client_reference_id === state.invoiceId)!;
    expect(request.params).toMatchObject({
      'line_items[0][price_data][currency]': 'eur',
      'line_items[0][price_data][unit_amount]': '2500',
    });
    const invoice = await api.call('GET', `/v1/invoices/${state.invoiceId}`, { token });
    expect(invoice.body).toMatchObject({ currency: 'eur', amountCents: 2500, status: 'open' });
    expect((await getRaw(keys.invoice(state.buyer!.id, res.body.invoiceNumber)))!.currency).toBe('eur');
  });

  it('credits an eur payment of the invoice and refuses the same amount in usd', async () => {
    const { id, token } = state.buyer!;
    const session = [...stripeFake.sessions.values()].find((s) => s.client_reference_id === state.invoiceId)!;
    expect(session.currency).toBe('eur');
    state.paymentIntent = `pi_cur_${state.invoiceId!.replace(/-/g, '').slice(0, 16)}`;
    const paid = (currency: string) =>
      signed('checkout.session.completed', {
        ...session,
        currency,
        status: 'complete',
        payment_status: 'paid',
        payment_intent: state.paymentIntent,
      });
    const before = await balance(id);
    expect((await deliver(paid('usd'))).body.outcome).toBe('amount_mismatch');
    expect(await balance(id)).toBe(before);
    expect((await api.call('GET', `/v1/invoices/${state.invoiceId}`, { token })).body.status).toBe('open');
    expect((await deliver(paid('eur'))).body.outcome).toBe('credited');
    expect(await balance(id)).toBe(before + 2500 + 125);
  });

  it('prints the invoice PDF in EUR, with the euro sign', async () => {
    const { token } = state.buyer!;
    const res = await fetch(`${api.baseUrl}/v1/invoices/${state.invoiceId}/pdf`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    const { lines, text } = await pdfText(new Uint8Array(await res.arrayBuffer()));
    expect(lines).toContain('Currency EUR (€)');
    expect(text).toContain('EUR 25.00');
    expect(text).not.toMatch(/USD|\$/);
  });

  it('refuses a refund stated in usd for an eur invoice, and books the eur one', async () => {
    const { id } = state.buyer!;
    const refund = (currency: string) =>
      signed('charge.refunded', {
        id: `ch_${state.paymentIntent!.slice(3)}`,
        object: 'charge',
        amount: 2500,
        amount_refunded: 1000,
        currency,
        refunded: false,
        payment_intent: state.paymentIntent,
        metadata: {},
      });
    const before = await balance(id);
    expect((await deliver(refund('usd'))).body.outcome).toBe('amount_mismatch');
    expect(await balance(id)).toBe(before);
    expect((await deliver(refund('eur'))).body.outcome).toBe('refund_booked');
    expect(await balance(id)).toBeLessThan(before);
  });
});
