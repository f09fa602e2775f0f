import type { WebhookOutcome } from '../api/schemas.ts';
import { recordSystemActivity } from '../audit/index.ts';
import type { InvoiceItem } from '../db/items.ts';
import { type InvoiceView, invoicePaidEvent, invoicePaidWrite, paymentIntentPointer, toInvoiceView } from '../invoices/index.ts';
import { currentParties, missingSellerFields } from '../invoices/parties.ts';
import { currentTime } from '../clock.ts';
import { grossOf } from '../invoices/amounts.ts';
import { appendLedger } from '../ledger/index.ts';
import { logger } from '../observability/logger.ts';
import { unsuspendAfterCredit } from '../servers/suspension.ts';

/** The bonus of a top-up, in whole cents rounded down. */
export const bonusFor = (amountCents: number, bonusPercent: number): number => Math.floor((amountCents * bonusPercent) / 100);

/**
 * Paid: the top-up and the bonus as two ledger entries, and the invoice turning paid, in one
 * transaction whose guard keys (`topup:<invoice>`, `bonus:<invoice>`) make it happen once. The one
 * path for every payment: a Checkout Session, and an auto top-up's PaymentIntent (autotopup.ts).
 */
export async function creditInvoice(
  opened: InvoiceItem,
  paid: {
    amountCents: number | null;
    currency: string | null;
    sessionId: string | null;
    paymentIntentId: string | null;
    note: string;
    /** Stripe Tax: what it computed at payment (the invoice opened without it). */
    stripeTax?: { netCents: number | null; taxCents: number; country: string | null; reason: string | null; reverseCharge: boolean };
  },
): Promise<WebhookOutcome> {
  if (paid.stripeTax && paid.stripeTax.netCents !== opened.amountCents) {
    logger.error('stripe tax: the taxed subtotal is not the top-up; not credited', { invoiceId: opened.invoiceId });
    return 'amount_mismatch';
  }
  const item = paid.stripeTax ? withStripeTax(opened, paid.stripeTax) : opened;
  const invoice: InvoiceView = toInvoiceView(item);
  // The card pays the gross (net plus tax); the ledger credits the net.
  if (paid.amountCents !== grossOf(item) || (paid.currency ?? '').toLowerCase() !== invoice.currency) {
    logger.error('stripe webhook amount does not match the invoice; not credited', {
      invoiceId: invoice.id,
      expected: grossOf(item),
      got: paid.amountCents,
      currency: paid.currency,
    });
    return 'amount_mismatch';
  }
  const accountId = item.accountId;
  const bonus = bonusFor(invoice.amountCents, invoice.bonusPercent);
  const reference = { invoiceId: invoice.id, invoiceNumber: invoice.number };
  const paymentIntent = paid.paymentIntentId;
  // Read just before booking (they are not money: a profile change racing the payment lands on either side).
  const parties = await currentParties(accountId);
  // Checkout refuses to open without a seller; one cleared since cannot stop money that arrived.
  if (missingSellerFields(parties.seller).length)
    logger.error('invoice paid while the seller details are not set', { invoiceId: invoice.id });
  const result = await appendLedger(
    accountId,
    [
      {
        type: 'topup',
        amountCents: invoice.amountCents,
        idempotencyKey: `topup:${invoice.id}`,
        reference: { ...reference, note: paid.note },
      },
      ...(bonus > 0
        ? [
            {
              type: 'bonus' as const,
              amountCents: bonus,
              idempotencyKey: `bonus:${invoice.id}`,
              reference: { ...reference, note: `Top-up bonus ${invoice.bonusPercent} %` },
            },
          ]
        : []),
    ],
    {
      extraItems: () => {
        // The payment date is the invoice's date (its tax point).
        const paidAt = new Date(currentTime()).toISOString();
        const payment = {
          paidAt,
          bonusCents: bonus,
          sessionId: paid.sessionId,
          paymentIntentId: paymentIntent,
          parties: { ...parties, copiedAt: paidAt },
        };
        // The invoice turns paid and its `invoice.paid` event is recorded with the credit, or neither.
        return [
          invoicePaidWrite(accountId, item, payment),
          invoicePaidEvent(item, payment),
          // Refunds and disputes name the PaymentIntent, not our invoice (shared/payments/refunds.ts).
          ...(paymentIntent ? [paymentIntentPointer(paymentIntent, invoice.id, accountId)] : []),
        ];
      },
    },
  );
  if (!result.applied) return 'already_fulfilled';
  await paymentActivity(accountId, invoice, 'billing.payment', {
    creditedCents: invoice.amountCents + bonus,
    bonusCents: bonus,
    ...(paid.sessionId ? { sessionId: paid.sessionId } : { paymentIntentId: paymentIntent }),
  });
  await unsuspendAfterCredit(accountId, 'top-up');
  return 'credited';
}

/**
 * The invoice with the tax Stripe Tax stated: its cents, and as rate the one they make of the net
 * (Stripe's own rate is per tax line; this is what the invoice charged), rounded down; with none
 * charged, why not (shared/invoices/tax.ts stripeTaxReason).
 */
function withStripeTax(
  item: InvoiceItem,
  stated: { taxCents: number; country: string | null; reason: string | null; reverseCharge: boolean },
): InvoiceItem {
  const tax = item.tax!;
  return {
    ...item,
    taxCents: stated.taxCents,
    tax: {
      ...tax,
      country: stated.country,
      reason: stated.reason,
      reverseCharge: stated.reverseCharge,
      rateBasisPoints: item.amountCents > 0 ? Math.floor((stated.taxCents * 10_000) / item.amountCents) : 0,
    },
  };
}

/** The account's activity log shows what the payment provider did (the webhook has no caller to log). */
export async function paymentActivity(
  accountId: string,
  invoice: InvoiceView,
  action: string,
  details: Record<string, unknown>,
): Promise<void> {
  await recordSystemActivity({
    accountId,
    actor: 'stripe',
    action,
    target: `invoice:${invoice.id}`,
    details: { invoiceNumber: invoice.number, ...details },
  });
}
