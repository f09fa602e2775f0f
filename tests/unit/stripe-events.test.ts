import { describe, expect, it } from 'vitest';
import { readAutoTopUpEvent } from '../../shared/payments/autotopup-event.ts';
import { readCheckoutEvent } from '../../shared/payments/checkout-event.ts';
import { readReversalEvent } from '../../shared/payments/refund-event.ts';
import { isHandledStripeEvent, STRIPE_EVENT_TYPES } from '../../shared/payments/stripe-events.ts';

/**
 * The one list of Stripe event types (shared/payments/stripe-events.ts) and the readers the webhook
 * router dispatches to agree: every listed type is one a reader takes (an object it cannot read is a
 * `validation_failed`, not "not mine"), and a type outside the list is not handled.
 */
const readers = [readReversalEvent, readAutoTopUpEvent, readCheckoutEvent];

/** An event of `type` whose object is unreadable, tagged as our auto top-up so that reader looks at it. */
const unreadable = (type: string) => ({ id: 'evt_1', type, data: { object: { metadata: { auto_topup: 'true' } } } });

describe('the Stripe event list', () => {
  it.each(STRIPE_EVENT_TYPES)('%s is read by one of the webhook readers', async (type) => {
    const claimed = await Promise.all(
      readers.map((read) =>
        read(unreadable(type)).then(
          (result) => result !== null,
          (err: unknown) => (err as { code?: string }).code === 'validation_failed',
        ),
      ),
    );
    expect(claimed.filter(Boolean)).toHaveLength(1);
  });

  it('has no type twice and names only types outside it as unhandled', () => {
    expect(new Set(STRIPE_EVENT_TYPES).size).toBe(STRIPE_EVENT_TYPES.length);
    expect(isHandledStripeEvent('customer.subscription.created')).toBe(false);
    expect(isHandledStripeEvent('constructor')).toBe(false);
    expect(STRIPE_EVENT_TYPES.every(isHandledStripeEvent)).toBe(true);
  });
});
