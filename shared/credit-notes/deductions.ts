import { setTimeout as sleep } from 'node:timers/promises';
import { backoffMs } from '../db/write.ts';
import { ApiError, notFound } from '../errors.ts';
import { splitGross, taxOf } from '../invoices/amounts.ts';
import { findInvoiceItem, heldBack, invoiceDeductionWrite, reversalOf, wasPaid } from '../invoices/index.ts';
import { type AppendResult, appendLedger, type LedgerChange } from '../ledger/index.ts';
import { prepareCreditNote } from './index.ts';

const ATTEMPTS = 20;

/**
 * An admin's deduction of paid credit against one invoice (POST /v1/admin/users/:id/credits with
 * `invoiceId`): the ledger entry, the invoice's running deducted total and the credit note are one
 * transaction, so a retried request (its guard) issues nothing twice and a lost race on the invoice
 * or the note counter writes nothing and reads again. The note states the net credit deducted and
 * the tax in proportion, floor(deducted × tax / net) on the running total; no bonus line (the admin
 * names the amount). At most what the invoice credited and refunds, disputes and earlier deductions
 * have not taken back. A deduction without an invoice (free or bonus credit) issues no note.
 */
export async function deductPaidCredit(accountId: string, invoiceId: string, change: LedgerChange): Promise<AppendResult> {
  const cents = -change.amountCents;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    if (attempt > 0) await sleep(backoffMs(Math.min(attempt, 5)));
    const item = await findInvoiceItem(invoiceId);
    if (!item || item.accountId !== accountId) throw notFound('Invoice');
    if (!wasPaid(item.status)) throw new ApiError('conflict', `Invoice ${item.number} is ${item.status}: it credited nothing to deduct`);
    const { refundedCents, disputedCents } = heldBack(item, reversalOf(item));
    const before = item.deductedCents ?? 0;
    const left = item.amountCents - before - splitGross(item, refundedCents + disputedCents).netCents;
    if (cents > left) {
      throw new ApiError(
        'validation_failed',
        `amountCents must be at least -${Math.max(0, left)} (the paid credit of ${item.number} not yet taken back)`,
        {
          issues: [{ field: 'body.amountCents', message: `must be at least -${Math.max(0, left)}` }],
        },
      );
    }
    const after = before + cents;
    const taxAt = (deducted: number) => (item.amountCents === 0 ? 0 : Math.floor((deducted * taxOf(item)) / item.amountCents));
    const note = await prepareCreditNote({
      invoice: item,
      draft: { type: 'credit_note', netCents: cents, taxCents: taxAt(after) - taxAt(before), bonusCents: 0 },
      reason: 'admin_deduction',
    });
    const reference = { ...change.reference, invoiceId: item.invoiceId, invoiceNumber: item.number };
    const result = await appendLedger(accountId, [{ ...change, reference }], {
      extraItems: () => [invoiceDeductionWrite(item, after, note.link), ...note.writes],
    });
    // Applied, or this request was applied before (its guard): either way, done.
    if (result.applied || result.alreadyApplied.length) return result;
  }
  throw new Error('Deduction kept conflicting on the invoice or the credit note counter; try again');
}
