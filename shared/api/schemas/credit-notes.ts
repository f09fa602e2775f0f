import * as z from 'zod';
import { Uuid, text, Cents, Timestamp, listOf } from './common.ts';

/** Credit notes (billing group): what refunds, lost disputes and admin deductions took back of a paid invoice. */

const DocumentRef = z.object({
  id: Uuid,
  number: text(32),
});

/** An invoice's credit notes, oldest first (GET /v1/credit-notes/:id for each). */
export const InvoiceCreditNotes = z.array(DocumentRef.extend({ number: text(32).meta({ example: 'CN-2026-000007' }) })).max(1000);

const CreditNoteLine = z
  .object({
    type: z.enum(['topup', 'bonus']).meta({ description: 'topup: the credit bought, net of tax; bonus: its bonus share (credit only).' }),
    description: text(500),
    amountCents: Cents,
    returnedCents: Cents.meta({
      description: 'Money this line returns to the card, before tax (a reversal: charged again). The bonus line returns 0.',
    }),
    debitedCents: Cents.meta({ description: 'Credit this line takes off the balance (a reversal: gives back).' }),
  })
  .meta({ id: 'CreditNoteLine' });

export const CreditNote = z
  .object({
    id: Uuid,
    number: text(32).meta({ description: 'Its own series, sequential and gapless per year.', example: 'CN-2026-000007' }),
    type: z.enum(['credit_note', 'reversal']).meta({
      description:
        'credit_note: money and credit taken back from the invoice. reversal: a won dispute or a failed refund gave back what an earlier credit note took; its amounts go the other way.',
    }),
    reason: z.enum(['refund', 'dispute_lost', 'admin_deduction', 'dispute_won', 'refund_failed']),
    invoice: DocumentRef.meta({ description: 'The invoice it corrects.' }),
    reverses: DocumentRef.nullable().meta({ description: "A reversal: the invoice's latest credit note it answers; else null." }),
    currency: text(3).meta({ description: 'ISO 4217, lower case: the invoice’s.', example: 'usd' }),
    lineItems: z.array(CreditNoteLine).min(1).max(2),
    netCents: Cents.meta({ description: "The sum of the lines' returnedCents: the net amount." }),
    taxCents: Cents.meta({ description: 'The tax reversed with it, in proportion to the invoice.' }),
    totalCents: Cents.meta({ description: 'netCents + taxCents: the money returned to the card (a reversal: taken again).' }),
    debitedCents: Cents.meta({ description: "The sum of the lines' debitedCents: credit taken off the balance (a reversal: given back)." }),
    issuedAt: Timestamp,
  })
  .meta({
    id: 'CreditNote',
    description: 'Issued in the same transaction as the ledger entry that books what it states: never twice, never a number skipped.',
  });

export const CreditNoteList = listOf(CreditNote, 'CreditNoteList');
