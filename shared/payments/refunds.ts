import * as accessPatterns from '../db/access-patterns.ts';
import type { InvoiceItem } from '../db/items.ts';
import { currencyOf } from '../invoices/amounts.ts';
import { backoffMs, isConditionFailed, transact, WriteConflictError } from '../db/write.ts';
import { ApiError } from '../errors.ts';
import type { WebhookOutcome } from '../api/schemas.ts';
import { grossOf, splitGross } from '../invoices/amounts.ts';
import { appendLedger } from '../ledger/index.ts';
import { unsuspendAfterCredit } from '../servers/suspension.ts';
import { eventWrite } from '../webhooks/events.ts';
import { errorFields, logger } from '../observability/logger.ts';
import { recordSystemActivity } from '../audit/index.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  findInvoiceItem,
  heldBack,
  type InvoiceView,
  invoiceReversalWrite,
  type Reversal,
  reversalOf,
  toInvoiceView,
  wasPaid,
} from '../invoices/index.ts';
import type { ChargeRefunded, DisputeChange, RefundFailed, ReversalEvent } from './refund-event.ts';
import { sandbox } from './sandbox.ts';
import { CREDIT_NOTE_COUNTER, creditNoteDraft, type CreditNoteDraft, type Documented, prepareCreditNote } from '../credit-notes/index.ts';
import { paymentsConfig, stripe } from './stripe-client.ts';

/**
 * Refunds and disputes of a paid top-up (docs/design/payments.md), booked as the money moves. Each
 * delivery states a fact that only accumulates: the charge's running refund total as of the
 * event's time (the latest one counts), a refund that failed (once, by its id), where the charge's
 * one dispute stands (it only moves forward: open → lost → won, or prevented). The invoice keeps
 * these facts; what they hold back (heldBack) is a function of them alone, so a delivery books only
 * the difference it makes. Replays, duplicates and reordered deliveries therefore book nothing
 * twice. The ledger entry and the invoice's new state are one transaction, under a revision lock
 * on the invoice and guard keys per revision and per Stripe event.
 *
 * The bonus rule: with the top-up T and its bonus B, having taken back X of T by refunds and by
 * open or lost disputes, the bonus taken back is floor(B × X / T) in total — so a full refund takes
 * all of B, partial refunds never take more than B together, and a won dispute returns its share.
 *
 * Credit notes (shared/credit-notes) are issued in the same transaction, for what is taken back
 * definitively: refunds and lost disputes. An open dispute only holds money (the ledger takes it
 * at once, the note waits for the outcome); a won dispute or a failed refund after a note issues
 * its reversal. The year's note counter is shared by every account, so a lost race on it retries.
 */
const ATTEMPTS = 20;

type DisputeState = NonNullable<InvoiceItem['disputes']>[number]['status'];

/** How far a dispute has gone: it never moves back (a late `created` after the close changes nothing). */
const DISPUTE_RANK: Record<DisputeState, number> = { open: 1, lost: 2, won: 3, prevented: 3 };

/**
 * Where a dispute's money stands after this event, or null when no money moves. Inquiries
 * (`warning_*`, also `warning_closed`) never take money; `prevented` means the charge was refunded
 * instead (the refund takes it back); Stripe's funds events say outright that money moved.
 */
function disputeState(change: DisputeChange): DisputeState | null {
  if (change.type === 'charge.dispute.funds_reinstated') return 'won';
  const byStatus: Record<string, DisputeState> = {
    needs_response: 'open',
    under_review: 'open',
    lost: 'lost',
    won: 'won',
    prevented: 'prevented',
  };
  const state = byStatus[change.status] ?? null;
  if (change.type === 'charge.dispute.funds_withdrawn') return state === 'lost' ? 'lost' : 'open';
  return state;
}

