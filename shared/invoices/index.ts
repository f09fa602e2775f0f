import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { isConditionFailed, type NamedWrite, retrying, transact, writeItem } from '../db/write.ts';
import { eventWrite } from '../webhooks/events.ts';
import { keys } from '../db/keys.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { Page, PageRequest } from '../db/access-patterns.ts';
import { notFound } from '../errors.ts';
import type { Invoice } from '../api/schemas.ts';
import type { InvoiceItem, InvoiceTax } from '../db/items.ts';
import { getSettings } from '../settings/index.ts';
import type { CurrencyCode } from '../currency.ts';
import { currencyOf, grossOf, taxOf } from './amounts.ts';
import { taxLine } from './tax.ts';

/**
 * Invoices: every top-up is one. Numbers are `INV-<year>-<six digits>`, sequential and gapless
 * per year even under concurrent checkouts: a number is taken in the same transaction that writes
 * the invoice, under the condition that the year's counter still holds the value read (the
 * transactional-write pattern), so a number is never skipped or used twice. A failed checkout
 * voids its invoice; the number stays used, so the sequence has no gap.
 *
 * States: open → paid (the webhook, once) or open → void (expired, failed, or the payment page
 * could not be opened). Paid is final: a late `expired` never voids a paid invoice. A paid invoice
 * then follows its refunds and disputes (partially_refunded, refunded, disputed; shared/payments/refunds.ts).
 */
export type InvoiceView = z.infer<typeof Invoice>;
export type Provider = 'stripe' | 'sandbox';

type StoredLine = InvoiceItem['lineItems'][number];
type Line = InvoiceView['lineItems'][number];
type Credit = InvoiceView['credits'][number];

/** Paid, and possibly refunded or disputed since: the money arrived and was credited. */
export const wasPaid = (status: InvoiceItem['status']): boolean => status !== 'open' && status !== 'void';

/**
 * What refunds and disputes hold back of a paid invoice, as money moved. Refunds: the charge's
 * latest running total, less the refunds counted in it that failed since. Disputes: open or lost
 * ones (a won one returned its money, a prevented one never took it), never more than what refunds
 * left of the top-up — so a dispute refunded instead (prevented + refund) takes nothing twice.
 */
export function heldBack(
  item: Pick<InvoiceItem, 'amountCents' | 'taxCents'>,
  reversal: Reversal,
): { refundedCents: number; disputedCents: number } {
  const { refundTotal, failedRefunds } = reversal;
  const failedSince = failedRefunds
    // Counted in the total (made before it was stated) and failed after it was stated; a total with no date counts all.
    .filter((r) => refundTotal.at === null || (r.createdAt <= refundTotal.at && r.failedAt >= refundTotal.at))
    .reduce((total, r) => total + r.amountCents, 0);
  // Card money: the gross the card paid (net plus tax) is the most it can get back.
  const gross = grossOf(item);
  const refundedCents = Math.min(gross, Math.max(0, refundTotal.cents - failedSince));
  const held = reversal.disputes.filter((d) => d.status === 'open' || d.status === 'lost').reduce((total, d) => total + d.amountCents, 0);
  return { refundedCents, disputedCents: Math.min(held, gross - refundedCents) };
}

export const formatNumber = (year: number, n: number): string => `INV-${year}-${String(n).padStart(6, '0')}`;

const sum = (values: number[]): number => values.reduce((total, v) => total + v, 0);

const topUpLine = (amountCents: number): StoredLine => ({ type: 'topup', description: 'Credit top-up', amountCents });

/** Invoices of before the tax setting: no tax, no reason given. */
const NO_TAX: InvoiceTax = { treatment: 'none', reverseCharge: false, country: null, rateBasisPoints: 0, label: 'Tax', reason: null };

/** The lines known when an invoice opens: the top-up, and its tax when there is one. */
const openLines = (amountCents: number, tax: InvoiceTax, taxCents: number): StoredLine[] =>
  taxCents > 0 ? [topUpLine(amountCents), taxLine(tax, taxCents)] : [topUpLine(amountCents)];

/**
 * A stored line as the API shows it. The item stores each line with its amount only, as it always
 * has, so invoices written before lines carried both figures read like one written today: the
 * card pays for the top-up only (the bonus is credit given on top of it), and a line has credited
 * the balance once the invoice is paid (the ledger credits it in the transaction that marks it paid).
 */
