import { describe, expect, it } from 'vitest';
import { formatCents, renderInvoicePdf, type InvoiceDocument } from '../../shared/invoices/pdf.ts';
import { toInvoiceView } from '../../shared/invoices/index.ts';
import { BillingProfileUpdate, InvoiceIssuer } from '../../shared/api/schemas/billing-profile.ts';
import type { InvoiceItem } from '../../shared/db/items.ts';
import { pdfText } from '../helpers/pdf-text.ts';

/**
 * The invoice PDF's layout in process (no DynamoDB): the amounts as exact integers, every status,
 * and the worst a tenant or an admin can put into it within the schemas' bounds — every field at
 * its longest, characters the embedded font lacks — still makes a readable document.
 */
const paidItem = (over: Partial<InvoiceItem> = {}): InvoiceItem => ({
  PK: 'ACCOUNT#a',
  SK: 'INVOICE#INV-2026-000042',
  kind: 'invoice',
  invoiceId: '0b6c4a34-3c1e-4d38-9a57-0d7c6f0f8e11',
  accountId: 'a',
  number: 'INV-2026-000042',
  status: 'paid',
  amountCents: 123_456_789,
  bonusPercent: 5,
  lineItems: [
    { type: 'topup', description: 'Credit top-up', amountCents: 123_456_789 },
    { type: 'bonus', description: 'Top-up bonus (5 %)', amountCents: 6_172_839 },
  ],
  provider: 'sandbox',
  createdAt: '2026-03-01T23:59:59.000Z',
  paidAt: '2026-03-02T00:00:01.000Z',
  ...over,
});

const nothing: InvoiceDocument['seller'] = {
  legalName: null,
  address: { line1: null, line2: null, postalCode: null, city: null, region: null, country: null },
  taxId: null,
  email: null,
  footer: null,
};
const noBuyer: InvoiceDocument['buyer'] = { name: null, company: null, address: nothing.address, vatId: null, email: null };

const render = async (doc: Partial<InvoiceDocument> & { invoice: InvoiceDocument['invoice'] }) =>
  pdfText(await renderInvoicePdf({ seller: nothing, buyer: noBuyer, ...doc }));