export async function bookReversal(event: ReversalEvent): Promise<WebhookOutcome> {
  const source = event.kind === 'dispute' ? event.dispute : event.refund;
  if (event.kind === 'dispute' && disputeState(event.dispute) === null) return 'ignored';
  const found = await invoiceOfPayment(source.paymentIntentId, event.kind === 'dispute' ? null : event.refund.invoiceId);
  if (!found) {
    logger.warn('stripe refund or dispute for an unknown payment', { paymentIntentId: source.paymentIntentId });
    return 'unknown_invoice';
  }
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    // Racers (on the invoice, or on the credit-note counter) spread apart before reading again.
    if (attempt > 0) await sleep(backoffMs(Math.min(attempt, 5)));
    const item = attempt === 0 ? found : await findInvoiceItem(found.invoiceId);
    if (!item) return 'unknown_invoice';
    // Stripe refunds only what was paid; before our credit arrived there is nothing to take back yet (409: Stripe retries).
    if (!wasPaid(item.status)) throw new ApiError('conflict', `Invoice ${item.number} is not paid yet; deliver this event again later`);
    if (source.currency !== currencyOf(item) || !amountFits(event, item)) {
      logger.error('stripe refund or dispute does not match the invoice; not booked', {
        invoiceId: item.invoiceId,
        invoiceCents: grossOf(item),
      });
      return 'amount_mismatch';
    }
    const before = reversalOf(item);
    const after =
      event.kind === 'refund'
        ? withRefundTotal(before, event.refund)
        : event.kind === 'refund_failed'
          ? withFailedRefund(before, event.refund)
          : withDispute(item, before, event.dispute);
    if (!after) return 'already_booked';
    const booked = await book(item, before, after, event);
    if (booked === 'quiet') return 'already_booked';
    if (booked) return event.kind === 'dispute' ? 'dispute_booked' : 'refund_booked';
  }
  throw new Error('Refund or dispute booking kept conflicting; Stripe delivers it again');
}

/** The invoice a refund or dispute is about: by its PaymentIntent (recorded when paid), else the object's metadata. */
async function invoiceOfPayment(paymentIntentId: string | null, invoiceId: string | null): Promise<InvoiceItem | undefined> {
  const pointer = paymentIntentId ? await accessPatterns.invoiceByPaymentIntent(paymentIntentId) : undefined;
  const id = pointer?.invoiceId ?? invoiceId;
  return id ? findInvoiceItem(id) : undefined;
}

/** Stripe states card money: the charge is the gross (net plus tax), and nothing comes back beyond it. */
function amountFits(event: ReversalEvent, item: InvoiceItem): boolean {
  const gross = grossOf(item);
  if (event.kind === 'refund') return event.refund.amountCents === gross && event.refund.refundedCents <= gross;
  if (event.kind === 'refund_failed') return event.refund.amountCents <= gross;
  return event.dispute.amountCents <= gross;
}

/**
 * The latest running total counts (a later event, or at the same second the larger total): an
 * older total delivered late changes nothing. An undated total (booked before totals were dated)
 * gives way to a dated one that, with the refunds failed since, is at least as large.
 */
function withRefundTotal(before: Reversal, refund: ChargeRefunded): Reversal | null {
  const known = before.refundTotal;
  const failed = before.failedRefunds.reduce((total, r) => total + r.amountCents, 0);
  const newer =
    known.at === null
      ? refund.refundedCents + failed >= known.cents && (refund.refundedCents !== known.cents || failed > 0)
      : refund.at > known.at || (refund.at === known.at && refund.refundedCents > known.cents);
  if (!newer) return null;
  return { ...before, refundTotal: { cents: refund.refundedCents, at: refund.at } };
}

/** A failed (or canceled) refund is recorded once by its id; its money comes back as far as a total counted it. */
function withFailedRefund(before: Reversal, refund: RefundFailed): Reversal | null {
  if (before.failedRefunds.some((r) => r.id === refund.refundId)) return null;
  const failed = { id: refund.refundId, amountCents: refund.amountCents, createdAt: refund.createdAt, failedAt: refund.failedAt };
  return { ...before, failedRefunds: [...before.failedRefunds, failed] };
}

/**
 * A charge has one dispute: the first booked is the one followed, another id is refused (Stripe
 * never opens two; booking both would take the money twice). Its state only moves forward.
 */
function withDispute(item: InvoiceItem, before: Reversal, change: DisputeChange): Reversal | null {
  const state = disputeState(change)!;
  const known = before.disputes.find((d) => d.id === change.disputeId);
  if (!known && before.disputes.length > 0) {
    logger.warn('stripe dispute for a charge that already has one; not booked', {
      invoiceId: item.invoiceId,
      booked: before.disputes[0]!.id,
    });
    return null;
  }
  if (known && DISPUTE_RANK[known.status] >= DISPUTE_RANK[state]) return null;
  const dispute = { id: change.disputeId, amountCents: known?.amountCents ?? change.amountCents, status: state };
  return { ...before, disputes: [...before.disputes.filter((d) => d.id !== change.disputeId), dispute] };
}

const bonusOf = (item: InvoiceItem): number =>
  item.lineItems.filter((line) => line.type === 'bonus').reduce((sum, line) => sum + line.amountCents, 0);

