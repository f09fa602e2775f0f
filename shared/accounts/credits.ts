import type { z } from 'zod';
import * as accessPatterns from '../db/access-patterns.ts';
import { notFound } from '../errors.ts';
import { appendLedger, toLedgerView } from '../ledger/index.ts';
import type { AdminCredit, AdminCreditResult } from '../api/schemas.ts';
import { unsuspendAfterCredit } from '../servers/suspension.ts';

/**
 * Admin grants (positive) and deductions (negative), as ledger entries carrying the note and the
 * admin's account id. A deduction may take the balance below zero; the next billing pass then
 * suspends. A grant that brings the balance above zero unsuspends at once.
 */
export async function adjustCredit(
  accountId: string,
  input: z.infer<typeof AdminCredit>,
  adminId: string,
  requestKey: string,
): Promise<z.infer<typeof AdminCreditResult>> {
  if (!(await accessPatterns.accountById(accountId))) throw notFound('Account');
  const type = input.amountCents > 0 ? 'grant' : 'deduction';
  const result = await appendLedger(accountId, [
    {
      type,
      amountCents: input.amountCents,
      idempotencyKey: `admin:${adminId}:${requestKey}`,
      reference: { note: input.note },
      actorId: adminId,
    },
  ]);
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
