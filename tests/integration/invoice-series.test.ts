import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { pdfText } from '../helpers/pdf-text.ts';
import { expectLedgerInvariant } from '../helpers/money.ts';
import { getRaw } from '../helpers/db.ts';
import { keys } from '../../shared/db/keys.ts';
import { resetConfig } from '../../shared/config/env.ts';
import { runAutoTopUps } from '../../shared/payments/autotopup.ts';

/**
 * One gapless series of invoice numbers however the top-ups end. 24 top-ups open at once: 20
 * checkouts over HTTP and 4 auto top-ups of the every-minute loop (run here), of which 2 are
 * declined by the sandbox's declining card. A day later (the stack's clock, tests/helpers/clock.ts)
 * 8 checkouts are paid, 6 abandoned (checkout.session.expired) and 6 fail
 * (checkout.session.async_payment_failed), each through the signed webhook of the local sandbox.
 * Then: the numbers are INV-<year>-000001 … 000024 with none missing or twice, every void invoice
 * is listed with its status and its PDF says it was cancelled and nothing was charged, and every
 * paid invoice is dated by its payment, not by its checkout.
 */
let api: TestApi;

beforeAll(async () => {
  delete process.env.STRIPE_SECRET_KEY;
  delete process.env.STRIPE_WEBHOOK_SECRET;
  delete process.env.STRIPE_API_URL;
  resetConfig();
  // The auto top-up loop runs when this file says (repairs off).
  api = await startTestApi({ repairs: false });
});
afterAll(async () => api?.stop());
afterEach(async () => {
  await expectLedgerInvariant();
});

const DAY_MS = 24 * 60 * 60_000;

type InvoiceBody = {
  id: string;
  number: string;
  status: string;
  amountCents: number;
  paidCents: number;
  creditedCents: number;
  createdAt: string;
  paidAt: string | null;
  issuedAt: string | null;
  voidedAt: string | null;
};

async function customer(email: string) {
  const token = await api.session(email);
  const { id } = (await api.call('GET', '/v1/account', { token })).body;
  return { token, id: id as string };
}

/** An account whose auto top-up is due: a sandbox card saved, the rule on, a debit below its threshold. */
async function dueAutoTopUp(email: string, card: 'pm_card_visa' | 'pm_card_chargeDeclined') {
  const c = await customer(email);
  const setup = await api.call('POST', '/v1/billing/payment-method/checkout', { token: c.token, body: {} });
  expect(setup.status, setup.text).toBe(201);
  const saved = await api.call('POST', `/dev/payment-method/${setup.body.sessionId}/complete`, { token: null, body: { card } });
  expect(saved.body).toEqual({ received: true, outcome: 'card_saved' });
  const rule = await api.call('PUT', '/v1/billing/auto-topup', {
    token: c.token,
    body: { enabled: true, belowCents: 300, amountCents: 1000, maxPerDay: 1 },
  });
  expect(rule.status, rule.text).toBe(200);
  const debit = await api.call('POST', `/v1/admin/users/${c.id}/credits`, { body: { amountCents: -300, note: 'below the threshold' } });
  expect(debit.status, debit.text).toBe(200);
  return c;
}