/** The bonus taken with `takenCents` of the top-up: the one rule for the ledger and the credit notes. */
const bonusTakenOf = (item: InvoiceItem, takenCents: number): number => bonusShare(bonusOf(item), takenCents, item.amountCents);

/** floor(B × X / T), X capped at T: the bonus share of what has been taken back. */
export const bonusShare = (bonusCents: number, takenCents: number, topUpCents: number): number =>
  topUpCents <= 0 ? 0 : Math.floor((bonusCents * Math.min(takenCents, topUpCents)) / topUpCents);

/**
 * Credit taken back of the top-up: the net share (splitGross) of the card money refunds and
 * disputes hold, on their running total so partial refunds never round twice; the tax share is
 * the tax office's, never credit.
 */
const takenOf = (item: InvoiceItem, reversal: Reversal): number => {
  const held = heldBack(item, reversal);
  return splitGross(item, held.refundedCents + held.disputedCents).netCents;
};

/** What credit notes document: refunds and lost disputes (an open one only holds the money), and the bonus share taken with them. */
function documentedOf(item: InvoiceItem, reversal: Reversal): Documented {
  const { refundedCents, disputedCents } = heldBack(item, reversal);
  const lost = reversal.disputes.some((d) => d.status === 'lost');
  const grossCents = refundedCents + (lost ? disputedCents : 0);
  // The bonus follows the credit taken back (the net share), as in the ledger.
  return { grossCents, bonusCents: bonusTakenOf(item, splitGross(item, grossCents).netCents) };
}

function noteReason(event: ReversalEvent, draft: CreditNoteDraft) {
  const back = draft.type === 'credit_note';
  if (event.kind === 'dispute') return back ? 'dispute_lost' : 'dispute_won';
  return back ? 'refund' : 'refund_failed';
}

/**
 * One transaction: the ledger entry (when money moves), the invoice's new state and its event (when
 * what it shows changed), the credit note (when what is documented moved). False when it lost a
 * race; `quiet` when nothing the invoice shows moved.
 */
async function book(item: InvoiceItem, before: Reversal, target: Reversal, event: ReversalEvent): Promise<'booked' | 'quiet' | false> {
  const bonusReversedCents = bonusTakenOf(item, takenOf(item, target));
  const after: Reversal = { ...target, bonusReversedCents };
  const net = takenOf(item, after) - takenOf(item, before);
  const bonus = bonusReversedCents - before.bonusReversedCents;
  const draft = creditNoteDraft(item, documentedOf(item, before), documentedOf(item, after));
  const note = draft ? await prepareCreditNote({ invoice: item, draft, reason: noteReason(event, draft) }) : null;
  const { next, write } = invoiceReversalWrite(item, after, note?.link);
  const view = toInvoiceView(next);
  const previous = toInvoiceView(item);
  const visible =
    view.status !== previous.status ||
    view.refundedCents !== previous.refundedCents ||
    view.disputedCents !== previous.disputedCents ||
    event.kind === 'dispute';
  const type = event.kind === 'dispute' ? 'invoice.disputed' : 'invoice.refunded';
  const extras = [...(visible ? [write, eventWrite(item.accountId, type, view)] : [write]), ...(note?.writes ?? [])];
  const amountCents = -(net + bonus);
  if (amountCents === 0) {
    // Nothing moves (a dispute lost once already taken, won before it was ever taken, a total restated later).
    try {
      await transact(extras);
    } catch (err) {
      if (isConditionFailed(err, 'invoice-reversal') || isConditionFailed(err, CREDIT_NOTE_COUNTER)) return false;
      if (err instanceof WriteConflictError) return false;
      throw err;
    }
  } else {
    const reference = { invoiceId: item.invoiceId, invoiceNumber: item.number, note: noteOf(event, net, bonus) };
    const eventGuard = `stripe-event:${event.kind === 'dispute' ? event.dispute.eventId : event.refund.eventId}`;
    const result = await appendLedger(
      item.accountId,
      [
        {
          type: event.kind === 'dispute' ? 'dispute' : 'refund',
          amountCents,
          // The card money alone (the bonus is credit, not money): the admin home's revenue.
          moneyCents: -net,
          // One entry per revision of the invoice's reversal (the lock makes them a chain), and one per event.
          idempotencyKey: `reversal:${item.invoiceId}:${next.reversalRev}`,
          extraGuards: event.kind === 'refund_failed' ? [eventGuard, `refund-failed:${event.refund.refundId}`] : [eventGuard],
          reference,
        },
      ],
      { extraItems: () => extras },
    );
    if (!result.applied) return false;
  }
  if (!visible && amountCents === 0 && !note) return 'quiet';
  await recordSystemActivity({
    accountId: item.accountId,
    actor: 'stripe',
    action: event.kind === 'dispute' ? 'billing.dispute' : 'billing.refund',
    target: `invoice:${item.invoiceId}`,
    details: {
      invoiceNumber: item.number,
      ledgerCents: amountCents,
      netCents: net,
      bonusCents: bonus,
      status: next.status,
      creditNote: note?.item.number ?? null,
    },
  });
  // A debit may take the balance to zero or below (suspend); money given back may lift it again.
  if (amountCents !== 0) await unsuspendAfterCredit(item.accountId, event.kind);
  return 'booked';
}

