import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, expectEnvelope, type TestApi } from '../helpers/stack.ts';
import { pdfText } from '../helpers/pdf-text.ts';
import { getRaw } from '../helpers/db.ts';
import { keys } from '../../shared/db/keys.ts';
import { clearSettingsCache } from '../../shared/settings/index.ts';
import { EXAMPLE_SELLER } from '../../shared/invoices/parties.ts';
import { handler as billingHandler } from '../../functions/billing/handler.ts';

/**
 * Invoice documents end to end over HTTP: a top-up paid through the local sandbox (its signed
 * webhook, no Stripe), seller details set by an admin, the buyer's billing profile, then
 * GET /v1/invoices/:id/pdf read back by Mozilla's pdf.js (tests/helpers/pdf-text.ts): every field
 * is checked in the text a reader sees. The local API hands the function's response to the
 * caller as API Gateway does (dev/local-api.ts): a body the function did not base64-encode with
 * isBase64Encoded would arrive as base64 text, not as a PDF pdf.js can open.
 *
 * The adversary: a tenant who asks for another account's invoice, who sends a profile built to
 * break the document (control characters, scripts the PDF's font cannot draw, oversized fields, a
 * made-up country), or who reads with a key that lacks billing:read.
 */
let api: TestApi;

beforeAll(async () => {
  // The local sandbox checkout (nothing outside this machine is called).
  delete process.env.STRIPE_SECRET_KEY;
  delete process.env.STRIPE_WEBHOOK_SECRET;
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0 } });
});
afterAll(async () => api?.stop());

/** A customer with one paid top-up of `amountCents` (5 % bonus by default); `profile`: the billing profile set before paying. */
async function paidTopUp(email: string, amountCents = 2000, profile?: unknown) {
  const token = await api.session(email);
  const { id } = (await api.call('GET', '/v1/account', { token })).body;
  if (profile) expect((await api.call('PUT', '/v1/account/billing-profile', { token, body: profile })).status).toBe(200);
  const checkout = await api.call('POST', '/v1/billing/checkout', { token, body: { amountCents } });
  expect(checkout.status).toBe(201);
  const invoiceId = checkout.body.invoiceId as string;
  const done = await api.call('POST', `/dev/checkout/${invoiceId}/complete`, { token: null, body: { outcome: 'paid' } });
  expect(done.body).toEqual({ received: true, outcome: 'credited' });
  return { token, id: id as string, invoiceId };
}

/** The PDF as bytes (the stack's `call` reads text, which would mangle them). */
async function getPdf(invoiceId: string, token: string) {
  const res = await fetch(`${api.baseUrl}/v1/invoices/${invoiceId}/pdf`, { headers: { authorization: `Bearer ${token}` } });
  const bytes = new Uint8Array(await res.arrayBuffer());
  return { res, bytes };
}

