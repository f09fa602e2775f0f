import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { pdfText } from '../helpers/pdf-text.ts';
import { expectLedgerInvariant } from '../helpers/money.ts';
import { startFakeStripe, type FakeStripe } from '../helpers/fake-stripe.ts';
import { signedStripeEvent } from '../helpers/stripe-events.ts';
import { REVERSE_CHARGE_STATEMENT } from '../../shared/invoices/tax.ts';
import { resetConfig } from '../../shared/config/env.ts';
import { runAutoTopUps } from '../../shared/payments/autotopup.ts';

/**
 * Stripe Tax (setting `tax` treatment `stripe`) where Checkout does not compute it: the auto
 * top-up's off-session PaymentIntent, taxed by a Tax Calculation before the charge and recorded as
 * a Tax Transaction once paid; and the reason printed when Stripe Tax charges nothing (reverse
 * charge, not collecting). Over HTTP and the signed webhook, against the local sandbox and the fake
 * Stripe API (tests/helpers/fake-stripe.ts: its fixed rates by country stand in for Stripe Tax's
 * calculation, which no real part gives offline; the VAT ids are the local VIES stand-in's fixture).
 */
let api: TestApi;

const SELLER = {
  legalName: 'Blockhost Hosting GmbH',
  address: { line1: 'Friedrichstraße 123', line2: null, postalCode: '10117', city: 'Berlin', region: null, country: 'DE' },
  taxId: 'DE 312 456 789',
  email: 'billing@blockhost.example',
  footer: null,
};

beforeAll(async () => {
  delete process.env.STRIPE_SECRET_KEY;
  delete process.env.STRIPE_WEBHOOK_SECRET;
  delete process.env.STRIPE_API_URL;
  resetConfig();
  api = await startTestApi();
});
afterAll(async () => api?.stop());
beforeEach(async () => {
  const res = await api.call('PUT', '/v1/admin/settings', { body: { tax: { treatment: 'stripe' }, invoiceIssuer: SELLER } });
  expect(res.status, res.text).toBe(200);
});
afterEach(async () => expectLedgerInvariant());

type Profile = { country: string | null; postalCode?: string | null; vatId?: string; company?: string };

async function customer(email: string, profile?: Profile) {
  const token = await api.session(email);
  const id = (await api.call('GET', '/v1/account', { token })).body.id as string;
  if (profile) {
    const res = await api.call('PUT', '/v1/account/billing-profile', {
      token,
      body: {
        name: 'Zoë Example',
        company: profile.company ?? null,
        address: {
          line1: 'Somewhere 1',
          postalCode: profile.postalCode === undefined ? '12345' : profile.postalCode,
          city: 'Somewhere',
          country: profile.country,
        },
        vatId: profile.vatId ?? null,
      },
    });
    expect(res.status, res.text).toBe(200);
  }
  return { token, id };
}

const balanceOf = async (token: string) => (await api.call('GET', '/v1/account', { token })).body.balanceCents as number;
const invoicesOf = async (token: string) => (await api.call('GET', '/v1/invoices?limit=10', { token })).body.data as any[];
const ruleOf = async (token: string) => (await api.call('GET', '/v1/billing/auto-topup', { token })).body;

