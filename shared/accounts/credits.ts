import type { z } from 'zod';
import * as accessPatterns from '../db/access-patterns.ts';
import { ApiError, notFound } from '../errors.ts';
import { type AppendResult, appendLedger, type LedgerChange, toLedgerView } from '../ledger/index.ts';
import type { AdminCredit, AdminCreditResult } from '../api/schemas.ts';
import { unsuspendAfterCredit } from '../servers/suspension.ts';

/**
 * Admin grants (positive) and deductions (negative), as ledger entries carrying the note and the
 * admin's account id. A deduction may take the balance below zero; the next billing pass then
 * suspends. A grant that brings the balance above zero unsuspends at once. A deduction naming the
 * paid invoice whose credit it takes back is booked by `append`, which issues its credit note with
 * it (deductPaidCredit, shared/credit-notes/deductions.ts; passed in by the caller, as credit notes
 * import this folder).
 */
export async function adjustCredit(
  accountId: string,
  input: z.infer<typeof AdminCredit>,
  adminId: string,
  requestKey: string,
  append: (change: LedgerChange) => Promise<AppendResult> = (change) => appendLedger(accountId, [change]),
): Promise<z.infer<typeof AdminCreditResult>> {
  if (!(await accessPatterns.accountById(accountId))) throw notFound('Account');
  const type = input.amountCents > 0 ? 'grant' : 'deduction';
  if (input.invoiceId && type === 'grant') {
    throw new ApiError(
      'validation_failed',
      'invoiceId names the paid invoice a deduction takes credit back from: only with a negative amountCents',
      {
        issues: [{ field: 'body.invoiceId', message: 'only with a negative amountCents' }],
      },
    );
  }
  const change: LedgerChange = {
    type,
    amountCents: input.amountCents,
    idempotencyKey: `admin:${adminId}:${requestKey}`,
    reference: { note: input.note },
    actorId: adminId,
  };
  const result = await append(change);
  if (!result.applied) {
    // The same request again (a retry with the same Idempotency-Key): answer with what it did.
    const guard = await accessPatterns.ledgerGuard(`admin:${adminId}:${requestKey}`);
    const entry = guard ? await accessPatterns.ledgerEntry(accountId, guard.seq) : undefined;
    const profile = await accessPatterns.accountById(accountId);
    if (!entry) throw new Error('Credit adjustment reported as applied before, but its entry is missing');
    return { accountId, entry: toLedgerView(entry), balanceCents: profile?.balanceCents ?? 0 };
  }
  if (input.amountCents > 0) {
    await unsuspendAfterCredit(accountId, 'admin grant');
  }
  const entry = (await accessPatterns.ledgerEntry(accountId, result.entries[0]!.seq))!;
  return { accountId, entry: toLedgerView(entry), balanceCents: result.balanceCents };
}
