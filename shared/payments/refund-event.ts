import * as z from 'zod';
import { EventEnvelope, parseEvent } from './checkout-event.ts';

/**
 * The shapes of the refund and dispute events the webhook books, checked like the Checkout Session
 * events (checkout-event.ts): a signed event of one of these types without a usable object is a
 * 400 that changes nothing.
 */
const ExpandableId = z.union([z.string().min(1), z.object({ id: z.string().min(1) })]);
const idOf = (value: z.infer<typeof ExpandableId> | null | undefined): string | null =>
  value == null ? null : typeof value === 'string' ? value : value.id;

/** A Charge: `amount_refunded` is the running total of its refunds, so every delivery states the whole. */
const Charge = z.object({
  id: z.string().min(1),
  amount: z.number().int().nonnegative(),
  amount_refunded: z.number().int().nonnegative(),
  currency: z.string(),
  payment_intent: ExpandableId.nullable().optional(),
  metadata: z.record(z.string(), z.string()).nullable().optional(),
});

const Dispute = z.object({
  id: z.string().min(1),
  amount: z.number().int().nonnegative(),
  currency: z.string(),
  status: z.string().min(1),
  charge: ExpandableId,
  payment_intent: ExpandableId.nullable().optional(),
});

const RefundEvent = z.object({ id: z.string().min(1), type: z.literal('charge.refunded'), data: z.object({ object: Charge }) });
const DisputeEvent = z.object({
  id: z.string().min(1),
  type: z.enum(['charge.dispute.created', 'charge.dispute.closed']),
  data: z.object({ object: Dispute }),
});

export interface ChargeRefunded {
  eventId: string;
  chargeId: string;
  paymentIntentId: string | null;
  invoiceId: string | null;
  amountCents: number;
  refundedCents: number;
  currency: string;
}

export interface DisputeChange {
  eventId: string;
  type: 'charge.dispute.created' | 'charge.dispute.closed';
  disputeId: string;
  chargeId: string;
  paymentIntentId: string | null;
  amountCents: number;
  status: string;
  currency: string;
}

export type ReversalEvent = { kind: 'refund'; refund: ChargeRefunded } | { kind: 'dispute'; dispute: DisputeChange };

/** The refund or dispute of a verified delivery, or null for a type this does not book. */
export function readReversalEvent(event: unknown): ReversalEvent | null {
  const { type } = parseEvent(EventEnvelope, event);
  if (type === 'charge.refunded') {
    const { id, data } = parseEvent(RefundEvent, event);
    const charge = data.object;
    return {
      kind: 'refund',
      refund: {
        eventId: id,
        chargeId: charge.id,
        paymentIntentId: idOf(charge.payment_intent),
        invoiceId: charge.metadata?.invoice_id ?? null,
        amountCents: charge.amount,
        refundedCents: charge.amount_refunded,
        currency: charge.currency.toLowerCase(),
      },
    };
  }
  if (type === 'charge.dispute.created' || type === 'charge.dispute.closed') {
    const { id, data } = parseEvent(DisputeEvent, event);
    const dispute = data.object;
    return {
      kind: 'dispute',
      dispute: {
        eventId: id,
        type,
        disputeId: dispute.id,
        chargeId: idOf(dispute.charge)!,
        paymentIntentId: idOf(dispute.payment_intent),
        amountCents: dispute.amount,
        status: dispute.status,
        currency: dispute.currency.toLowerCase(),
      },
    };
  }
  return null;
}
