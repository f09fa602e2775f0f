import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { pdfText } from '../helpers/pdf-text.ts';
import { expectLedgerInvariant } from '../helpers/money.ts';
import { getRaw } from '../helpers/db.ts';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { resetConfig } from '../../shared/config/env.ts';
import { EXAMPLE_SELLER } from '../../shared/invoices/parties.ts';
import { attemptAutoTopUp } from '../../shared/payments/autotopup.ts';

/**
 * Issued invoices stay what they were: a paid invoice copies the seller (setting invoiceIssuer) and
 * the buyer (billing profile, account e-mail) when its payment is booked, and its PDF prints that
 * copy, so neither a billing-profile change nor a seller change alters it (pdf.js reads the text
 * back, tests/helpers/pdf-text.ts). And no invoice without a seller: while its legal name or
 * address is not set, checkouts are refused and auto top-ups wait, taking no number. Payments run
 * through the local sandbox's signed webhook.
 */
let api: TestApi;

beforeAll(async () => {
  delete process.env.STRIPE_SECRET_KEY;
  delete process.env.STRIPE_WEBHOOK_SECRET;
  delete process.env.STRIPE_API_URL;
  resetConfig();
  api = await startTestApi({ repairs: false });
});
afterAll(async () => {
  // Back to the seeded seller, whatever a failed test left.
  await api?.call('PUT', '/v1/admin/settings', { body: { invoiceIssuer: EXAMPLE_SELLER } });
  await api?.stop();
});
afterEach(async () => {
  await expectLedgerInvariant();
});

const SELLER_BEFORE = {
  legalName: 'Nordlicht Hosting GmbH',
  address: { line1: 'Hafenstraße 1', line2: null, postalCode: '20457', city: 'Hamburg', region: null, country: 'DE' },
  taxId: 'DE 111 222 333',
  email: 'billing@nordlicht.example',
  footer: 'Registered at Amtsgericht Hamburg, HRB 1.',
};
const SELLER_AFTER = {
  legalName: 'Renamed Hosting AG',
  address: { line1: 'Bahnhofstrasse 9', line2: null, postalCode: '8001', city: 'Zürich', region: null, country: 'CH' },
  taxId: 'CHE-999.888.777 MWST',
  email: 'billing@renamed.example',
  footer: 'New terms.',
};
const PROFILE_BEFORE = {
  name: 'Ada Buyer',
  company: 'First Company Ltd',
  address: { line1: '1 Old Road', city: 'Leeds', postalCode: 'LS1 1AA', country: 'GB' },
  vatId: 'GB111111111',
};
const PROFILE_AFTER = {
  name: 'Bea Later',
  company: 'Second Company BV',
  address: { line1: 'Nieuwe Weg 2', city: 'Utrecht', postalCode: '3511 AA', country: 'NL' },
  vatId: 'NL999999999B01',
};

async function customer(email: string) {
  const token = await api.session(email);
  const { id } = (await api.call('GET', '/v1/account', { token })).body;
  return { token, id: id as string };
}

const setSeller = async (invoiceIssuer: unknown) => {
  const res = await api.call('PUT', '/v1/admin/settings', { body: { invoiceIssuer } });
  expect(res.status, res.text).toBe(200);
};
const setProfile = async (token: string, profile: unknown) => {
  const res = await api.call('PUT', '/v1/account/billing-profile', { token, body: profile });
  expect(res.status, res.text).toBe(200);
};

async function checkout(token: string, amountCents = 1000) {
  const res = await api.call('POST', '/v1/billing/checkout', { token, body: { amountCents } });
  expect(res.status, res.text).toBe(201);
  return res.body.invoiceId as string;
}
async function pay(invoiceId: string) {
  const done = await api.call('POST', `/dev/checkout/${invoiceId}/complete`, { token: null, body: { outcome: 'paid' } });
  expect(done.body).toEqual({ received: true, outcome: 'credited' });
}