const lineOf = (line: StoredLine, paid: boolean): Line => ({
  type: line.type,
  description: line.description,
  amountCents: line.amountCents,
  chargedCents: line.type === 'bonus' ? 0 : line.amountCents,
  // Tax is money for the tax office, never credit.
  creditedCents: paid && line.type !== 'tax' ? line.amountCents : 0,
});

/**
 * The invoice as the API shows it. Both totals are sums over the same lines — `totalCents` of what
 * each line charged, `creditedCents` of what each credited — so they always add up, and the bonus
 * is a line item (charged 0). `credits` (deprecated) repeats the lines that credited the balance.
 */
export function toInvoiceView(item: InvoiceItem): InvoiceView {
  const paid = wasPaid(item.status);
  const lineItems = item.lineItems.map((line) => lineOf(line, paid));
  const credits: Credit[] = lineItems
    .filter((line) => line.creditedCents > 0 && line.type !== 'tax')
    .map(({ type, description, creditedCents }) => ({ type: type as Credit['type'], description, amountCents: creditedCents }));
  const tax = item.tax ?? NO_TAX;
  const totalCents = sum(lineItems.map((line) => line.chargedCents));
  return {
    id: item.invoiceId,
    number: item.number,
    status: item.status,
    currency: currencyOf(item) as CurrencyCode,
    amountCents: item.amountCents,
    bonusPercent: item.bonusPercent,
    lineItems,
    tax: {
      ...tax,
      netCents: item.amountCents,
      taxCents: taxOf(item),
      grossCents: grossOf(item),
    },
    totalCents,
    paidCents: paid ? totalCents : 0,
    credits,
    creditedCents: sum(lineItems.map((line) => line.creditedCents)),
    createdAt: item.createdAt,
    paidAt: item.paidAt ?? null,
    // The invoice's date is its tax point: the payment's. An open or void invoice was never issued.
    issuedAt: paid ? (item.paidAt ?? null) : null,
    voidedAt: item.voidedAt ?? null,
    ...heldBack(item, reversalOf(item)),
    bonusReversedCents: item.bonusReversedCents ?? 0,
    payment: {
      provider: item.provider,
      sessionId: item.sessionId ?? null,
      paymentIntentId: item.paymentIntentId ?? null,
    },
    creditNotes: (item.creditNotes ?? []).map(({ id, number }) => ({ id, number })),
  };
}

/** Opens an invoice with the next number of the year. */
export async function openInvoice(open: {
  accountId: string;
  amountCents: number;
  bonusPercent: number;
  provider: Provider;
  now?: Date;
  /** Chosen by the caller when it must name the invoice before opening it (an auto top-up's claim). */
  invoiceId?: string;
  /** The tax on top of the top-up (shared/invoices/tax.ts); absent: none. */
  taxCents?: number;
  tax?: InvoiceTax;
  /** Stripe Tax's calculation of that tax (an auto top-up's). */
  taxCalculationId?: string;
}): Promise<InvoiceView> {
  const { accountId, amountCents, bonusPercent, provider, now = new Date() } = open;
  const year = now.getUTCFullYear();
  const invoiceId = open.invoiceId ?? randomUUID();
  const { currency } = await getSettings();
  // Contention on the counter is expected (every checkout of the year takes it): many attempts.
  return retrying(
    async () => {
      const counter = await accessPatterns.invoiceCounter(year);
      const last = Number(counter?.last ?? 0);
      const number = formatNumber(year, last + 1);
      const item: InvoiceItem = {
        ...keys.invoice(accountId, number),
        kind: 'invoice',
        invoiceId,
        accountId,
        number,
        status: 'open',
        // The deployment's currency as it is now: the invoice keeps it, whatever the settings say later.
        currency,
        amountCents,
        ...(open.taxCents ? { taxCents: open.taxCents } : {}),
        ...(open.tax ? { tax: open.tax } : {}),
        ...(open.taxCalculationId ? { taxCalculationId: open.taxCalculationId } : {}),
        bonusPercent,
        // The top-up and tax lines are known now; the bonus line is added when the payment arrives.
        lineItems: openLines(amountCents, open.tax ?? NO_TAX, open.taxCents ?? 0),
        provider,
        createdAt: now.toISOString(),
      };
      await transact([
        {
          name: 'counter',
          Update: {
            Key: keys.invoiceCounter(year),
            UpdateExpression: 'SET #last = :next',
            ConditionExpression: counter ? '#last = :last' : 'attribute_not_exists(#last)',
            ExpressionAttributeNames: { '#last': 'last' },
            ExpressionAttributeValues: { ':next': last + 1, ...(counter ? { ':last': last } : {}) },
          },
        },
        { name: 'invoice', Put: { Item: item, ConditionExpression: 'attribute_not_exists(PK)' } },
        {
          name: 'number',
          Put: {
            Item: { ...keys.invoiceNumber(number), kind: 'invoice-number', invoiceId, accountId },
            ConditionExpression: 'attribute_not_exists(PK)',
          },
        },
        {
          name: 'pointer',
          Put: {
            Item: { ...keys.invoicePointer(invoiceId), kind: 'invoice-pointer', accountId, number },
            ConditionExpression: 'attribute_not_exists(PK)',
          },
        },
      ]);
      return toInvoiceView(item);
    },
    {
      attempts: 60,
      // Another checkout took this number (the counter moved, or its number item exists): read the counter again.
      retryIf: (err) => err.has('counter') || err.has('number'),
      exhausted: () => new Error('Could not allocate an invoice number: too much contention'),
    },
  );
}

