import { accessPatterns } from '../db/access-patterns.ts';
import type { InvoiceItem } from '../db/items.ts';
import { isConditionFailed, transact } from '../db/write.ts';
import { ApiError } from '../errors.ts';
import type { WebhookOutcome } from '../api/schemas.ts';
import { appendLedger } from '../ledger/index.ts';
import { unsuspendAfterCredit } from '../servers/suspension.ts';
import { eventWrite } from '../webhooks/events.ts';
import { logger } from '../observability/logger.ts';
import { recordSystemActivity } from '../audit/index.ts';
import {
  disputedCents,
  findInvoiceItem,
  invoiceReversalWrite,
  type Reversal,
  reversalOf,
  toInvoiceView,
  wasPaid,
} from '../invoices/index.ts';
import type { ChargeRefunded, DisputeChange, ReversalEvent } from './refund-event.ts';

/**
 * Refunds and disputes of a paid top-up (ARCHITECTURE.md §7). Each delivery states the whole:
 * a charge's `amount_refunded` is its running total and a dispute's status is where it stands, so
 * the invoice keeps what has been taken back so far and a delivery books only the difference
 * between that and what it states. Replays, duplicates and reordered deliveries therefore book
 * nothing twice: an older total or an already closed dispute changes nothing. The ledger entry and
 * the invoice's new state are one transaction, under a revision lock on the invoice and guard
 * keys per refunded total, per dispute state and per Stripe event.
 *
 * The bonus rule: with the top-up T and its bonus B, having taken back X of T by refunds and by
 * open or lost disputes, the bonus taken back is floor(B × X / T) in total — so a full refund takes
 * all of B, partial refunds never take more than B together, and a won dispute returns its share.
 */
const ATTEMPTS = 10;

/** Open or lost disputes hold money back; a won one returned it. Inquiries (`warning_*`) move no money. */
const disputeState = (status: string): 'open' | 'won' | 'lost' | null =>
  status.startsWith('warning_') ? null : status === 'won' ? 'won' : status === 'lost' ? 'lost' : 'open';

export async function bookReversal(event: ReversalEvent): Promise<WebhookOutcome> {
  const source = event.kind === 'refund' ? event.refund : event.dispute;
  if (event.kind === 'dispute' && disputeState(event.dispute.status) === null) return 'ignored';
  const found = await invoiceOfPayment(source.paymentIntentId, event.kind === 'refund' ? event.refund.invoiceId : null);
  if (!found) {
    logger.warn('stripe refund or dispute for an unknown payment', { chargeId: source.chargeId, paymentIntentId: source.paymentIntentId });
    return 'unknown_invoice';
  }
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const item = attempt === 0 ? found : await findInvoiceItem(found.invoiceId);
    if (!item) return 'unknown_invoice';
    // Stripe refunds only what was paid; before our credit arrived there is nothing to take back yet (409: Stripe retries).
    if (!wasPaid(item.status)) throw new ApiError('conflict', `Invoice ${item.number} is not paid yet; deliver this event again later`);
    if (source.currency !== 'usd' || !amountFits(event, item)) {
      logger.error('stripe refund or dispute does not match the invoice; not booked', {
        invoiceId: item.invoiceId,
        chargeId: source.chargeId,
        invoiceCents: item.amountCents,
      });
      return 'amount_mismatch';
    }
    const before = reversalOf(item);
    const after = event.kind === 'refund' ? withRefund(before, event.refund) : withDispute(before, event.dispute);
    if (!after) return 'already_booked';
    const booked = await book(item, before, after, event);
    if (booked) return event.kind === 'refund' ? 'refund_booked' : 'dispute_booked';
  }
  throw new Error('Refund or dispute booking kept conflicting; Stripe delivers it again');
}

/** The invoice a refund or dispute is about: by its PaymentIntent (recorded when paid), else the charge's metadata. */
async function invoiceOfPayment(paymentIntentId: string | null, invoiceId: string | null): Promise<InvoiceItem | undefined> {
  const pointer = paymentIntentId ? await accessPatterns.invoiceByPaymentIntent(paymentIntentId) : undefined;
  const id = pointer?.invoiceId ?? invoiceId;
  return id ? findInvoiceItem(id) : undefined;
}

function amountFits(event: ReversalEvent, item: InvoiceItem): boolean {
  if (event.kind === 'refund') return event.refund.amountCents === item.amountCents && event.refund.refundedCents <= item.amountCents;
  return event.dispute.amountCents <= item.amountCents;
}