async function pdfLines(invoiceId: string, token: string): Promise<string[]> {
  const res = await fetch(`${api.baseUrl}/v1/invoices/${invoiceId}/pdf`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return (await pdfText(new Uint8Array(await res.arrayBuffer()))).lines;
}

async function enableAutoTopUp(c: { token: string; id: string }) {
  const res = await api.call('PUT', '/v1/billing/auto-topup', {
    token: c.token,
    body: { enabled: true, belowCents: 300, amountCents: 1000, maxPerDay: 3 },
  });
  expect(res.status, res.text).toBe(200);
}

/** Takes the balance below the rule's threshold, as any charge would; the loop then attempts the auto top-up. */
async function dropBelowThreshold(c: { id: string }) {
  const res = await api.call('POST', `/v1/admin/users/${c.id}/credits`, { body: { amountCents: -300, note: 'below the threshold' } });
  expect(res.status, res.text).toBe(200);
}

describe('auto top-up in the sandbox', () => {
  async function withSandboxCard(email: string, profile?: Profile) {
    const c = await customer(email, profile);
    const setup = await api.call('POST', '/v1/billing/payment-method/checkout', { token: c.token, body: {} });
    expect(setup.status, setup.text).toBe(201);
    await api.call('POST', `/dev/payment-method/${setup.body.sessionId}/complete`, { token: null, body: { card: 'pm_card_visa' } });
    await enableAutoTopUp(c);
    await dropBelowThreshold(c);
    return c;
  }

  it('charges a German consumer the net and the tax the calculation states; the ledger credits the net', async () => {
    const c = await withSandboxCard('stax-sandbox-de@example.com', { country: 'DE' });
    const before = await balanceOf(c.token);
    await runAutoTopUps();
    const [invoice] = await invoicesOf(c.token);
    expect(invoice).toMatchObject({
      status: 'paid',
      totalCents: 1190,
      tax: { treatment: 'stripe', country: 'DE', rateBasisPoints: 1900, netCents: 1000, taxCents: 190, grossCents: 1190, reason: null },
    });
    expect((await balanceOf(c.token)) - before).toBe(1050);
  });

  it('without an address charges nothing: the failure says why, the invoice is void', async () => {
    const c = await withSandboxCard('stax-sandbox-none@example.com');
    const before = await balanceOf(c.token);
    await runAutoTopUps();
    expect((await ruleOf(c.token)).lastFailure).toMatchObject({ code: 'customer_tax_location_invalid' });
    const [invoice] = await invoicesOf(c.token);
    expect(invoice).toMatchObject({ status: 'void', paidCents: 0 });
    expect(await balanceOf(c.token)).toBe(before);
  });
});

describe('with Stripe', () => {
  const WEBHOOK_SECRET = 'whsec_test_stripe_tax';
  let stripeFake: FakeStripe;
  beforeAll(async () => {
    stripeFake = await startFakeStripe();
    Object.assign(process.env, {
      STRIPE_SECRET_KEY: 'sk_test_fake_key_for_tests',
      STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
      STRIPE_API_URL: stripeFake.url,
    });
    resetConfig();
  });
  afterAll(async () => {
    delete process.env.STRIPE_SECRET_KEY;
    delete process.env.STRIPE_WEBHOOK_SECRET;
    delete process.env.STRIPE_API_URL;
    resetConfig();
    await stripeFake?.close();
  });

  const deliver = (type: string, object: Record<string, unknown>) => {
    const event = signedStripeEvent(type, object, { secret: WEBHOOK_SECRET });
    return api.call('POST', '/v1/webhooks/stripe', {
      token: null,
      rawBody: event.body,
      headers: { 'content-type': 'application/json', 'stripe-signature': event.signature },
    });
  };
  const requestsTo = (path: string) => stripeFake.requests.filter((r) => r.path.split('?')[0] === path);

  /** A card saved through Checkout in setup mode, the rule on, the balance below it. */
  async function withStripeCard(email: string, profile?: Profile) {
    const c = await customer(email, profile);
    const setup = await api.call('POST', '/v1/billing/payment-method/checkout', { token: c.token, body: {} });
    expect(setup.status, setup.text).toBe(201);
    const session = stripeFake.sessions.get(setup.body.sessionId)!;
    stripeFake.setupIntents.get(session.setup_intent as string)!.payment_method = 'pm_card_visa';
    expect((await deliver('checkout.session.completed', { ...session, status: 'complete' })).body.outcome).toBe('card_saved');
    await enableAutoTopUp(c);
    await dropBelowThreshold(c);
    return c;
  }

  describe('auto top-up', () => {
    it('calculates the tax first, charges net + tax, credits the net, and records the tax transaction once', async () => {
      const c = await withStripeCard('stax-auto-de@example.com', { country: 'DE' });
      const before = await balanceOf(c.token);
      await runAutoTopUps();

      const calculation = requestsTo('/v1/tax/calculations').at(-1)!;
      expect(calculation.params).toMatchObject({
        currency: 'usd',
        'line_items[0][amount]': '1000',
        'line_items[0][tax_behavior]': 'exclusive',
        'customer_details[address][country]': 'DE',
        'customer_details[address][postal_code]': '12345',
        'customer_details[address_source]': 'billing',
      });
      expect(Object.keys(calculation.params).some((name) => name.includes('tax_ids'))).toBe(false);
      const [calculationId] = [...stripeFake.taxCalculations.keys()].slice(-1);

      const intents = stripeFake.paymentIntents.filter((pi) => pi.metadata.account_id === c.id);
      expect(intents).toHaveLength(1);
      // The card pays the gross the calculation states; the PaymentIntent names the calculation.
      expect(intents[0]).toMatchObject({ amount: 1190, status: 'succeeded', metadata: { tax_calculation: calculationId } });

      const [invoice] = await invoicesOf(c.token);
      expect(invoice).toMatchObject({
        status: 'paid',
        amountCents: 1000,
        totalCents: 1190,
        paidCents: 1190,
        tax: { treatment: 'stripe', country: 'DE', rateBasisPoints: 1900, netCents: 1000, taxCents: 190, grossCents: 1190, reason: null },
      });
      expect(invoice.lineItems.find((l: { type: string }) => l.type === 'tax')).toMatchObject({ chargedCents: 190, creditedCents: 0 });
      // The net and its 5 % bonus, never the tax.
      expect((await balanceOf(c.token)) - before).toBe(1050);
      const lines = await pdfLines(invoice.id, c.token);
      expect(lines).toContain('Net amount USD 10.00');
      expect(lines).toContain('Total charged (gross) USD 11.90');

      // The sale recorded at Stripe from the calculation, under the invoice's number and a key of the invoice.
      const recorded = () => stripeFake.taxTransactions.filter((t) => t.reference === invoice.number);
      expect(recorded()).toEqual([{ id: expect.any(String), calculation: calculationId, reference: invoice.number }]);
      const sent = requestsTo('/v1/tax/transactions/create_from_calculation');
      expect(sent.filter((r) => r.params.reference === invoice.number).map((r) => r.idempotencyKey)).toEqual([
        `tax-transaction:${invoice.id}`,
      ]);

      // Stripe's success event, delivered again and again: booked once, recorded once, Stripe not asked again.
      const intent = { ...intents[0]!, object: 'payment_intent' };
      for (let i = 0; i < 3; i++) expect((await deliver('payment_intent.succeeded', intent)).body.outcome).toBe('already_fulfilled');
      expect(recorded()).toHaveLength(1);
      expect(requestsTo('/v1/tax/transactions/create_from_calculation').length).toBe(sent.length);
      expect((await balanceOf(c.token)) - before).toBe(1050);
    });

    it('records the tax transaction on the next delivery when Stripe failed the first time', async () => {
      const c = await withStripeCard('stax-auto-retry@example.com', { country: 'FR' });
      const before = await balanceOf(c.token);
      // The calculation and the PaymentIntent pass; the transaction request fails (Stripe 500).
      stripeFake.failNext(500, undefined, '/v1/tax/transactions/create_from_calculation');
      expect(await runAutoTopUps()).toMatchObject({ failed: 1 });
      const [invoice] = await invoicesOf(c.token);
      // The payment is booked all the same, once.
      expect(invoice).toMatchObject({ status: 'paid', totalCents: 1200 });
      expect((await balanceOf(c.token)) - before).toBe(1050);
      expect((await ruleOf(c.token)).inFlight).toBe(false);
      const recorded = () => stripeFake.taxTransactions.filter((t) => t.reference === invoice.number);
      expect(recorded()).toEqual([]);
      // Stripe's own delivery of the success event: the credit stays booked once, the sale is recorded now.
      const intent = stripeFake.paymentIntents.find((pi) => pi.metadata.account_id === c.id)!;
      expect((await deliver('payment_intent.succeeded', { ...intent, object: 'payment_intent' })).body.outcome).toBe('already_fulfilled');
      expect(recorded()).toHaveLength(1);
      expect((await balanceOf(c.token)) - before).toBe(1050);
    });

    it('states the reverse charge for an EU business whose VAT id VIES confirms: its id sent, no tax charged', async () => {
      const c = await withStripeCard('stax-auto-rc@example.com', {
        country: 'FR',
        vatId: 'FR 12345678901',
        company: 'Jeux Exemple SARL',
      });
      await runAutoTopUps();
      expect(requestsTo('/v1/tax/calculations').at(-1)!.params).toMatchObject({
        'customer_details[tax_ids][0][type]': 'eu_vat',
        'customer_details[tax_ids][0][value]': 'FR12345678901',
      });
      const [invoice] = await invoicesOf(c.token);
      expect(invoice).toMatchObject({
        status: 'paid',
        totalCents: 1000,
        tax: { treatment: 'stripe', reverseCharge: true, taxCents: 0, reason: REVERSE_CHARGE_STATEMENT },
      });
      expect((await pdfLines(invoice.id, c.token)).join(' ')).toContain('Reverse charge: VAT to be accounted for by the recipient');
    });

    it('paid on its page after an authentication: Checkout charges the calculated gross, credited, the sale recorded once', async () => {
      const c = await withStripeCard('stax-auto-3ds@example.com', { country: 'DE' });
      await api.call('PUT', '/v1/billing/auto-topup', {
        token: c.token,
        body: { enabled: false, belowCents: 300, amountCents: 1000, maxPerDay: 3 },
      });
      // The card saved is one that asks for authentication.
      const setup = await api.call('POST', '/v1/billing/payment-method/checkout', { token: c.token, body: {} });
      const setupSession = stripeFake.sessions.get(setup.body.sessionId)!;
      stripeFake.setupIntents.get(setupSession.setup_intent as string)!.payment_method = 'pm_card_authenticationRequired';
      expect((await deliver('checkout.session.completed', { ...setupSession, status: 'complete' })).body.outcome).toBe('card_saved');
      await enableAutoTopUp(c);
      await dropBelowThreshold(c);
      const before = await balanceOf(c.token);
      await runAutoTopUps();
      const [invoice] = await invoicesOf(c.token);
      expect(invoice).toMatchObject({ status: 'open', totalCents: 1190 });
      // The page: the net and its tax as two lines, the gross in all; no second calculation.
      const page = [...stripeFake.sessions.values()].find((s) => s.client_reference_id === invoice.id)!;
      expect(page.amount_total).toBe(1190);
      const paid = { ...page, status: 'complete', payment_status: 'paid', payment_intent: 'pi_test_stax_3ds' };
      expect((await deliver('checkout.session.completed', paid)).body.outcome).toBe('credited');
      expect((await deliver('checkout.session.completed', paid)).body.outcome).toBe('already_fulfilled');
      expect((await api.call('GET', `/v1/invoices/${invoice.id}`, { token: c.token })).body).toMatchObject({
        status: 'paid',
        tax: { treatment: 'stripe', country: 'DE', netCents: 1000, taxCents: 190, grossCents: 1190 },
      });
      expect((await balanceOf(c.token)) - before).toBe(1050);
      expect(stripeFake.taxTransactions.filter((t) => t.reference === invoice.number)).toHaveLength(1);
    });

    it('fails without an address Stripe Tax can place: nothing charged, the reason recorded, the invoice void', async () => {
      // No profile at all (asked nothing: Stripe needs a country), and a US address without its ZIP code (Stripe refuses).
      const none = await withStripeCard('stax-auto-noaddress@example.com');
      const noZip = await withStripeCard('stax-auto-nozip@example.com', { country: 'US', postalCode: null });
      const before = { none: await balanceOf(none.token), noZip: await balanceOf(noZip.token) };
      const refusedBefore = requestsTo('/v1/tax/calculations').length;
      await runAutoTopUps();
      // Only the one with an address was sent to Stripe, and refused.
      expect(requestsTo('/v1/tax/calculations').length).toBe(refusedBefore + 1);
      for (const c of [none, noZip]) {
        expect(stripeFake.paymentIntents.filter((pi) => pi.metadata.account_id === c.id)).toEqual([]);
        const rule = await ruleOf(c.token);
        expect(rule).toMatchObject({ inFlight: false, consecutiveFailures: 1, lastFailure: { code: 'customer_tax_location_invalid' } });
        const [invoice] = await invoicesOf(c.token);
        expect(invoice).toMatchObject({ status: 'void', paidCents: 0, creditedCents: 0 });
        const failed = (await api.call('GET', '/v1/events?limit=10&type=auto_topup.failed', { token: c.token })).body.data;
        expect(failed[0].data).toMatchObject({ invoiceId: invoice.id, code: 'customer_tax_location_invalid' });
      }
      expect(await balanceOf(none.token)).toBe(before.none);
      expect(await balanceOf(noZip.token)).toBe(before.noZip);
    });
  });

  describe('Checkout', () => {
    async function paidCheckout(email: string, profile: Profile, country: string, vatId?: string) {
      const c = await customer(email, profile);
      const res = await api.call('POST', '/v1/billing/checkout', { token: c.token, body: { amountCents: 2000 } });
      expect(res.status, res.text).toBe(201);
      const session = [...stripeFake.sessions.values()].find((s) => s.client_reference_id === res.body.invoiceId)!;
      const paid = stripeFake.paidWithStripeTax(session.id as string, country, vatId ? { vatId } : {});
      // Stripe's event carries no breakdown: the reason is read from the session.
      expect((paid.total_details as Record<string, unknown>).breakdown).toBeUndefined();
      const before = await balanceOf(c.token);
      expect((await deliver('checkout.session.completed', paid)).body.outcome).toBe('credited');
      expect((await balanceOf(c.token)) - before).toBe(2100);
      expect((await deliver('checkout.session.completed', paid)).body.outcome).toBe('already_fulfilled');
      const invoice = (await api.call('GET', `/v1/invoices/${res.body.invoiceId}`, { token: c.token })).body;
      return { c, invoice, sessionId: session.id as string };
    }

    it('prints the reverse-charge statement when Stripe Tax reverse-charges an EU business', async () => {
      const { c, invoice, sessionId } = await paidCheckout(
        'stax-checkout-rc@example.com',
        { country: 'FR', vatId: 'FR12345678901', company: 'Jeux Exemple SARL' },
        'FR',
        'FR12345678901',
      );
      expect(invoice).toMatchObject({
        status: 'paid',
        totalCents: 2000,
        tax: { treatment: 'stripe', reverseCharge: true, country: 'FR', taxCents: 0, grossCents: 2000, reason: REVERSE_CHARGE_STATEMENT },
      });
      const reads = requestsTo(`/v1/checkout/sessions/${sessionId}`);
      expect(reads).toHaveLength(1);
      expect(reads[0]!.params).toEqual({ 'expand[0]': 'total_details.breakdown' });
      expect((await pdfLines(invoice.id, c.token)).join(' ')).toContain('Reverse charge: VAT to be accounted for by the recipient');
    });

    it('prints why no tax was charged where the seller does not collect it', async () => {
      const { c, invoice } = await paidCheckout('stax-checkout-us@example.com', { country: 'US' }, 'US');
      const reason = "No tax charged: the seller is not registered to collect tax in the customer's location.";
      expect(invoice.tax).toMatchObject({ reverseCharge: false, taxCents: 0, reason });
      expect((await pdfLines(invoice.id, c.token)).join(' ')).toContain('No tax charged: the seller is not registered');
    });

    it('reads no reason when Stripe Tax charged tax', async () => {
      const before =
        requestsTo('/v1/checkout/sessions').length + stripeFake.requests.filter((r) => r.path.startsWith('/v1/checkout/sessions/')).length;
      const { invoice } = await paidCheckout('stax-checkout-de@example.com', { country: 'DE' }, 'DE');
      expect(invoice.tax).toMatchObject({ taxCents: 380, reason: null });
      const after =
        requestsTo('/v1/checkout/sessions').length + stripeFake.requests.filter((r) => r.path.startsWith('/v1/checkout/sessions/')).length;
      // The create only: no read back.
      expect(after - before).toBe(1);
    });
  });
});