/** The invoice item wherever it lives (the webhook knows only the invoice id). */
export async function findInvoiceItem(invoiceId: string): Promise<InvoiceItem | undefined> {
  const pointer = await accessPatterns.invoicePointer(invoiceId);
  if (!pointer) return undefined;
  return accessPatterns.invoiceOfAccount(pointer.accountId, pointer.number);
}

/** The caller's invoice item; another account's invoice is 404 exactly like an unknown id. */
export async function getInvoiceItem(accountId: string, invoiceId: string): Promise<InvoiceItem> {
  const pointer = await accessPatterns.invoicePointer(invoiceId);
  if (!pointer || pointer.accountId !== accountId) throw notFound('Invoice');
  const item = await accessPatterns.invoiceOfAccount(accountId, pointer.number);
  if (!item) throw notFound('Invoice');
  return item;
}

/** The caller's invoice; another account's invoice is 404 exactly like an unknown id. */
export async function getInvoice(accountId: string, invoiceId: string): Promise<InvoiceView> {
  return toInvoiceView(await getInvoiceItem(accountId, invoiceId));
}

export async function listInvoices(accountId: string, page: PageRequest): Promise<Page<InvoiceView>> {
  const result = await accessPatterns.invoicesOfAccount(accountId, page);
  return { data: result.data.map(toInvoiceView), nextCursor: result.nextCursor };
}

/** The payment session of an invoice; the sandbox also keeps where its page returns to (Stripe keeps them on the session). */
export async function attachSession(
  invoice: Pick<InvoiceView, 'number'>,
  accountId: string,
  sessionId: string,
  returnUrls?: { successUrl: string; cancelUrl: string },
): Promise<void> {
  await writeItem({
    Update: {
      Key: keys.invoice(accountId, invoice.number),
      UpdateExpression: returnUrls ? 'SET sessionId = :s, successUrl = :ok, cancelUrl = :cancel' : 'SET sessionId = :s',
      ExpressionAttributeValues: {
        ':s': sessionId,
        ...(returnUrls ? { ':ok': returnUrls.successUrl, ':cancel': returnUrls.cancelUrl } : {}),
      },
    },
  });
}

/**
 * open → void, with its `invoice.void` event (the invoice's view as voided) in the same
 * transaction; a paid invoice is never voided. Returns whether this call voided it.
 */
export async function voidInvoice(invoice: InvoiceView, accountId: string, reason: string): Promise<boolean> {
  const now = new Date().toISOString();
  try {
    await transact([
      {
        name: 'invoice',
        Update: {
          Key: keys.invoice(accountId, invoice.number),
          UpdateExpression: 'SET #status = :void, voidedAt = :now, voidReason = :reason',
          ConditionExpression: '#status = :open',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':void': 'void', ':open': 'open', ':now': now, ':reason': reason },
        },
      },
      eventWrite(accountId, 'invoice.void', { ...invoice, status: 'void', voidedAt: now, reason }),
    ]);
    return true;
  } catch (err) {
    // Someone else moved it first (paid, or voided by another delivery of the same event).
    if (isConditionFailed(err, 'invoice')) return false;
    throw err;
  }
}

