import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { pdfText } from '../helpers/pdf-text.ts';
import { REVERSE_CHARGE_STATEMENT } from '../../shared/invoices/tax.ts';
import { resetConfig } from '../../shared/config/env.ts';
import { startFakeStripe, type FakeStripe } from '../helpers/fake-stripe.ts';
import { signedStripeEvent } from '../helpers/stripe-events.ts';
import { runAutoTopUps } from '../../shared/payments/autotopup.ts';

/**
 * Tax on top-ups, the operator's treatment (setting `tax`), end to end over HTTP through the local
 * sandbox (its signed webhook, no Stripe) and the local VIES stand-in (dev/vies-stand-in.ts, the
 * register's answers from a fixture of fictional VAT ids, nothing outside this machine called).
 * The rate table: a German consumer pays VAT at the configured rate, rounded down; an EU business
 * whose VAT id VIES confirms gets the reverse charge stated; an id VIES refuses (or cannot check)
 * does not. The ledger credits the net; the card pays (and gets back) the gross. Stripe Tax: the
 * fake Stripe (tests/helpers/fake-stripe.ts, its fixed rates standing in for Stripe Tax's
 * calculation, which no real part can give offline) and the sandbox's own fixed rates.
 */
let api: TestApi;

const SELLER = {
  legalName: 'Blockhost Hosting GmbH',
  address: { line1: 'Friedrichstraße 123', line2: null, postalCode: '10117', city: 'Berlin', region: null, country: 'DE' },
  taxId: 'DE 312 456 789',
  email: 'billing@blockhost.example',
  footer: null,
};
const RATES = {
  treatment: 'rates',
  label: 'VAT',
  sellerCountry: 'DE',
  rates: { DE: 1900, FR: 2000, MT: 1800 },
  otherCountriesReason: 'Export of services: outside the scope of EU VAT',
};

const setTax = async (tax: unknown) => {
  const res = await api.call('PUT', '/v1/admin/settings', { body: { tax, invoiceIssuer: SELLER } });
  expect(res.status, res.text).toBe(200);
  return res;
};

beforeAll(async () => {
  delete process.env.STRIPE_SECRET_KEY;
  delete process.env.STRIPE_WEBHOOK_SECRET;
  api = await startTestApi();
});
afterAll(async () => api?.stop());
beforeEach(async () => setTax(RATES));

async function customer(email: string, profile?: { country: string; vatId?: string; company?: string }) {
  const token = await api.session(email);
  const id = (await api.call('GET', '/v1/account', { token })).body.id as string;
  let saved: any;
  if (profile) {
    const res = await api.call('PUT', '/v1/account/billing-profile', {
      token,
      body: {
        name: 'Zoë Example',
        company: profile.company ?? null,
        address: { line1: 'Somewhere 1', postalCode: '12345', city: 'Somewhere', country: profile.country },
        vatId: profile.vatId ?? null,
      },
    });
    expect(res.status, res.text).toBe(200);
    saved = res.body;
  }
  return { token, id, profile: saved };
}

const balanceOf = async (token: string) => (await api.call('GET', '/v1/account', { token })).body.balanceCents as number;

async function paidTopUp(token: string, amountCents: number) {
  const checkout = await api.call('POST', '/v1/billing/checkout', { token, body: { amountCents } });
  expect(checkout.status, checkout.text).toBe(201);
  const invoiceId = checkout.body.invoiceId as string;
  const done = await api.call('POST', `/dev/checkout/${invoiceId}/complete`, { token: null, body: { outcome: 'paid' } });
  expect(done.body).toEqual({ received: true, outcome: 'credited' });
  const invoice = (await api.call('GET', `/v1/invoices/${invoiceId}`, { token })).body;
  return { invoiceId, invoice };
}