async function pdfOf(invoiceId: string, token: string) {
  const res = await fetch(`${api.baseUrl}/v1/invoices/${invoiceId}/pdf`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return pdfText(new Uint8Array(await res.arrayBuffer()));
}

const invoiceOf = async (invoiceId: string, token: string) => (await api.call('GET', `/v1/invoices/${invoiceId}`, { token })).body;

describe('a paid invoice is frozen', () => {
  const state = { token: '', id: '', first: '', firstText: '' };

  it('copies the seller and the buyer when its payment is booked, and prints them', async () => {
    await setSeller(SELLER_BEFORE);
    const c = await customer('frozen@example.com');
    Object.assign(state, c);
    await setProfile(c.token, PROFILE_BEFORE);
    state.first = await checkout(c.token);
    await pay(state.first);
    const invoice = await invoiceOf(state.first, c.token);
    expect(invoice.issuedAt).toBe(invoice.paidAt);
    const stored = await getRaw(keys.invoice(c.id, invoice.number));
    expect(stored!.parties).toEqual({
      seller: SELLER_BEFORE,
      buyer: {
        ...PROFILE_BEFORE,
        address: { line2: null, region: null, ...PROFILE_BEFORE.address },
        email: 'frozen@example.com',
        // The VAT id's VIES check as it stood (a GB id is not an EU one: not asked).
        vatCheck: { valid: null, checkedAt: expect.any(String) },
      },
      // The default brand prints nothing of its own.
      brand: { name: null, legalFooter: null },
      copiedAt: invoice.paidAt,
    });
    const { text } = await pdfOf(state.first, c.token);
    for (const field of [SELLER_BEFORE.legalName, 'Hafenstraße 1', PROFILE_BEFORE.company, PROFILE_BEFORE.name, 'VAT ID: GB111111111'])
      expect(text, field).toContain(field);
    state.firstText = text;
  });

  it('prints the same text after a billing-profile change and a seller change', async () => {
    await setProfile(state.token, PROFILE_AFTER);
    await setSeller(SELLER_AFTER);
    const { text } = await pdfOf(state.first, state.token);
    expect(text).toBe(state.firstText);
    expect(text).not.toContain(SELLER_AFTER.legalName);
    expect(text).not.toContain(PROFILE_AFTER.company);
  });

  it('an open invoice, and one paid since, print the details as they are now', async () => {
    const second = await checkout(state.token);
    let { text } = await pdfOf(second, state.token);
    expect(text).toContain(SELLER_AFTER.legalName);
    expect(text).toContain(PROFILE_AFTER.company);
    await pay(second);
    ({ text } = await pdfOf(second, state.token));
    expect(text).toContain(SELLER_AFTER.legalName);
    expect(text).toContain(PROFILE_AFTER.company);
    expect(text).not.toContain(PROFILE_BEFORE.company);
  });

  it('a refund since changes its amounts and status, never its seller or buyer', async () => {
    const refund = await api.call('POST', `/v1/admin/invoices/${state.first}/refund`, { body: { amountCents: 400, reason: 'asked' } });
    expect(refund.status, refund.text).toBe(200);
    const { text, lines } = await pdfOf(state.first, state.token);
    expect(lines).toContain('Status Partially refunded');
    expect(text).toContain(SELLER_BEFORE.legalName);
    expect(text).toContain(PROFILE_BEFORE.company);
    expect(text).not.toContain(SELLER_AFTER.legalName);
    expect(text).not.toContain(PROFILE_AFTER.company);
  });

  it('an invoice paid before copies were kept prints the details as they are now', async () => {
    const number = (await invoiceOf(state.first, state.token)).number;
    // As such an invoice is stored: paid, without the copy.
    await db().send(new UpdateCommand({ TableName: tableName(), Key: keys.invoice(state.id, number), UpdateExpression: 'REMOVE parties' }));
    const { text } = await pdfOf(state.first, state.token);
    expect(text).toContain(SELLER_AFTER.legalName);
    expect(text).toContain(PROFILE_AFTER.company);
  });
});

describe('no invoice without a seller', () => {
  const health = async () => {
    const res = await api.call('GET', '/v1/admin/health');
    expect(res.status).toBe(200);
    return res.body.invoiceIssuer;
  };
  const invoicesOf = async (token: string) => (await api.call('GET', '/v1/invoices?limit=100', { token })).body.data as unknown[];
  const counter = async () => (await getRaw(keys.invoiceCounter(new Date().getUTCFullYear())))?.last;

  it('the admin health names the seller the local stack ships as fictional, and a real one as ok', async () => {
    await setSeller(EXAMPLE_SELLER);
    expect(await health()).toEqual({ status: 'example', missingFields: [] });
    await setSeller(SELLER_AFTER);
    expect(await health()).toEqual({ status: 'ok', missingFields: [] });
  });

  it('while its legal name or address is missing, a checkout is 503 and takes no number', async () => {
    const c = await customer('no-seller@example.com');
    await setSeller({ legalName: null, address: { country: null } });
    expect(await health()).toEqual({ status: 'missing', missingFields: ['invoiceIssuer.legalName', 'invoiceIssuer.address.country'] });
    const before = await counter();
    const res = await api.call('POST', '/v1/billing/checkout', { token: c.token, body: { amountCents: 1000 } });
    expectEnvelope(res, 503, 'payments_unavailable');
    expect(res.body.error.details).toEqual({
      reason: 'invoice_issuer_missing',
      missingFields: ['invoiceIssuer.legalName', 'invoiceIssuer.address.country'],
    });
    expect(await counter()).toBe(before);
    expect(await invoicesOf(c.token)).toEqual([]);
  });

  it('an auto top-up waits (nothing charged, no number, still due) and happens once the seller is set', async () => {
    await setSeller(SELLER_AFTER);
    const c = await customer('no-seller-auto@example.com');
    const setup = await api.call('POST', '/v1/billing/payment-method/checkout', { token: c.token, body: {} });
    await api.call('POST', `/dev/payment-method/${setup.body.sessionId}/complete`, { token: null, body: { card: 'pm_card_visa' } });
    const rule = { enabled: true, belowCents: 300, amountCents: 1000, maxPerDay: 1 };
    expect((await api.call('PUT', '/v1/billing/auto-topup', { token: c.token, body: rule })).status).toBe(200);
    await setSeller({ address: { line1: null } });
    expect((await api.call('POST', `/v1/admin/users/${c.id}/credits`, { body: { amountCents: -300, note: 'down' } })).status).toBe(200);

    const before = await counter();
    expect(await attemptAutoTopUp(c.id)).toBe('no_seller');
    expect(await counter()).toBe(before);
    expect(await invoicesOf(c.token)).toEqual([]);
    expect((await getRaw(keys.account(c.id)))!.balanceCents).toBe(200);
    expect((await getRaw(keys.account(c.id)))!.autoTopUpDue).toEqual(expect.any(String));

    await setSeller(SELLER_AFTER);
    expect(await attemptAutoTopUp(c.id)).toBe('attempted');
    const [invoice] = (await invoicesOf(c.token)) as { id: string; status: string }[];
    expect(invoice).toMatchObject({ status: 'paid' });
    expect((await pdfOf(invoice!.id, c.token)).text).toContain(SELLER_AFTER.legalName);
  });
});