async function pdfLines(invoiceId: string, token: string) {
  const res = await fetch(`${api.baseUrl}/v1/invoices/${invoiceId}/pdf`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return (await pdfText(new Uint8Array(await res.arrayBuffer()))).lines;
}

// 24 checkouts at once on a loaded 2-core machine can outlast the default 30 s: each step gets 120 s.
describe('24 top-ups opened at once, paid, abandoned and declined', { timeout: 120_000 }, () => {
  const buyers: { token: string; id: string }[] = [];
  const checkouts: { invoiceId: string; token: string; outcome: 'paid' | 'expired' | 'failed' }[] = [];
  let invoices: (InvoiceBody & { token: string })[] = [];

  it('open concurrently: 20 checkouts and 4 auto top-ups (2 declined at once)', async () => {
    for (let i = 0; i < 5; i++) buyers.push(await customer(`series-${i}@example.com`));
    const auto = [
      await dueAutoTopUp('series-auto-ok-1@example.com', 'pm_card_visa'),
      await dueAutoTopUp('series-auto-ok-2@example.com', 'pm_card_visa'),
      await dueAutoTopUp('series-auto-declined-1@example.com', 'pm_card_chargeDeclined'),
      await dueAutoTopUp('series-auto-declined-2@example.com', 'pm_card_chargeDeclined'),
    ];
    buyers.push(...auto);

    const outcomes = [...Array(8).fill('paid'), ...Array(6).fill('expired'), ...Array(6).fill('failed')] as const;
    const [opened, loop] = await Promise.all([
      Promise.all(
        outcomes.map(async (outcome, i) => {
          const { token } = buyers[i % 5]!;
          const res = await api.call('POST', '/v1/billing/checkout', { token, body: { amountCents: 1000 } });
          expect(res.status, res.text).toBe(201);
          return { invoiceId: res.body.invoiceId as string, invoiceNumber: res.body.invoiceNumber as string, token, outcome };
        }),
      ),
      runAutoTopUps(),
    ]);
    expect(loop).toMatchObject({ due: 4, attempted: 4, failed: 0 });
    for (const o of opened) expect(o.invoiceNumber).toMatch(/^INV-\d{4}-\d{6}$/);
    checkouts.push(...opened);
  });

  it('a day later 8 checkouts are paid, 6 abandoned and 6 fail, each through the signed webhook', async () => {
    api.clock.advance(DAY_MS);
    const answers = await Promise.all(
      checkouts.map(({ invoiceId, outcome }) =>
        api.call('POST', `/dev/checkout/${invoiceId}/complete`, { token: null, body: { outcome } }).then((r) => r.body.outcome),
      ),
    );
    expect(answers.filter((a) => a === 'credited')).toHaveLength(8);
    expect(answers.filter((a) => a === 'voided')).toHaveLength(12);
  });

  it('leave one gapless series INV-<year>-000001 … 000024, every number once, every invoice listed', async () => {
    for (const b of buyers) {
      const res = await api.call('GET', '/v1/invoices?limit=100', { token: b.token });
      expect(res.status).toBe(200);
      invoices.push(...(res.body.data as InvoiceBody[]).map((i) => ({ ...i, token: b.token })));
    }
    invoices = invoices.sort((a, b) => a.number.localeCompare(b.number));
    expect(invoices).toHaveLength(24);
    const year = new Date(invoices[0]!.createdAt).getUTCFullYear();
    expect(invoices.map((i) => i.number)).toEqual(Array.from({ length: 24 }, (_, n) => `INV-${year}-${String(n + 1).padStart(6, '0')}`));
    // The year's counter stands at the last number given: none taken and lost.
    expect(Number((await getRaw(keys.invoiceCounter(year)))!.last)).toBe(24);
    const count = (status: string) => invoices.filter((i) => i.status === status).length;
    expect({ paid: count('paid'), void: count('void'), open: count('open') }).toEqual({ paid: 10, void: 14, open: 0 });
  });

  it('every void invoice says it was cancelled and nothing was charged', async () => {
    const voids = invoices.filter((i) => i.status === 'void');
    for (const invoice of voids) {
      expect(invoice, invoice.number).toMatchObject({ paidCents: 0, creditedCents: 0, paidAt: null, issuedAt: null });
      expect(invoice.voidedAt, invoice.number).toEqual(expect.any(String));
      const lines = await pdfLines(invoice.id, invoice.token);
      const text = lines.join(' ');
      expect(lines, invoice.number).toContain('Status Void (cancelled)');
      expect(text, invoice.number).toContain('this invoice was never paid and nothing was charged');
      expect(lines, invoice.number).toContain('Total charged USD 0.00');
      // No amount charged anywhere on it: every money figure on a void invoice is 0.
      expect(text.match(/USD \d[\d,]*\.\d\d/g)?.filter((m) => m !== 'USD 0.00') ?? [], invoice.number).toEqual([]);
      expect(text, invoice.number).not.toContain('Invoice date');
    }
  });

  it("every paid invoice is dated by its payment: JSON issuedAt and the PDF's invoice date", async () => {
    const paid = invoices.filter((i) => i.status === 'paid');
    const paidLater = paid.filter((i) => checkouts.some((c) => c.invoiceId === i.id));
    expect(paidLater).toHaveLength(8);
    for (const invoice of paid) {
      expect(invoice.issuedAt, invoice.number).toBe(invoice.paidAt);
      const lines = await pdfLines(invoice.id, invoice.token);
      expect(lines, invoice.number).toContain(`Invoice date ${invoice.paidAt!.slice(0, 10)}`);
      expect(lines, invoice.number).toContain(`Checkout opened ${invoice.createdAt.slice(0, 10)}`);
      expect(lines, invoice.number).toContain('Total charged USD 10.00');
    }
    // The checkouts were paid a day after they opened: their date is the later one.
    for (const invoice of paidLater) expect(invoice.paidAt!.slice(0, 10), invoice.number).not.toBe(invoice.createdAt.slice(0, 10));
  });
});