async function pdfLines(invoiceId: string, token: string): Promise<string[]> {
  const res = await fetch(`${api.baseUrl}/v1/invoices/${invoiceId}/pdf`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return (await pdfText(new Uint8Array(await res.arrayBuffer()))).lines;
}

describe('the rate table', () => {
  it('charges a consumer in Germany VAT at the configured rate on top; the invoice shows net, rate, tax and gross; the ledger credits the net', async () => {
    const c = await customer('tax-de@example.com', { country: 'DE' });
    const before = await balanceOf(c.token);
    const { invoiceId, invoice } = await paidTopUp(c.token, 2000);
    expect(invoice).toMatchObject({
      status: 'paid',
      amountCents: 2000,
      totalCents: 2380,
      paidCents: 2380,
      creditedCents: 2100,
      tax: {
        treatment: 'rates',
        reverseCharge: false,
        country: 'DE',
        rateBasisPoints: 1900,
        label: 'VAT',
        reason: null,
        netCents: 2000,
        taxCents: 380,
        grossCents: 2380,
      },
    });
    // The tax is a line of its own: charged, never credited; the lines add up to both totals.
    expect(invoice.lineItems).toEqual([
      { type: 'topup', description: 'Credit top-up', amountCents: 2000, chargedCents: 2000, creditedCents: 2000 },
      { type: 'tax', description: 'VAT 19 % (DE)', amountCents: 380, chargedCents: 380, creditedCents: 0 },
      { type: 'bonus', description: 'Top-up bonus (5 %)', amountCents: 100, chargedCents: 0, creditedCents: 100 },
    ]);
    // The net and its bonus, never the tax.
    expect((await balanceOf(c.token)) - before).toBe(2100);

    const lines = await pdfLines(invoiceId, c.token);
    expect(lines).toContain('VAT 19 % (DE) USD 3.80 USD 0.00');
    expect(lines).toContain('Net amount USD 20.00');
    expect(lines).toContain('VAT 19 % USD 3.80');
    expect(lines).toContain('Total charged (gross) USD 23.80');
    expect(lines).toContain('Total credited to the balance USD 21.00');
  });

  it('rounds the tax down to the cent, once, on the whole net (never against the customer)', async () => {
    const c = await customer('tax-round@example.com', { country: 'DE' });
    // 1,999 × 19 % = 379.81 ¢ → 379 ¢.
    const { invoice } = await paidTopUp(c.token, 1999);
    expect(invoice.tax).toMatchObject({ netCents: 1999, taxCents: 379, grossCents: 2378 });
  });

  it('states the reverse charge for an EU business whose VAT id VIES confirms, in another EU country than the seller', async () => {
    const c = await customer('tax-rc@example.com', { country: 'FR', vatId: 'FR 12345678901', company: 'Jeux Exemple SARL' });
    expect(c.profile.vatCheck).toMatchObject({ valid: true });
    expect(api.vies!.asked).toContain('FR12345678901');
    // The profile view says so too.
    expect((await api.call('GET', '/v1/account/billing-profile', { token: c.token })).body.vatCheck).toMatchObject({ valid: true });

    const before = await balanceOf(c.token);
    const { invoiceId, invoice } = await paidTopUp(c.token, 2000);
    expect(invoice).toMatchObject({
      totalCents: 2000,
      tax: {
        treatment: 'rates',
        reverseCharge: true,
        country: 'FR',
        rateBasisPoints: 0,
        taxCents: 0,
        grossCents: 2000,
        reason: REVERSE_CHARGE_STATEMENT,
      },
    });
    expect(invoice.lineItems.map((l: { type: string }) => l.type)).toEqual(['topup', 'bonus']);
    expect((await balanceOf(c.token)) - before).toBe(2100);
    const text = (await pdfLines(invoiceId, c.token)).join(' ');
    expect(text).toContain('VAT 0 % (reverse charge) USD 0.00');
    expect(text).toContain('Reverse charge: VAT to be accounted for by the recipient');
  });

  it('charges VAT to a business whose VAT id VIES does not know, or cannot check', async () => {
    const refused = await customer('tax-invalid@example.com', { country: 'FR', vatId: 'FR99999999999', company: 'Nobody SARL' });
    expect(refused.profile.vatCheck).toMatchObject({ valid: false });
    const { invoice } = await paidTopUp(refused.token, 1000);
    expect(invoice.tax).toMatchObject({ reverseCharge: false, country: 'FR', rateBasisPoints: 2000, taxCents: 200, reason: null });

    // Malta's register is down in the fixture (VIES: MS_UNAVAILABLE): unknown, so no reverse charge; asked again at the top-up.
    const unknown = await customer('tax-unknown@example.com', { country: 'MT', vatId: 'MT12345678', company: 'Eżempju Ltd' });
    expect(unknown.profile.vatCheck).toMatchObject({ valid: null });
    const askedBefore = api.vies!.asked.filter((id) => id === 'MT12345678').length;
    const taxed = await paidTopUp(unknown.token, 1000);
    expect(taxed.invoice.tax).toMatchObject({ reverseCharge: false, country: 'MT', rateBasisPoints: 1800, taxCents: 180 });
    expect(api.vies!.asked.filter((id) => id === 'MT12345678').length).toBe(askedBefore + 1);
  });

  it("charges a buyer in the seller's own country VAT even with a valid VAT id", async () => {
    const c = await customer('tax-domestic-b2b@example.com', { country: 'DE', vatId: 'DE123456789', company: 'Beispiel Spiele GmbH' });
    expect(c.profile.vatCheck).toMatchObject({ valid: true });
    const { invoice } = await paidTopUp(c.token, 1000);
    expect(invoice.tax).toMatchObject({ reverseCharge: false, country: 'DE', taxCents: 190 });
  });

  it('prints the reason for a buyer whose country has no rate, and charges no tax', async () => {
    const c = await customer('tax-us@example.com', { country: 'US' });
    const { invoiceId, invoice } = await paidTopUp(c.token, 1000);
    expect(invoice.tax).toMatchObject({ country: 'US', taxCents: 0, reason: 'Export of services: outside the scope of EU VAT' });
    expect((await pdfLines(invoiceId, c.token)).join(' ')).toContain('Export of services: outside the scope of EU VAT');
  });

  it('charges an auto top-up the gross (the PaymentIntent amount) and credits the net', async () => {
    const c = await customer('tax-auto@example.com', { country: 'DE' });
    const setup = await api.call('POST', '/v1/billing/payment-method/checkout', { token: c.token, body: {} });
    expect(setup.status, setup.text).toBe(201);
    await api.call('POST', `/dev/payment-method/${setup.body.sessionId}/complete`, { token: null, body: { card: 'pm_card_visa' } });
    const rule = await api.call('PUT', '/v1/billing/auto-topup', {
      token: c.token,
      body: { enabled: true, belowCents: 300, amountCents: 1000, maxPerDay: 3 },
    });
    expect(rule.status, rule.text).toBe(200);
    await api.call('POST', `/v1/admin/users/${c.id}/credits`, { body: { amountCents: -300, note: 'below the threshold' } });
    const before = await balanceOf(c.token);
    await runAutoTopUps();
    const [invoice] = (await api.call('GET', '/v1/invoices?limit=10', { token: c.token })).body.data;
    // The sandbox's PaymentIntent carried the gross; had it been the net, the payment would not match and nothing would be credited.
    expect(invoice).toMatchObject({ status: 'paid', totalCents: 1190, tax: { country: 'DE', taxCents: 190, grossCents: 1190 } });
    expect((await balanceOf(c.token)) - before).toBe(1050);
  });

  it('takes back the net share of a partial refund of a taxed invoice (Stripe refunds gross card money)', async () => {
    const c = await customer('tax-refund@example.com', { country: 'DE' });
    const { invoiceId } = await paidTopUp(c.token, 2000);
    const paid = await balanceOf(c.token);
    // Half the gross back to the card: 1,190 of 2,380 ¢ → net 1,000 ¢ (the tax 190 ¢), and half the bonus (50 ¢).
    const half = await api.call('POST', `/v1/admin/invoices/${invoiceId}/refund`, { body: { amountCents: 1190, reason: 'half' } });
    expect(half.status, half.text).toBe(200);
    expect(half.body.invoice).toMatchObject({ status: 'partially_refunded', refundedCents: 1190, bonusReversedCents: 50 });
    expect(paid - (await balanceOf(c.token))).toBe(1050);
    // An odd cent: 1 ¢ more of gross (1,191 in all) → net floor(1,191 × 2000 / 2380) = 1,000: nothing more taken.
    await api.call('POST', `/v1/admin/invoices/${invoiceId}/refund`, { body: { amountCents: 1, reason: 'a cent' } });
    expect(paid - (await balanceOf(c.token))).toBe(1050);
    // More than the gross left is refused; the rest of the gross is the whole invoice back.
    const tooMuch = await api.call('POST', `/v1/admin/invoices/${invoiceId}/refund`, { body: { amountCents: 1190, reason: 'too much' } });
    expect(tooMuch.status).toBe(400);
    const rest = await api.call('POST', `/v1/admin/invoices/${invoiceId}/refund`, { body: { amountCents: 1189, reason: 'rest' } });
    expect(rest.body.invoice).toMatchObject({ status: 'refunded', refundedCents: 2380, bonusReversedCents: 100 });
    expect(paid - (await balanceOf(c.token))).toBe(2100);
  });
});

describe('no tax', () => {
  it("prints the operator's reason on the invoice and charges the net only", async () => {
    await setTax({ treatment: 'none', reason: 'Not subject to VAT: small business exemption (§ 19 UStG)' });
    const c = await customer('tax-none@example.com', { country: 'DE' });
    const { invoiceId, invoice } = await paidTopUp(c.token, 2000);
    expect(invoice).toMatchObject({
      totalCents: 2000,
      tax: { treatment: 'none', taxCents: 0, grossCents: 2000, reason: 'Not subject to VAT: small business exemption (§ 19 UStG)' },
    });
    const lines = await pdfLines(invoiceId, c.token);
    expect(lines).toContain('Total charged USD 20.00');
    expect(lines.join(' ')).toContain('Not subject to VAT: small business exemption (§ 19 UStG)');
  });

  it('refuses a rate table without its seller country, and changes nothing', async () => {
    const before = (await api.call('GET', '/v1/admin/settings')).body.tax;
    const res = await api.call('PUT', '/v1/admin/settings', { body: { tax: { treatment: 'rates', label: 'VAT', rates: { DE: 1900 } } } });
    expect(res.status).toBe(400);
    const bad = await api.call('PUT', '/v1/admin/settings', {
      body: { tax: { ...RATES, rates: { DE: 10_001 } } },
    });
    expect(bad.status).toBe(400);
    expect((await api.call('GET', '/v1/admin/settings')).body.tax).toEqual(before);
  });
});

describe('Stripe Tax', () => {
  it('in the sandbox: the tax Stripe Tax states at payment is recorded; the ledger credits the net', async () => {
    await setTax({ treatment: 'stripe' });
    const c = await customer('tax-stripe-sandbox@example.com', { country: 'DE' });
    const before = await balanceOf(c.token);
    const { invoiceId, invoice } = await paidTopUp(c.token, 2000);
    expect(invoice).toMatchObject({
      totalCents: 2380,
      tax: { treatment: 'stripe', country: 'DE', rateBasisPoints: 1900, netCents: 2000, taxCents: 380, grossCents: 2380 },
    });
    expect(invoice.lineItems.find((l: { type: string }) => l.type === 'tax')).toMatchObject({ chargedCents: 380, creditedCents: 0 });
    expect((await balanceOf(c.token)) - before).toBe(2100);
    expect(await pdfLines(invoiceId, c.token)).toContain('Total charged (gross) USD 23.80');
  });

  describe('with Stripe', () => {
    const WEBHOOK_SECRET = 'whsec_test_tax_0123456789';
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
    const deliver = (session: Record<string, unknown>) => {
      const event = signedStripeEvent('checkout.session.completed', session, { secret: WEBHOOK_SECRET });
      return api.call('POST', '/v1/webhooks/stripe', {
        token: null,
        rawBody: event.body,
        headers: { 'content-type': 'application/json', 'stripe-signature': event.signature },
      });
    };

    it('with the rate table, gives Checkout a net line and a tax line: the session totals the gross', async () => {
      await setTax(RATES);
      const c = await customer('tax-rates-stripe@example.com', { country: 'DE' });
      const before = await balanceOf(c.token);
      const res = await api.call('POST', '/v1/billing/checkout', { token: c.token, body: { amountCents: 2000 } });
      expect(res.status, res.text).toBe(201);
      const request = stripeFake.requests.filter((r) => r.path === '/v1/checkout/sessions').at(-1)!;
      expect(request.params).toMatchObject({
        'line_items[0][price_data][unit_amount]': '2000',
        'line_items[1][price_data][unit_amount]': '380',
        'line_items[1][price_data][product_data][name]': 'VAT 19 % (DE)',
      });
      expect(request.params['automatic_tax[enabled]']).toBeUndefined();
      const session = [...stripeFake.sessions.values()].find((s) => s.client_reference_id === res.body.invoiceId)!;
      expect(session.amount_total).toBe(2380);
      const paid = { ...session, status: 'complete', payment_status: 'paid', payment_intent: 'pi_test_rates_tax' };
      // The net alone is not what the invoice asked the card for.
      expect((await deliver({ ...paid, amount_total: 2000 })).body.outcome).toBe('amount_mismatch');
      expect((await deliver(paid)).body.outcome).toBe('credited');
      expect((await balanceOf(c.token)) - before).toBe(2100);
    });

    it('asks Checkout for automatic tax, the address and the tax id; books the tax it states, crediting the net', async () => {
      await setTax({ treatment: 'stripe' });
      const c = await customer('tax-stripe@example.com');
      const before = await balanceOf(c.token);
      const res = await api.call('POST', '/v1/billing/checkout', { token: c.token, body: { amountCents: 2000 } });
      expect(res.status, res.text).toBe(201);
      const request = stripeFake.requests.filter((r) => r.path === '/v1/checkout/sessions').at(-1)!;
      expect(request.params).toMatchObject({
        'automatic_tax[enabled]': 'true',
        billing_address_collection: 'required',
        'tax_id_collection[enabled]': 'true',
        'line_items[0][price_data][unit_amount]': '2000',
        'line_items[0][price_data][tax_behavior]': 'exclusive',
      });
      const session = [...stripeFake.sessions.values()].find((s) => s.client_reference_id === res.body.invoiceId)!;
      // The customer gave a French address: Stripe Tax adds 20 %.
      const paid = stripeFake.paidWithStripeTax(session.id as string, 'FR');
      // A session whose taxed subtotal is not the top-up credits nothing.
      expect((await deliver({ ...paid, amount_subtotal: 1000 })).body.outcome).toBe('amount_mismatch');
      expect((await deliver(paid)).body.outcome).toBe('credited');
      expect((await deliver(paid)).body.outcome).toBe('already_fulfilled');
      const invoice = (await api.call('GET', `/v1/invoices/${res.body.invoiceId}`, { token: c.token })).body;
      expect(invoice).toMatchObject({
        status: 'paid',
        totalCents: 2400,
        tax: { treatment: 'stripe', country: 'FR', rateBasisPoints: 2000, netCents: 2000, taxCents: 400, grossCents: 2400 },
      });
      expect((await balanceOf(c.token)) - before).toBe(2100);
    });
  });
});
