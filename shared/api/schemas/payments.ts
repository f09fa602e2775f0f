import * as z from 'zod';
import { text } from './common.ts';

/** The payment provider's webhook (payments group). */

/** Stripe's event as delivered: the raw body, signed over its bytes; no longer than any body the service reads (1 MiB). */
export const StripeEventPayload = text(1_048_576).meta({
  description: 'The event as Stripe sends it (JSON), verified against `Stripe-Signature`.',
});

/** What the webhook did with an event (Stripe only needs the 2xx; the outcome is for logs and tests). */
export const WebhookOutcome = z.enum([
  'credited',
  'already_fulfilled',
  'amount_mismatch',
  'awaiting_payment',
  'voided',
  'kept_open',
  'kept_paid',
  'kept_void',
  'unknown_invoice',
  'ignored',
  'refund_booked',
  'dispute_booked',
  'already_booked',
  'card_saved',
]);
export type WebhookOutcome = z.infer<typeof WebhookOutcome>;
export const WebhookAck = z.object({ received: z.literal(true), outcome: WebhookOutcome }).meta({ id: 'WebhookAck' });
