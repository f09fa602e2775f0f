/**
 * The Stripe event types this service books, one entry per type with what it books. The one list:
 * the webhook router acts on these types only (handleStripeEvent answers `ignored` to any other, so a
 * type handled but not listed would never be booked and its test would fail), the deploy command
 * subscribes the endpoint to exactly these (dev/stripe-endpoint.ts), the reconciliation run lists
 * them (reconcile-events.ts), the admin health view reports those an endpoint misses, and
 * docs/deploy.md's list is generated from it (`npm run docs`). No imports: the docs generator and
 * the admin function read it without loading the booking code.
 */
export const STRIPE_EVENTS = {
  'checkout.session.completed': 'a paid Checkout top-up credits its invoice; a setup-mode session saves the card for auto top-up',
  'checkout.session.async_payment_succeeded': 'a delayed Checkout payment arrived: credits its invoice',
  'checkout.session.async_payment_failed': 'a delayed Checkout payment failed: voids its open invoice',
  'checkout.session.expired': 'an unpaid Checkout session ran out: voids its open invoice',
  'payment_intent.succeeded': 'an auto top-up charge succeeded: credits its invoice',
  'payment_intent.payment_failed': 'an auto top-up charge failed: counts the failure and voids its invoice',
  'charge.refunded': "books a refund's debit (the charge's running refund total)",
  'refund.failed': 'a booked refund failed: gives its debit back, once',
  'refund.updated': 'a booked refund moved to failed or canceled: gives its debit back, once',
  'charge.refund.updated': 'the same, as Stripe reports it for some payment methods',
  'charge.dispute.created': 'takes the disputed amount (one dispute per charge)',
  'charge.dispute.updated': "follows the dispute's status: open or lost takes, won gives back, prevented and inquiries take nothing",
  'charge.dispute.closed': 'gives the disputed amount back when won (also after a loss), keeps it when lost',
  'charge.dispute.funds_withdrawn': 'takes the disputed amount if not already taken',
  'charge.dispute.funds_reinstated': 'gives the disputed amount back (a win on appeal)',
} as const satisfies Record<string, string>;

export type StripeEventType = keyof typeof STRIPE_EVENTS;

/** The list as Stripe's `enabled_events` and `types[]` take it, in the order above. */
export const STRIPE_EVENT_TYPES = Object.keys(STRIPE_EVENTS) as StripeEventType[];

export const isHandledStripeEvent = (type: string): type is StripeEventType => Object.hasOwn(STRIPE_EVENTS, type);
