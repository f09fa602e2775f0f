import { define } from '../route-def.ts';
import { StripeEventPayload, WebhookAck } from '../schemas/payments.ts';

/** The payments group: the payment provider calls this. */
export const paymentRoutes = define({
  stripeWebhook: {
    method: 'POST',
    path: '/v1/webhooks/stripe',
    group: 'payments',
    tag: 'Billing',
    auth: 'none',
    rawBody: true,
    unlimited: true,
    summary: 'Stripe webhook (signature in Stripe-Signature, no bearer credential)',
    description:
      'Verifies the signature over the raw body (bad, older than 5 minutes or dated more than 5 minutes ahead: 400 `invalid_signature`, nothing changes); a signed Checkout Session event whose object is missing or malformed is 400 `validation_failed`, nothing changes. `checkout.session.completed` (paid) and `checkout.session.async_payment_succeeded` mark the invoice paid and credit the amount and the bonus once; `checkout.session.expired` and `checkout.session.async_payment_failed` void an open invoice (never a paid one). `charge.refunded`, `charge.dispute.created` and `charge.dispute.closed` book what the running refund total of the charge or the state of the dispute takes back (plus the bonus share floor(bonus × taken / top-up)) once, whatever the order or number of deliveries; one for an invoice not paid yet is 409 `conflict` (Stripe delivers it again). Auto top-up (GET /v1/billing/auto-topup): `checkout.session.completed` in setup mode saves the card (only the session the account opened last; a replay saves nothing: `already_fulfilled`); `payment_intent.succeeded` of an auto top-up (metadata `auto_topup`) credits its invoice once like a checkout; `payment_intent.payment_failed` voids it and counts the failure once. Other events (the PaymentIntent events of a Checkout payment among them) are acknowledged and ignored.',
    body: StripeEventPayload,
    response: WebhookAck,
    errors: ['invalid_signature', 'payments_unavailable', 'conflict'],
  },
});