/** The refunded total only grows: an older (smaller) total delivered late changes nothing. */
function withRefund(before: Reversal, refund: ChargeRefunded): Reversal | null {
  if (refund.refundedCents <= before.refundedCents) return null;
  return { ...before, refundedCents: refund.refundedCents };
}

/** A dispute is recorded at its first delivery; only a close (won or lost) moves it on, and a closed one stays closed. */
function withDispute(before: Reversal, change: DisputeChange): Reversal | null {
  const state = disputeState(change.status)!;
  const known = before.disputes.find((d) => d.id === change.disputeId);
  if (known && (known.status !== 'open' || state === 'open')) return null;
  const dispute = { id: change.disputeId, amountCents: known?.amountCents ?? change.amountCents, status: state };
  return { ...before, disputes: [...before.disputes.filter((d) => d.id !== change.disputeId), dispute] };
}

const bonusOf = (item: InvoiceItem): number =>
  item.lineItems.filter((line) => line.type === 'bonus').reduce((sum, line) => sum + line.amountCents, 0);

/** floor(B × X / T), X capped at T: the bonus share of what has been taken back. */
export const bonusShare = (bonusCents: number, takenCents: number, topUpCents: number): number =>
  topUpCents <= 0 ? 0 : Math.floor((bonusCents * Math.min(takenCents, topUpCents)) / topUpCents);

const takenOf = (reversal: Reversal): number => reversal.refundedCents + disputedCents(reversal.disputes);

/** One transaction: the ledger entry (when money moves), the invoice's new state and its event. False when it lost a race. */
async function book(item: InvoiceItem, before: Reversal, target: Reversal, event: ReversalEvent): Promise<boolean> {
  const bonusReversedCents = bonusShare(bonusOf(item), takenOf(target), item.amountCents);
  const after: Reversal = { ...target, bonusReversedCents };
  const cash = takenOf(after) - takenOf(before);
  const bonus = bonusReversedCents - before.bonusReversedCents;
  const { next, write } = invoiceReversalWrite(item, after);
  const type = event.kind === 'refund' ? 'invoice.refunded' : 'invoice.disputed';
  const extras = [write, eventWrite(item.accountId, type, toInvoiceView(next))];
  const amountCents = -(cash + bonus);
  const source = event.kind === 'refund' ? event.refund : event.dispute;
  if (amountCents === 0) {
    // A dispute closed without moving money (lost once already taken, or won before it was ever taken).
    try {
      await transact(extras);
    } catch (err) {
      if (isConditionFailed(err, 'invoice-reversal')) return false;
      throw err;
    }
  } else {
    const reference = { invoiceId: item.invoiceId, invoiceNumber: item.number, note: noteOf(event, cash, bonus) };
    const result = await appendLedger(
      item.accountId,
      [
        {
          type: event.kind === 'refund' ? 'refund' : 'dispute',
          amountCents,
          idempotencyKey:
            event.kind === 'refund'
              ? `refund:${item.invoiceId}:${after.refundedCents}`
              : `dispute:${event.dispute.disputeId}:${after.disputes.find((d) => d.id === event.dispute.disputeId)!.status}`,
          extraGuards: [`stripe-event:${source.eventId}`],
          reference,
        },
      ],
      { extraItems: () => extras },
    );
    if (!result.applied) return false;
  }
  await recordSystemActivity({
    accountId: item.accountId,
    actor: 'stripe',
    action: event.kind === 'refund' ? 'billing.refund' : 'billing.dispute',
    target: `invoice:${item.invoiceId}`,
    details: { invoiceNumber: item.number, ledgerCents: amountCents, cashCents: cash, bonusCents: bonus, status: next.status },
  });
  // A debit may take the balance to zero or below (suspend); a won dispute may lift it again.
  if (amountCents !== 0) await unsuspendAfterCredit(item.accountId, event.kind);
  return true;
}

function noteOf(event: ReversalEvent, cash: number, bonus: number): string {
  const bonusPart = bonus === 0 ? '' : `, bonus ${bonus > 0 ? 'taken back' : 'returned'} ${Math.abs(bonus)} ¢`;
  if (event.kind === 'refund') return `Card refund ${cash} ¢${bonusPart}`;
  return cash >= 0
    ? `Dispute ${event.dispute.disputeId}: ${cash} ¢ taken back${bonusPart}`
    : `Dispute ${event.dispute.disputeId} won: ${-cash} ¢ returned${bonusPart}`;
}