function noteOf(event: ReversalEvent, net: number, bonus: number): string {
  const bonusPart = bonus === 0 ? '' : `, bonus ${bonus > 0 ? 'taken back' : 'returned'} ${Math.abs(bonus)} ¢`;
  const moved = net >= 0 ? `${net} ¢ taken back` : `${-net} ¢ returned`;
  if (event.kind === 'refund') return `Card refund: ${moved}${bonusPart}`;
  if (event.kind === 'refund_failed') return `Refund ${event.refund.refundId} failed: ${moved}${bonusPart}`;
  const { disputeId, status } = event.dispute;
  return `Dispute ${disputeId} (${event.dispute.type === 'charge.dispute.funds_reinstated' ? 'funds reinstated' : status}): ${moved}${bonusPart}`;
}

// ---- an admin's refund --------------------------------------------------------------------------

/**
 * Asks the provider to refund part or all of a paid invoice. Nothing is booked here: the signed
 * `charge.refunded` webhook books it (shared/payments/refunds.ts), exactly as for a refund made in
 * Stripe's dashboard, so one path books every refund once. The sandbox, which has no Stripe,
 * has the local stack's hook (./sandbox.ts) send the signed charge.refunded event Stripe would send.
 */
export async function refundInvoice(
  invoiceId: string,
  input: { amountCents: number; reason: string },
  idempotencyKey: string,
): Promise<{ refundId: string; amountCents: number; status: string; invoice: InvoiceView }> {
  const config = await paymentsConfig();
  if (!config.provider) throw new ApiError('payments_unavailable', 'Payments are not configured on this platform');
  const item = await findInvoiceItem(invoiceId);
  if (!item) throw new ApiError('not_found', 'Invoice not found');
  if (!wasPaid(item.status) || !item.paymentIntentId) {
    throw new ApiError('conflict', `Invoice ${item.number} is ${item.status}: there is no payment to refund`);
  }
  // Card money: the gross paid, less what refunds gave back.
  const left = grossOf(item) - (item.refundedCents ?? 0);
  if (input.amountCents > left) {
    throw new ApiError('validation_failed', `amountCents must be at most ${left} (what is left unrefunded of ${item.number})`, {
      issues: [{ field: 'body.amountCents', message: `must be at most ${left}` }],
    });
  }
  const metadata = { invoice_id: item.invoiceId, invoice_number: item.number, reason: input.reason };
  if (config.provider === 'sandbox') {
    const refundId = `re_sandbox_${idempotencyKey.replace(/[^A-Za-z0-9]/g, '').slice(0, 24)}`;
    await sandbox().refund({
      paymentIntentId: item.paymentIntentId,
      amountCents: grossOf(item),
      refundedCents: (item.refundedCents ?? 0) + input.amountCents,
      metadata,
    });
    return { refundId, amountCents: input.amountCents, status: 'succeeded', invoice: toInvoiceView((await findInvoiceItem(invoiceId))!) };
  }
  try {
    const refund = await (await stripe(config)).refunds.create(
      { payment_intent: item.paymentIntentId, amount: input.amountCents, metadata },
      // The admin's Idempotency-Key (or the request id): a retried call is the same refund, not a second one.
      { idempotencyKey: `refund:${item.invoiceId}:${idempotencyKey}` },
    );
    return { refundId: refund.id, amountCents: refund.amount, status: refund.status ?? 'pending', invoice: toInvoiceView(item) };
  } catch (err) {
    logger.error('refund: Stripe refused or failed', { invoiceId: item.invoiceId, ...errorFields(err) });
    throw new ApiError(
      'payment_provider_error',
      'The payment provider did not refund; nothing was booked, check the payment and try again',
    );
  }
}
