import type * as Zod from 'zod';
import { loadZod } from '../packages.ts';
import { eventTypeOf, parseEvent } from './checkout-event.ts';

/**
 * The shapes of the refund and dispute events the webhook books, checked like the Checkout Session
 * events (checkout-event.ts): a signed event of one of these types without a usable object is a
 * 400 that changes nothing.
 */

/**
 * The refund and dispute events this webhook books (merge into the one list of handled Stripe
 * events). The three refund object events carry the same Refund; the five dispute events the same
 * Dispute, and each is read for where the dispute's money stands.
 */
export const REFUND_EVENT_TYPES = ['charge.refunded', 'refund.failed', 'refund.updated', 'charge.refund.updated'] as const;
export const DISPUTE_EVENT_TYPES = [
  'charge.dispute.created',
  'charge.dispute.updated',
  'charge.dispute.closed',
  'charge.dispute.funds_withdrawn',
  'charge.dispute.funds_reinstated',
] as const;
const idOf = (value: string | { id: string } | null | undefined): string | null =>
  value == null ? null : typeof value === 'string' ? value : value.id;

/** Built with the first event read, with zod (shared/packages.ts). */
const schemasWith = (z: typeof Zod) => {
  const ExpandableId = z.union([z.string().min(1), z.object({ id: z.string().min(1) })]);

  /** A Charge: `amount_refunded` is the running total of its refunds, so every delivery states the whole. */
  const Charge = z.object({
    id: z.string().min(1),
    amount: z.number().int().nonnegative(),
    amount_refunded: z.number().int().nonnegative(),
    currency: z.string(),
    payment_intent: ExpandableId.nullable().optional(),
    metadata: z.record(z.string(), z.string()).nullable().optional(),
  });

  /** A Refund (refund.* and charge.refund.updated): only a failed or canceled one changes the books. */
  const Refund = z.object({
    id: z.string().min(1),
    amount: z.number().int().nonnegative(),
    currency: z.string(),
    status: z.string().nullable(),
    created: z.number().int(),
    charge: ExpandableId.nullable().optional(),
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

  const RefundObjectType = z.enum(['refund.failed', 'refund.updated', 'charge.refund.updated']);
  const DisputeType = z.enum(DISPUTE_EVENT_TYPES);

  /** `created` (seconds) dates the charge's running total: a refund that failed after it was counted in it. */
  const ChargeEvent = z.object({
    id: z.string().min(1),
    type: z.literal('charge.refunded'),
    created: z.number().int(),
    data: z.object({ object: Charge }),
  });
  const RefundObjectEvent = z.object({
    id: z.string().min(1),
    type: RefundObjectType,
    created: z.number().int(),
    data: z.object({ object: Refund }),
  });
  const DisputeEvent = z.object({ id: z.string().min(1), type: DisputeType, data: z.object({ object: Dispute }) });
  return { RefundObjectType, DisputeType, ChargeEvent, RefundObjectEvent, DisputeEvent };
};

type Schemas = ReturnType<typeof schemasWith>;
let built: Schemas | undefined;
const schemas = async (): Promise<Schemas> => {
  built ??= schemasWith(await loadZod());
  return built;
};

export interface ChargeRefunded {
  eventId: string;
  /** When Stripe stated this total (the event's `created`, seconds). */
  at: number;
  chargeId: string;
  paymentIntentId: string | null;
  invoiceId: string | null;
  amountCents: number;
  refundedCents: number;
  currency: string;
}

/** A refund that failed or was canceled: its money went back to the merchant's balance. */
export interface RefundFailed {
  eventId: string;
  /** When the failure was reported (the event's `created`, seconds). */
  failedAt: number;
  refundId: string;
  /** When the refund was made (seconds): a running total stated before it does not count it. */
  createdAt: number;
  paymentIntentId: string | null;
  invoiceId: string | null;
  amountCents: number;
  currency: string;
}

export type DisputeType = (typeof DISPUTE_EVENT_TYPES)[number];

export interface DisputeChange {
  eventId: string;
  type: DisputeType;
  disputeId: string;
  chargeId: string;
  paymentIntentId: string | null;
  amountCents: number;
  status: string;
  currency: string;
}

export type ReversalEvent =
  | { kind: 'refund'; refund: ChargeRefunded }
  | { kind: 'refund_failed'; refund: RefundFailed }
  | { kind: 'dispute'; dispute: DisputeChange };

/**
 * The refund or dispute of a verified delivery; `ignored` for a refund object that did not fail
 * (charge.refunded books refunds); null for a type this does not book.
 */
export async function readReversalEvent(event: unknown): Promise<ReversalEvent | 'ignored' | null> {
  const { RefundObjectType, DisputeType, ChargeEvent, RefundObjectEvent, DisputeEvent } = await schemas();
  const type = await eventTypeOf(event);
  if (type === 'charge.refunded') {
    const { id, created, data } = parseEvent(ChargeEvent, event);
    const charge = data.object;
    return {
      kind: 'refund',
      refund: {
        eventId: id,
        at: created,
        chargeId: charge.id,
        paymentIntentId: idOf(charge.payment_intent),
        invoiceId: charge.metadata?.invoice_id ?? null,
        amountCents: charge.amount,
        refundedCents: charge.amount_refunded,
        currency: charge.currency.toLowerCase(),
      },
    };
  }
  if (RefundObjectType.safeParse(type).success) {
    const { id, created, data } = parseEvent(RefundObjectEvent, event);
    const refund = data.object;
    if (refund.status !== 'failed' && refund.status !== 'canceled') return 'ignored';
    return {
      kind: 'refund_failed',
      refund: {
        eventId: id,
        failedAt: created,
        refundId: refund.id,
        createdAt: refund.created,
        paymentIntentId: idOf(refund.payment_intent),
        invoiceId: refund.metadata?.invoice_id ?? null,
        amountCents: refund.amount,
        currency: refund.currency.toLowerCase(),
      },
    };
  }
  if (DisputeType.safeParse(type).success) {
    const { id, type: disputeType, data } = parseEvent(DisputeEvent, event);
    const dispute = data.object;
    return {
      kind: 'dispute',
      dispute: {
        eventId: id,
        type: disputeType,
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
