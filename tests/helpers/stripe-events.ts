import Stripe from 'stripe';
import { stripeEventBody } from '../../dev/sandbox-events.ts';

/** Signs as Stripe does, with Stripe's own library (the key is never used to call Stripe). */
const signer = new Stripe('sk_test_signer');

export interface SignOptions {
  secret: string;
  /** Seconds since the epoch written into the signature (an old or future-dated event). */
  timestamp?: number;
  id?: string;
}

/** Any event body, signed as Stripe signs it: `fields` say what the event holds (type, data). */
export function signedStripeFields(fields: Record<string, unknown>, options: SignOptions): { body: string; signature: string } {
  const body = stripeEventBody(fields, options.id ?? `evt_${Math.random().toString(36).slice(2)}`);
  const signature = signer.webhooks.generateTestHeaderString({
    payload: body,
    secret: options.secret,
    ...(options.timestamp ? { timestamp: options.timestamp } : {}),
  });
  return { body, signature };
}

/** A Stripe event of `type` about `object` (a Checkout Session, a charge, a PaymentIntent), signed. */
export const signedStripeEvent = (type: string, object: unknown, options: SignOptions) =>
  signedStripeFields({ type, data: { object } }, options);