/** The PDF's text as pdf.js extracts it, after checking it is one whole A4 PDF. */
async function pdfOf(invoiceId: string, token: string) {
  const { res, bytes } = await getPdf(invoiceId, token);
  expect(res.status, Buffer.from(bytes).toString('utf8').slice(0, 300)).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/pdf');
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(Buffer.from(bytes.subarray(0, 5)).toString('latin1')).toBe('%PDF-');
  const { pages, text, lines } = await pdfText(bytes);
  expect(pages).toBe(1);
  // Nothing unset leaks into the document as a word.
  expect(text).not.toMatch(/undefined|null|NaN|\[object/);
  return { text, lines, res };
}

const invoiceOf = async (invoiceId: string, token: string) => (await api.call('GET', `/v1/invoices/${invoiceId}`, { token })).body;

const SELLER = {
  legalName: 'Blockhost Hosting GmbH',
  address: { line1: 'Friedrichstraße 123', line2: 'Aufgang B', postalCode: '10117', city: 'Berlin', region: null, country: 'DE' },
  taxId: 'DE 312 456 789',
  email: 'billing@blockhost.example',
  footer: 'Payable on receipt. Registered at Amtsgericht Charlottenburg, HRB 123456 B. Managing director: Erika Mustermann.',
};

const PROFILE = {
  name: 'Jane Doe',
  company: 'Acme Games Ltd',
  address: { line1: '221B Baker Street', line2: 'Flat 2', postalCode: 'NW1 6XE', city: 'London', region: 'Greater London', country: 'GB' },
  vatId: 'GB123456789',
};

describe('GET /v1/invoices/:id/pdf', () => {
  it("without a billing profile prints the account e-mail as the buyer, and the local stack's fictional seller", async () => {
    const c = await paidTopUp('pdf-bare@example.com');
    const invoice = await invoiceOf(c.invoiceId, c.token);
    const { text, lines } = await pdfOf(c.invoiceId, c.token);
    expect(text).toContain(invoice.number);
    expect(text).toContain('pdf-bare@example.com');
    expect(lines).toContain('Status Paid');
    // The seller the local stack seeds says it is made up (dev/stack.ts); fields not set print nothing.
    expect(text).toContain('Example Hosting Ltd (fictional seller');
    expect(text).not.toContain('Tax ID');
    expect(text).not.toContain('VAT ID');
  });

  it('shows the seller, the buyer, the number, the dates, the currency, each line, the totals and the status', async () => {
    const set = await api.call('PUT', '/v1/admin/settings', { body: { invoiceIssuer: SELLER } });
    expect(set.status).toBe(200);
    expect(set.body.invoiceIssuer).toEqual(SELLER);
    clearSettingsCache();
    const c = await paidTopUp('pdf-full@example.com', 2000, PROFILE);
    expect((await api.call('GET', '/v1/account/billing-profile', { token: c.token })).body).toMatchObject(PROFILE);

    const invoice = await invoiceOf(c.invoiceId, c.token);
    expect(invoice).toMatchObject({ status: 'paid', totalCents: 2000, creditedCents: 2100 });
    const { text, lines, res } = await pdfOf(c.invoiceId, c.token);
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${invoice.number}.pdf"`);

    // Seller (left column) and buyer (right column) share lines; each field is on one of them.
    for (const field of [
      SELLER.legalName,
      SELLER.address.line1,
      SELLER.address.line2,
      '10117 Berlin',
      'Germany',
      `Tax ID: ${SELLER.taxId}`,
      SELLER.email,
      PROFILE.company,
      PROFILE.name,
      PROFILE.address.line1,
      PROFILE.address.line2,
      'NW1 6XE London',
      PROFILE.address.region,
      'United Kingdom',
      `VAT ID: ${PROFILE.vatId}`,
      'pdf-full@example.com',
    ])
      expect(text, field).toContain(field);
    expect(text.replace(/\n/g, ' ')).toContain(SELLER.footer);

    expect(lines).toContain(`Invoice number ${invoice.number}`);
    // Dated by the payment (the tax point); the number was taken when the checkout opened.
    expect(invoice.issuedAt).toBe(invoice.paidAt);
    expect(lines).toContain(`Invoice date ${invoice.paidAt.slice(0, 10)}`);
    expect(lines).toContain(`Checkout opened ${invoice.createdAt.slice(0, 10)}`);
    expect(lines).toContain(`Paid date ${invoice.paidAt.slice(0, 10)}`);
    expect(lines).toContain('Currency USD ($)');
    expect(lines).toContain('Status Paid');
    // Each line with what it charged and what it credited (the bonus: charged 0, credited 5 %).
    expect(lines).toContain('Credit top-up USD 20.00 USD 20.00');
    expect(lines).toContain('Top-up bonus (5 %) USD 0.00 USD 1.00');
    expect(lines).toContain('Total charged USD 20.00');
    expect(lines).toContain('Total credited to the balance USD 21.00');
    expect(lines).toContain('Amount paid USD 20.00');
    expect(text).not.toContain('Refunded');
  });

  it('shows a partial refund, then a full refund, with the refunded amount and what is left', async () => {
    const c = await paidTopUp('pdf-refund@example.com', 2000);
    const refund = (amountCents: number) =>
      api.call('POST', `/v1/admin/invoices/${c.invoiceId}/refund`, { body: { amountCents, reason: 'customer asked' } });
    expect((await refund(500)).status).toBe(200);
    expect((await invoiceOf(c.invoiceId, c.token)).status).toBe('partially_refunded');
    let { lines } = await pdfOf(c.invoiceId, c.token);
    expect(lines).toContain('Status Partially refunded');
    expect(lines).toContain('Refunded USD 5.00');
    expect(lines).toContain('Net paid USD 15.00');
    expect(lines).toContain('Amount paid USD 20.00');

    expect((await refund(1500)).status).toBe(200);
    expect((await invoiceOf(c.invoiceId, c.token)).status).toBe('refunded');
    ({ lines } = await pdfOf(c.invoiceId, c.token));
    expect(lines).toContain('Status Refunded');
    expect(lines).toContain('Refunded USD 20.00');
    expect(lines).toContain('Net paid USD 0.00');
  });

  it('prints an open invoice as not paid and not a tax invoice, without an invoice or paid date', async () => {
    const token = await api.session('pdf-open@example.com');
    const checkout = await api.call('POST', '/v1/billing/checkout', { token, body: { amountCents: 1000 } });
    expect((await invoiceOf(checkout.body.invoiceId, token)).issuedAt).toBeNull();
    const { lines, text } = await pdfOf(checkout.body.invoiceId, token);
    expect(lines).toContain('Status Open (not paid)');
    expect(text.replace(/\n/g, ' ')).toContain('Not yet paid. This is not a tax invoice');
    expect(lines).toContain('Total due USD 10.00');
    expect(lines).toContain('Amount paid USD 0.00');
    expect(text).not.toContain('Total charged');
    expect(text).not.toContain('Paid date');
    expect(text).not.toContain('Invoice date');
  });

  it('prints names in Latin, Greek and Cyrillic as written, a character the font lacks (CJK, emoji) as ?, never a 500', async () => {
    const c = await paidTopUp('pdf-scripts@example.com', 1000, {
      name: 'Zoë Łukasiewicz, Łódź',
      company: 'Σωκράτης & Дмитрий Ørsted',
      address: { line1: '山田太郎 🎮', city: 'Zürich', country: 'CH' },
    });
    // The stored profile keeps the exact text; only the PDF replaces what its font cannot draw.
    expect((await api.call('GET', '/v1/account/billing-profile', { token: c.token })).body.address.line1).toBe('山田太郎 🎮');
    const { text } = await pdfOf(c.invoiceId, c.token);
    // Read back by pdf.js through the embedded font's Unicode map: exactly the characters sent.
    expect(text).toContain('Zoë Łukasiewicz, Łódź');
    expect(text).toContain('Σωκράτης & Дмитрий Ørsted');
    expect(text).toContain('???? ?');
    expect(text).toContain('Zürich');
    expect(text).toContain('Switzerland');
  });

  it("answers 404 for another account's invoice and for an unknown id, exactly like GET /v1/invoices/:id", async () => {
    const owner = await paidTopUp('pdf-owner@example.com', 1000);
    const other = await api.session('pdf-other@example.com');
    const theirs = await api.call('GET', `/v1/invoices/${owner.invoiceId}/pdf`, { token: other });
    expectEnvelope(theirs, 404, 'not_found');
    const unknown = await api.call('GET', `/v1/invoices/00000000-0000-4000-8000-000000000000/pdf`, { token: other });
    expectEnvelope(unknown, 404, 'not_found');
    expect(theirs.body.error.message).toBe(unknown.body.error.message);
    expectEnvelope(await api.call('GET', '/v1/invoices/not-a-uuid/pdf', { token: other }), 400, 'validation_failed');
  });

  it('leaves the billing function as API Gateway takes bytes: base64 with isBase64Encoded, a file name', async () => {
    const c = await paidTopUp('pdf-lambda@example.com', 1000);
    const rawPath = `/v1/invoices/${c.invoiceId}/pdf`;
    // An HTTP API (payload 2.0) event, as API Gateway hands it to the function.
    const event = {
      version: '2.0',
      routeKey: 'GET /v1/invoices/{id}/pdf',
      rawPath,
      rawQueryString: '',
      headers: { authorization: `Bearer ${c.token}`, host: 'api.example.com' },
      isBase64Encoded: false,
      requestContext: {
        requestId: 'lambda-pdf-1',
        domainName: 'api.example.com',
        http: { method: 'GET', path: rawPath, protocol: 'HTTP/1.1', sourceIp: '203.0.113.9', userAgent: 'test' },
      },
    };
    const context = { awsRequestId: 'lambda-pdf-1', getRemainingTimeInMillis: () => 10_000 };
    const res = (await billingHandler(event as never, context as never)) as {
      statusCode: number;
      headers: Record<string, string>;
      body: string;
      isBase64Encoded?: boolean;
    };
    expect(res.statusCode).toBe(200);
    expect(res.isBase64Encoded).toBe(true);
    expect(res.headers['content-type']).toBe('application/pdf');
    const number = (await invoiceOf(c.invoiceId, c.token)).number;
    expect(res.headers['content-disposition']).toBe(`attachment; filename="${number}.pdf"`);
    const bytes = Buffer.from(res.body, 'base64');
    expect(bytes.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    expect((await pdfText(bytes)).lines).toContain(`Invoice number ${number}`);
  });

  it('needs billing:read', async () => {
    const c = await paidTopUp('pdf-scopes@example.com', 1000);
    const key = async (scopes: string[]) =>
      (await api.call('POST', '/v1/keys', { token: c.token, body: { name: scopes.join(' '), scopes } })).body.secret as string;
    const without = await api.call('GET', `/v1/invoices/${c.invoiceId}/pdf`, { token: await key(['account:read', 'billing:write']) });
    expectEnvelope(without, 403, 'forbidden');
    expect((await getPdf(c.invoiceId, await key(['billing:read']))).res.status).toBe(200);
  });
});

describe('billing profile (GET/PUT /v1/account/billing-profile)', () => {
  it('is all null until set; PUT replaces the whole profile (omitted fields are cleared)', async () => {
    const token = await api.session('profile-replace@example.com');
    const empty = await api.call('GET', '/v1/account/billing-profile', { token });
    expect(empty.body).toEqual({
      name: null,
      company: null,
      address: { line1: null, line2: null, postalCode: null, city: null, region: null, country: null },
      vatId: null,
      vatCheck: null,
      updatedAt: null,
    });
    expect((await api.call('PUT', '/v1/account/billing-profile', { token, body: PROFILE })).status).toBe(200);
    const replaced = await api.call('PUT', '/v1/account/billing-profile', { token, body: { company: 'Other Co', vatId: 'de 123456789' } });
    expect(replaced.body).toMatchObject({ name: null, company: 'Other Co', address: empty.body.address, vatId: 'DE 123456789' });
    // Checked against VIES (the local stand-in's register) as it is saved.
    expect(replaced.body.vatCheck).toMatchObject({ valid: true });
    expect((await api.call('GET', '/v1/account/billing-profile', { token })).body).toEqual(replaced.body);
  });

  it('refuses what cannot be an address or a VAT id with 400 and changes nothing', async () => {
    const token = await api.session('profile-bad@example.com');
    expect((await api.call('PUT', '/v1/account/billing-profile', { token, body: PROFILE })).status).toBe(200);
    const before = (await api.call('GET', '/v1/account/billing-profile', { token })).body;
    const bad: [string, unknown][] = [
      ['unknown country', { ...PROFILE, address: { ...PROFILE.address, country: 'XX' } }],
      ['reserved code', { ...PROFILE, address: { ...PROFILE.address, country: 'EU' } }],
      ['lower-case country', { ...PROFILE, address: { ...PROFILE.address, country: 'gb' } }],
      ['name too long', { ...PROFILE, name: 'x'.repeat(101) }],
      ['control character', { ...PROFILE, company: 'Acme\nDrop' }],
      ['bidirectional override', { ...PROFILE, name: 'Jane \u202eeoD' }],
      ['empty name', { ...PROFILE, name: '   ' }],
      ['VAT id without prefix', { ...PROFILE, vatId: '123456789' }],
      ['VAT id with symbols', { ...PROFILE, vatId: 'DE<script>' }],
      ['VAT id too long', { ...PROFILE, vatId: `DE${'1'.repeat(19)}` }],
      ['unknown field', { ...PROFILE, email: 'x@example.com' }],
      ['unknown address field', { ...PROFILE, address: { street: 'x' } }],
      ['not an object', ['Jane']],
    ];
    for (const [why, body] of bad) {
      const res = await api.call('PUT', '/v1/account/billing-profile', { token, body });
      expectEnvelope(res, 400, 'validation_failed');
      expect((await api.call('GET', '/v1/account/billing-profile', { token })).body, why).toEqual(before);
    }
  });

  it('is one item per account, read and written by its owner only', async () => {
    const a = await api.session('profile-a@example.com');
    const b = await api.session('profile-b@example.com');
    const idA = (await api.call('GET', '/v1/account', { token: a })).body.id as string;
    await api.call('PUT', '/v1/account/billing-profile', { token: a, body: { name: 'Alice' } });
    expect((await api.call('GET', '/v1/account/billing-profile', { token: b })).body.name).toBeNull();
    expect(await getRaw(keys.billingProfile(idA))).toMatchObject({ kind: 'billing-profile', profile: { name: 'Alice' } });
    // The profile item every request reads does not carry it.
    expect(JSON.stringify(await getRaw(keys.account(idA)))).not.toContain('Alice');
    const reader = (await api.call('POST', '/v1/keys', { token: a, body: { name: 'r', scopes: ['billing:read'] } })).body.secret;
    expectEnvelope(await api.call('PUT', '/v1/account/billing-profile', { token: reader, body: { name: 'Mallory' } }), 403, 'forbidden');
    expect((await api.call('GET', '/v1/account/billing-profile', { token: reader })).body.name).toBe('Alice');
  });
});

describe('seller details (platform setting invoiceIssuer)', () => {
  it('are merged field by field like the other settings, and bounded', async () => {
    await api.call('PUT', '/v1/admin/settings', { body: { invoiceIssuer: SELLER } });
    const partial = await api.call('PUT', '/v1/admin/settings', {
      body: { invoiceIssuer: { footer: 'New terms.', address: { city: 'Potsdam' } } },
    });
    expect(partial.status).toBe(200);
    expect(partial.body.invoiceIssuer).toEqual({ ...SELLER, footer: 'New terms.', address: { ...SELLER.address, city: 'Potsdam' } });
    const before = (await api.call('GET', '/v1/admin/settings')).body;
    for (const invoiceIssuer of [
      { legalName: 'x'.repeat(201) },
      { footer: 'x'.repeat(501) },
      { address: { country: 'XK' } },
      { taxId: 'DE\u0000123' },
      { vatId: 'DE123' },
    ]) {
      expectEnvelope(await api.call('PUT', '/v1/admin/settings', { body: { invoiceIssuer } }), 400, 'validation_failed');
    }
    expect((await api.call('GET', '/v1/admin/settings')).body).toEqual(before);
    // Back to the seller the stack seeded, so the order of the tests above does not matter to a re-run.
    const restored = await api.call('PUT', '/v1/admin/settings', { body: { invoiceIssuer: EXAMPLE_SELLER } });
    expect(restored.status).toBe(200);
  });

  it('refuse a non-admin', async () => {
    const token = await api.session('issuer-tenant@example.com');
    expectEnvelope(await api.call('PUT', '/v1/admin/settings', { token, body: { invoiceIssuer: { legalName: 'Me' } } }), 403, 'forbidden');
  });
});
