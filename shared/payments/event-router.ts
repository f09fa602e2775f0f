import type { WebhookOutcome } from '../api/schemas.ts';
import { readAutoTopUpEvent } from './autotopup-event.ts';
import { autoTopUpFailed, autoTopUpPaid, resumeAfterPayment, saveCard } from './autotopup.ts';
import { type CheckoutSession, eventTypeOf, readCheckoutEvent } from './checkout-event.ts';
import { creditCheckout, voidUnpaid } from './checkout.ts';
import { readReversalEvent } from './refund-event.ts';
import { bookReversal } from './refunds.ts';
import { isHandledStripeEvent } from './stripe-events.ts';

/**
 * The event router: each verified Stripe event (a webhook delivery, shared/payments/stripe-client.ts
 * verifyStripeEvent, or one the reconciliation listed) goes to the flow it belongs to. It sits above
 * the flows (checkout.ts, autotopup.ts, refunds.ts), which never import it or each other.
 */
/**
 * Acts on a verified event (a webhook delivery, or one the reconciliation run listed from Stripe);
 * an event of a listed type it cannot read is 400 before anything changes.
 */
export async function handleStripeEvent(event: unknown): Promise<WebhookOutcome> {
  // Only the types of the one list (stripe-events.ts) are booked: a type handled below but not listed
  // there would be missed by the endpoint's subscription and the reconciliation run alike.
  if (!isHandledStripeEvent(await eventTypeOf(event))) return 'ignored';
  const reversal = await readReversalEvent(event);
  if (reversal === 'ignored') return 'ignored';
  if (reversal) return bookReversal(reversal);
  // An auto top-up's off-session PaymentIntent (a Checkout payment's own PaymentIntent events are ignored).
  const autoTopUp = await readAutoTopUpEvent(event);
  if (autoTopUp)
    return autoTopUp.type === 'payment_intent.succeeded' ? autoTopUpPaid(autoTopUp.data.object) : autoTopUpFailed(autoTopUp.data.object);
  const checkout = await readCheckoutEvent(event);
  if (!checkout) return 'ignored';
  const session = checkout.data.object;
  // A card saved for auto top-up (Checkout in setup mode): nothing to credit.
  if (session.mode === 'setup') return checkout.type === 'checkout.session.completed' ? saveCard(session) : 'ignored';
  switch (checkout.type) {
    case 'checkout.session.completed':
      return session.payment_status === 'paid' ? paidCheckout(session) : 'awaiting_payment';
    case 'checkout.session.async_payment_succeeded':
      return paidCheckout(session);
    case 'checkout.session.expired':
      return voidUnpaid(session, checkout.type, 'payment session expired');
    case 'checkout.session.async_payment_failed':
      return voidUnpaid(session, checkout.type, 'payment failed');
  }
}

/** A Checkout payment credited; an auto top-up that needed the customer's authentication, paid on its page, turns back on. */
async function paidCheckout(session: CheckoutSession): Promise<WebhookOutcome> {
  const { outcome, item } = await creditCheckout(session);
  if (item && (outcome === 'credited' || outcome === 'already_fulfilled')) await resumeAfterPayment(item.accountId, item.invoiceId);
  return outcome;
}
