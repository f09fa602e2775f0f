import { describe, expect, it } from 'vitest';
import { toInvoiceView } from '../../shared/invoices/index.ts';
import { Invoice } from '../../shared/api/schemas.ts';
import type { InvoiceItem } from '../../shared/db/items.ts';

/**
 * Invoices stored before lines carried what they charged and credited (and before the item kept
 * `creditedCents`) read like invoices written today: the bonus is a line item, the charged amounts
 * sum to the total, the credited amounts to what the balance received.
 */
const stored = (status: InvoiceItem['status'], lineItems: InvoiceItem['lineItems']): InvoiceItem => ({
  PK: 'ACCOUNT#a',
  SK: 'INVOICE#INV-2025-000007',
  kind: 'invoice',
  invoiceId: '00000000-0000-4000-8000-000000000007',
  accountId: 'a',
  number: 'INV-2025-000007',
  status,
  amountCents: 5000,
  bonusPercent: 5,
  lineItems,
  provider: 'stripe',
  createdAt: '2025-06-01T10:00:00.000Z',
  ...(status === 'paid' ? { paidAt: '2025-06-01T10:01:00.000Z', sessionId: 'cs_old' } : {}),
});
const topUp = { type: 'topup' as const, description: 'Credit top-up', amountCents: 5000 };
const bonus = { type: 'bonus' as const, description: 'Top-up bonus (5 %)', amountCents: 250 };

describe('the invoice view of a stored invoice', () => {
  it('a paid top-up with a 5 % bonus has its bonus line: charged 0, credited the bonus; the total is what was charged', () => {
    const view = toInvoiceView(stored('paid', [topUp, bonus]));
    expect(view.lineItems).toEqual([
      { ...topUp, chargedCents: 5000, creditedCents: 5000 },
      { ...bonus, chargedCents: 0, creditedCents: 250 },
    ]);
    expect(view).toMatchObject({ totalCents: 5000, paidCents: 5000, creditedCents: 5250 });
    expect(view.credits).toEqual([topUp, bonus]);
    expect(Invoice.safeParse(view).success).toBe(true);
  });

  it('an open or void invoice charges its top-up and has credited nothing', () => {
    for (const status of ['open', 'void'] as const) {
      const view = toInvoiceView(stored(status, [topUp]));
      expect(view.lineItems).toEqual([{ ...topUp, chargedCents: 5000, creditedCents: 0 }]);
      expect(view).toMatchObject({ totalCents: 5000, paidCents: 0, creditedCents: 0, credits: [] });
      expect(Invoice.safeParse(view).success).toBe(true);
    }
  });
});