export interface Payment {
  paidAt: string;
  /** The bonus the same transaction credits (0 for none), so the invoice and the ledger agree. */
  bonusCents: number;
  /** The Checkout Session; null for an auto top-up (a PaymentIntent without a session). */
  sessionId: string | null;
  paymentIntentId: string | null;
  /** The seller and the buyer as read just before booking (shared/invoices/parties.ts): the paid invoice keeps them. */
  parties: NonNullable<InvoiceItem['parties']>;
}

/** Every line of a paid invoice: the top-up charged and credited, its tax charged, and the bonus credited on top when there is one. */
function paidLines(item: Pick<InvoiceItem, 'amountCents' | 'bonusPercent' | 'taxCents' | 'tax'>, bonusCents: number): StoredLine[] {
  const bonus: StoredLine[] =
    bonusCents > 0 ? [{ type: 'bonus', description: `Top-up bonus (${item.bonusPercent} %)`, amountCents: bonusCents }] : [];
  return [...openLines(item.amountCents, item.tax ?? NO_TAX, taxOf(item)), ...bonus];
}

/**
 * The `invoice.paid` event for the same transaction as invoicePaidWrite: the invoice's view as it
 * is once paid (its bonus line included).
 */
export function invoicePaidEvent(item: InvoiceItem, payment: Payment): NamedWrite {
  const { voidedAt: _voidedAt, voidReason: _voidReason, ...unvoided } = item;
  const paid = toInvoiceView({
    ...unvoided,
    status: 'paid',
    paidAt: payment.paidAt,
    parties: payment.parties,
    lineItems: paidLines(item, payment.bonusCents),
    sessionId: payment.sessionId ?? undefined,
    paymentIntentId: payment.paymentIntentId,
  });
  return eventWrite(item.accountId, 'invoice.paid', paid, new Date(payment.paidAt));
}

/**
 * The invoice's move to paid, as a write for the transaction that credits the payment (the ledger
 * appends it): paid is final, so a second delivery fails its condition and credits nothing.
 * A void invoice still turns paid, because the money did arrive. The seller and the buyer are
 * copied in the same write: the issued document is printed from that copy from then on.
 */
export function invoicePaidWrite(accountId: string, invoice: InvoiceItem, payment: Payment): NamedWrite {
  const lines = paidLines(invoice, payment.bonusCents);
  return {
    name: 'invoice-paid',
    Update: {
      Key: keys.invoice(accountId, invoice.number),
      // taxCents and tax: Stripe Tax states them at payment; otherwise as the invoice opened.
      UpdateExpression:
        'SET #status = :paid, paidAt = :at, lineItems = :lines, creditedCents = :credited, sessionId = :session, paymentIntentId = :pi, parties = :parties, taxCents = :tax, tax = :taxSummary REMOVE voidedAt, voidReason',
      ConditionExpression: '#status <> :paid',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':paid': 'paid',
        ':at': payment.paidAt,
        ':lines': lines,
        // Kept on the item for audits of the raw table; the view sums the lines itself.
        ':credited': sum(lines.filter((line) => line.type !== 'tax').map((line) => line.amountCents)),
        ':session': payment.sessionId,
        ':pi': payment.paymentIntentId,
        ':parties': payment.parties,
        ':tax': taxOf(invoice),
        ':taxSummary': invoice.tax ?? NO_TAX,
      },
    },
  };
}

// ---- refunds and disputes -----------------------------------------------------------------------

/** What refunds and disputes have stated about a paid invoice (stored on the invoice item; heldBack says what it took). */
export interface Reversal {
  refundTotal: { cents: number; at: number | null };
  failedRefunds: NonNullable<InvoiceItem['failedRefunds']>;
  disputes: NonNullable<InvoiceItem['disputes']>;
  bonusReversedCents: number;
}

export const reversalOf = (item: InvoiceItem): Reversal => ({
  // An invoice refunded before totals were dated: its total, undated.
  refundTotal: item.refundTotal ?? { cents: item.refundedCents ?? 0, at: null },
  failedRefunds: item.failedRefunds ?? [],
  disputes: item.disputes ?? [],
  bonusReversedCents: item.bonusReversedCents ?? 0,
});

