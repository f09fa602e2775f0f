import * as z from 'zod';
import { EventEnvelope, parseEvent } from './checkout-event.ts';

/**
 * The PaymentIntent events of an auto top-up, checked like the Checkout Session events
 * (checkout-event.ts): a malformed object is a 400 that changes nothing. Only a PaymentIntent our
 * auto top-up created (metadata `auto_topup`) is read; a Checkout payment's own PaymentIntent
 * events stay ignored, as its session events already credit it.
 */
const AutoTopUpEventType = z.enum(['payment_intent.succeeded', 'payment_intent.payment_failed']);

const AutoTopUpIntent = z.object({
  id: z.string().min(1),
  status: z.string().optional(),
  amount: z.number().int(),
  amount_received: z.number().int().nullable().optional(),
  currency: z.string(),
  metadata: z.object({ auto_topup: z.literal('true'), invoice_id: z.string().min(1), account_id: z.string().min(1) }),
  last_payment_error: z
    .object({ code: z.string().nullable().optional(), decline_code: z.string().nullable().optional() })
    .nullable()
    .optional(),
});
export type AutoTopUpIntent = z.infer<typeof AutoTopUpIntent>;

/** A PaymentIntent as Stripe's API answers it (create, retrieve, search), read as its event's object is. */
export const parseAutoTopUpIntent = (answer: unknown): AutoTopUpIntent => AutoTopUpIntent.parse(answer);

const AutoTopUpEvent = z.object({ type: AutoTopUpEventType, data: z.object({ object: AutoTopUpIntent }) });
export type AutoTopUpEvent = z.infer<typeof AutoTopUpEvent>;

const Tagged = z.object({ data: z.object({ object: z.object({ metadata: z.object({ auto_topup: z.literal('true') }) }) }) });

/** The auto top-up PaymentIntent event of a verified delivery, or null for any other event. */
export function readAutoTopUpEvent(event: unknown): AutoTopUpEvent | null {
  const { type } = parseEvent(EventEnvelope, event);
  if (!AutoTopUpEventType.safeParse(type).success || !Tagged.safeParse(event).success) return null;
  return parseEvent(AutoTopUpEvent, event);
}