// A case renders whole documents (six for the statuses): about 0.4 s quiet, near vitest's 5 s on a busy
// machine, and the renders are the point, so the cases get a timeout of their own rather than less work.
describe('invoice PDF layout', { timeout: 30_000 }, () => {
  it('formats integer cents exactly, with thousands separators', () => {
    expect(formatCents(0)).toBe('0.00');
    expect(formatCents(5)).toBe('0.05');
    expect(formatCents(100)).toBe('1.00');
    expect(formatCents(123_456_789)).toBe('1,234,567.89');
    expect(formatCents(Number.MAX_SAFE_INTEGER)).toBe('90,071,992,547,409.91');
    expect(formatCents(-1_999)).toBe('-19.99');
  });

  it('prints large amounts exactly and each status as a reader would say it', async () => {
    const { lines } = await render({ invoice: toInvoiceView(paidItem()) });
    expect(lines).toContain('Credit top-up USD 1,234,567.89 USD 1,234,567.89');
    expect(lines).toContain('Top-up bonus (5 %) USD 0.00 USD 61,728.39');
    expect(lines).toContain('Total credited to the balance USD 1,296,296.28');
    // Dates are the UTC calendar days of the stored timestamps; a paid invoice is dated by its payment.
    expect(lines).toContain('Invoice date 2026-03-02');
    expect(lines).toContain('Checkout opened 2026-03-01');
    expect(lines).toContain('Paid date 2026-03-02');
    const labels: [InvoiceItem['status'], string][] = [
      ['paid', 'Paid'],
      ['refunded', 'Refunded'],
      ['partially_refunded', 'Partially refunded'],
      ['disputed', 'Disputed'],
      ['void', 'Void (cancelled)'],
    ];
    for (const [status, label] of labels) {
      const { lines: l } = await render({ invoice: toInvoiceView(paidItem({ status })) });
      expect(l, status).toContain(`Status ${label}`);
    }
  });

  it('shows a lost dispute with the disputed amount and what is left', async () => {
    const item = paidItem({ status: 'disputed', amountCents: 2000, disputes: [{ id: 'dp_1', amountCents: 2000, status: 'lost' }] });
    item.lineItems = [{ type: 'topup', description: 'Credit top-up', amountCents: 2000 }];
    const { lines, text } = await render({ invoice: toInvoiceView(item) });
    expect(lines).toContain('Status Disputed');
    expect(lines).toContain('Disputed USD 20.00');
    expect(lines).toContain('Net paid USD 0.00');
    expect(text).not.toContain('Refunded');
  });

  it('prints Latin Extended-A, Greek and Cyrillic exactly, from an embedded subset of the font', async () => {
    const seller = { ...nothing, legalName: 'Σωκράτης Παπαδόπουλος Α.Ε.', address: { ...nothing.address, city: 'Şanlıurfa' } };
    const buyer = {
      ...noBuyer,
      name: 'Zoë Łukasiewicz, Łódź',
      company: 'Дмитрий Шостакович ООО',
      // Decomposed (e + U+0308, as some keyboards send it) prints as the font's composed letters.
      address: { ...nothing.address, line1: 'Zoe\u0308 Ko\u030bszeg', line2: '東京 🎮', country: 'PL' },
    };
    const bytes = await renderInvoicePdf({ invoice: toInvoiceView(paidItem()), seller, buyer });
    const { lines } = await pdfText(bytes);
    // Seller and buyer share lines: each pair is one line, the seller's first (the buyer's company, then name).
    expect(lines).toContain('Σωκράτης Παπαδόπουλος Α.Ε. Дмитрий Шостакович ООО');
    expect(lines).toContain('Şanlıurfa Zoë Łukasiewicz, Łódź');
    expect(lines).toContain('Zoë Kőszeg');
    // Outside the font (CJK, emoji): `?`, as before.
    expect(lines).toContain('?? ?');
    expect(lines).toContain('Poland');
    // The glyphs used, not the 1.4 MB of font files: a typical invoice stays near 25 KB.
    expect(bytes.length).toBeLessThan(40_000);
  });

  it('keeps every field at its longest, in characters the font lacks, without overlapping or throwing', async () => {
    const cjk = (n: number) => '漢'.repeat(n);
    // Through the schemas, so these are exactly the longest values the API accepts.
    const seller = InvoiceIssuer.parse({
      legalName: cjk(200),
      address: {
        line1: 'W'.repeat(100),
        line2: cjk(100),
        postalCode: '9'.repeat(20),
        city: 'M'.repeat(100),
        region: cjk(100),
        country: 'CI',
      },
      taxId: 'T'.repeat(40),
      email: `${'e'.repeat(240)}@example.com`,
      footer: 'W'.repeat(500),
    });
    const buyer = BillingProfileUpdate.parse({
      name: `${cjk(98)} 🎮`,
      company: 'W'.repeat(100),
      address: { line1: cjk(100), line2: 'W'.repeat(100), postalCode: cjk(20), city: cjk(100), region: 'W'.repeat(100), country: 'TR' },
      vatId: `CH${'9'.repeat(18)}`,
    });
    const { pages, text, lines } = await render({
      invoice: toInvoiceView(paidItem()),
      seller,
      buyer: {
        name: buyer.name!,
        company: buyer.company!,
        address: { ...nothing.address, ...buyer.address },
        vatId: buyer.vatId!,
        email: null,
      },
    });
    expect(text).toContain('?'.repeat(38));
    expect(text).toContain('Côte d’Ivoire');
    expect(text).toContain('Türkiye');
    expect(text).toContain('VAT ID: CH999999999999999999');
    // The totals are still whole lines below everything the two columns hold, and the footer
    // overlaps nothing: it reads after the totals (here on a second page, as nothing else fits).
    const paid = lines.indexOf('Amount paid USD 1,234,567.89');
    expect(paid).toBeGreaterThan(lines.indexOf('Total charged USD 1,234,567.89'));
    expect(lines.slice(paid + 1).join('')).toBe('W'.repeat(500));
    expect(pages).toBe(2);
  });
});