/** A dispute holding money shows first; then whether the card got all or part of the money back. */
export function reversalStatus(item: Pick<InvoiceItem, 'amountCents' | 'taxCents'>, reversal: Reversal): InvoiceItem['status'] {
  const { refundedCents, disputedCents } = heldBack(item, reversal);
  if (disputedCents > 0) return 'disputed';
  if (refundedCents >= grossOf(item)) return 'refunded';
  return refundedCents > 0 ? 'partially_refunded' : 'paid';
}

/**
 * The invoice item once `reversal` is applied, and its write for the transaction that books the
 * ledger entry: conditional on the reversal revision read (a concurrent delivery makes the caller
 * read again) and on the invoice having been paid.
 */
export function invoiceReversalWrite(
  item: InvoiceItem,
  reversal: Reversal,
  creditNote?: NonNullable<InvoiceItem['creditNotes']>[number],
): { next: InvoiceItem; write: NamedWrite } {
  const rev = item.reversalRev ?? 0;
  const { refundedCents } = heldBack(item, reversal);
  const creditNotes = creditNote ? [...(item.creditNotes ?? []), creditNote] : item.creditNotes;
  const next: InvoiceItem = {
    ...item,
    ...reversal,
    refundedCents,
    status: reversalStatus(item, reversal),
    reversalRev: rev + 1,
    ...(creditNotes ? { creditNotes } : {}),
  };
  return {
    next,
    write: {
      name: 'invoice-reversal',
      Update: {
        Key: keys.invoice(item.accountId, item.number),
        UpdateExpression: `SET #status = :status, refundedCents = :refundedCents, refundTotal = :refundTotal, failedRefunds = :failed, disputes = :disputes, bonusReversedCents = :bonus, reversalRev = :rev${creditNote ? ', creditNotes = :notes' : ''}`,
        ConditionExpression: `${rev === 0 ? 'attribute_not_exists(reversalRev)' : 'reversalRev = :rev0'} AND #status IN (:paid, :partial, :full, :disputed)`,
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':status': next.status,
          ':refundedCents': refundedCents,
          ':refundTotal': reversal.refundTotal,
          ':failed': reversal.failedRefunds,
          ':disputes': reversal.disputes,
          ':bonus': reversal.bonusReversedCents,
          ':rev': rev + 1,
          ...(rev === 0 ? {} : { ':rev0': rev }),
          // The whole list, safe under the revision lock: the note is issued in the same transaction.
          ...(creditNote ? { ':notes': creditNotes } : {}),
          ':paid': 'paid',
          ':partial': 'partially_refunded',
          ':full': 'refunded',
          ':disputed': 'disputed',
        },
      },
    },
  };
}

/**
 * An admin's deduction of the invoice's paid credit (shared/credit-notes/deductions.ts), for the
 * transaction that books it: under the same revision lock as refunds and disputes, so the note's
 * running total and theirs never race.
 */
export function invoiceDeductionWrite(
  item: InvoiceItem,
  deductedCents: number,
  creditNote: NonNullable<InvoiceItem['creditNotes']>[number],
): NamedWrite {
  const rev = item.reversalRev ?? 0;
  return {
    name: 'invoice-deduction',
    Update: {
      Key: keys.invoice(item.accountId, item.number),
      UpdateExpression: 'SET deductedCents = :deducted, creditNotes = :notes, reversalRev = :rev',
      ConditionExpression: `${rev === 0 ? 'attribute_not_exists(reversalRev)' : 'reversalRev = :rev0'} AND #status IN (:paid, :partial, :full, :disputed)`,
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':deducted': deductedCents,
        ':notes': [...(item.creditNotes ?? []), creditNote],
        ':rev': rev + 1,
        ...(rev === 0 ? {} : { ':rev0': rev }),
        ':paid': 'paid',
        ':partial': 'partially_refunded',
        ':full': 'refunded',
        ':disputed': 'disputed',
      },
    },
  };
}

/** PaymentIntent → invoice, written with the credit: refunds and disputes name only the payment. */
export function paymentIntentPointer(paymentIntentId: string, invoiceId: string, accountId: string): NamedWrite {
  return {
    name: 'payment-intent',
    Put: { Item: { ...keys.paymentIntent(paymentIntentId), kind: 'payment-intent', invoiceId, accountId } },
  };
}
