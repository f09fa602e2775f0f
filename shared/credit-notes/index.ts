import { randomUUID } from 'node:crypto';
import { printedBrand } from '../brand/printed.ts';
import type { z } from 'zod';
import type { CreditNote } from '../api/schemas/credit-notes.ts';
import { EMPTY_ADDRESS } from '../api/empty-address.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { Page, PageRequest } from '../db/access-patterns.ts';
import type { CreditNoteItem, InvoiceItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import type { NamedWrite } from '../db/write.ts';
import { notFound } from '../errors.ts';
import { currencyOf, splitGross } from '../invoices/amounts.ts';
import { getSettings } from '../settings/index.ts';
import { eventWrite } from '../webhooks/events.ts';

/**
 * Credit notes (docs/api.md "Credit notes"): the document a tax office expects when money or
 * credit of a paid invoice is taken back. Numbers are `CN-<year>-<six digits>`, a series of their
 * own, sequential and gapless per year: like invoice numbers (shared/invoices), a number is taken
 * in the transaction that writes the note, conditional on the year's counter still holding the
 * value read. That transaction is the one that books the ledger entry (shared/payments/refunds.ts),
 * so a replayed or concurrent delivery that books nothing issues nothing, and a lost race on the
 * counter writes nothing at all: the caller reads again and retries.
 *
 * A note states the running totals' difference: the money definitively taken back (refunds, lost
 * disputes; an open dispute only holds money, so it waits for the outcome), split into net and tax
 * by splitGross on the totals before and after, and the bonus share taken with it (a credit-only
 * line). A won dispute or a failed refund gives back what a note took: a `reversal` in the same
 * series, referencing the invoice and its latest note, with the amounts going the other way.
 */
export type CreditNoteView = z.infer<typeof CreditNote>;
type Reason = CreditNoteItem['reason'];

export const formatCreditNoteNumber = (year: number, n: number): string => `CN-${year}-${String(n).padStart(6, '0')}`;

/** What has been documented of an invoice so far: card money taken back (gross) and the bonus share taken with it. */
export interface Documented {
  grossCents: number;
  bonusCents: number;
}

/** The note (or reversal) between two documented states of an invoice; null when nothing moved. */
export interface CreditNoteDraft {
  type: CreditNoteItem['type'];
  netCents: number;
  taxCents: number;
  bonusCents: number;
}

export function creditNoteDraft(
  invoice: Pick<InvoiceItem, 'amountCents' | 'taxCents'>,
  before: Documented,
  after: Documented,
): CreditNoteDraft | null {
  if (after.grossCents === before.grossCents && after.bonusCents === before.bonusCents) return null;
  // Split the running totals, never the difference: partial notes never round twice.
  const was = splitGross(invoice, before.grossCents);
  const now = splitGross(invoice, after.grossCents);
  const type =
    after.grossCents > before.grossCents || (after.grossCents === before.grossCents && after.bonusCents > before.bonusCents)
      ? 'credit_note'
      : 'reversal';
  return {
    type,
    netCents: Math.abs(now.netCents - was.netCents),
    taxCents: Math.abs(now.taxCents - was.taxCents),
    bonusCents: Math.abs(after.bonusCents - before.bonusCents),
  };
}

function linesOf(draft: CreditNoteDraft, invoiceNumber: string): CreditNoteItem['lineItems'] {
  const back = draft.type === 'credit_note';
  const lines: CreditNoteItem['lineItems'] = [];
  if (draft.netCents > 0 || draft.bonusCents === 0) {
    lines.push({
      type: 'topup',
      description: back ? `Credit top-up (${invoiceNumber}) taken back` : `Credit top-up (${invoiceNumber}) charged again`,
      amountCents: draft.netCents,
      returnedCents: draft.netCents,
      debitedCents: draft.netCents,
    });
  }
  if (draft.bonusCents > 0) {
    lines.push({
      type: 'bonus',
      description: back ? 'Top-up bonus taken back (credit only)' : 'Top-up bonus given back (credit only)',
      amountCents: draft.bonusCents,
      returnedCents: 0,
      debitedCents: draft.bonusCents,
    });
  }
  return lines;
}

export function toCreditNoteView(item: CreditNoteItem): CreditNoteView {
  return {
    id: item.creditNoteId,
    number: item.number,
    type: item.type,
    reason: item.reason,
    invoice: { id: item.invoiceId, number: item.invoiceNumber },
    reverses: item.reverses ?? null,
    currency: item.currency,
    lineItems: item.lineItems,
    netCents: item.netCents,
    taxCents: item.taxCents,
    totalCents: item.totalCents,
    debitedCents: item.debitedCents,
    issuedAt: item.issuedAt,
  };
}

/** A note to issue: its item, the link the invoice keeps, and the writes for the booking's transaction. */
export interface PreparedCreditNote {
  item: CreditNoteItem;
  link: NonNullable<InvoiceItem['creditNotes']>[number];
  writes: NamedWrite[];
}

/** Names of the note's transaction items: a failed `credit-note-counter` means another note took the number (read again). */
export const CREDIT_NOTE_COUNTER = 'credit-note-counter';

/**
 * Reads the year's counter and what the note copies (the seller, the buyer as they are now), and
 * returns the writes that issue it with the next number: the counter under the condition that it
 * is unchanged, the note, its id pointer, and its `credit_note.issued` event. For the caller's
 * transaction, which must also hold what makes the booking happen once.
 */
export async function prepareCreditNote(input: {
  invoice: InvoiceItem;
  draft: CreditNoteDraft;
  reason: Reason;
  now?: Date;
}): Promise<PreparedCreditNote> {
  const { invoice, draft, reason, now = new Date() } = input;
  const year = now.getUTCFullYear();
  const [counter, settings, profile, account] = await Promise.all([
    accessPatterns.creditNoteCounter(year),
    getSettings(),
    // The stored profile, read here (not through shared/accounts, which imports this module for deductions).
    accessPatterns.billingProfile(invoice.accountId),
    accessPatterns.accountById(invoice.accountId),
  ]);
  const last = Number(counter?.last ?? 0);
  const number = formatCreditNoteNumber(year, last + 1);
  const creditNoteId = randomUUID();
  const lineItems = linesOf(draft, invoice.number);
  const latest = (invoice.creditNotes ?? []).filter((n) => n.type === 'credit_note').at(-1);
  const buyer: CreditNoteItem['buyer'] = {
    name: profile?.profile.name ?? null,
    company: profile?.profile.company ?? null,
    address: { ...EMPTY_ADDRESS, ...profile?.profile.address },
    vatId: profile?.profile.vatId ?? null,
    email: account?.email ?? null,
  };
  const item: CreditNoteItem = {
    ...keys.creditNote(invoice.accountId, number),
    kind: 'credit-note',
    creditNoteId,
    accountId: invoice.accountId,
    number,
    type: draft.type,
    reason,
    invoiceId: invoice.invoiceId,
    invoiceNumber: invoice.number,
    ...(draft.type === 'reversal' && latest ? { reverses: { id: latest.id, number: latest.number } } : {}),
    currency: currencyOf(invoice),
    lineItems,
    netCents: draft.netCents,
    taxCents: draft.taxCents,
    totalCents: draft.netCents + draft.taxCents,
    debitedCents: lineItems.reduce((total, line) => total + line.debitedCents, 0),
    issuedAt: now.toISOString(),
    seller: settings.invoiceIssuer,
    buyer,
    brand: printedBrand(settings.brand),
  };
  const writes: NamedWrite[] = [
    {
      name: CREDIT_NOTE_COUNTER,
      Update: {
        Key: keys.creditNoteCounter(year),
        UpdateExpression: 'SET #last = :next',
        ConditionExpression: counter ? '#last = :last' : 'attribute_not_exists(#last)',
        ExpressionAttributeNames: { '#last': 'last' },
        ExpressionAttributeValues: { ':next': last + 1, ...(counter ? { ':last': last } : {}) },
      },
    },
    { name: 'credit-note', Put: { Item: item, ConditionExpression: 'attribute_not_exists(PK)' } },
    {
      name: 'credit-note-pointer',
      Put: {
        Item: { ...keys.creditNotePointer(creditNoteId), kind: 'credit-note-id', accountId: invoice.accountId, number },
        ConditionExpression: 'attribute_not_exists(PK)',
      },
    },
    eventWrite(invoice.accountId, 'credit_note.issued', toCreditNoteView(item), now),
  ];
  return { item, link: { id: creditNoteId, number, type: draft.type }, writes };
}

/** The caller's credit note item; another account's is 404 exactly like an unknown id. */
export async function getCreditNoteItem(accountId: string, creditNoteId: string): Promise<CreditNoteItem> {
  const pointer = await accessPatterns.creditNotePointer(creditNoteId);
  if (!pointer || pointer.accountId !== accountId) throw notFound('Credit note');
  const item = await accessPatterns.creditNoteOfAccount(accountId, pointer.number);
  if (!item) throw notFound('Credit note');
  return item;
}

export async function getCreditNote(accountId: string, creditNoteId: string): Promise<CreditNoteView> {
  return toCreditNoteView(await getCreditNoteItem(accountId, creditNoteId));
}

/** Newest first (by number, like invoices). */
export async function listCreditNotes(accountId: string, page: PageRequest): Promise<Page<CreditNoteView>> {
  const result = await accessPatterns.creditNotesOfAccount(accountId, page);
  return { data: result.data.map(toCreditNoteView), nextCursor: result.nextCursor };
}
