import { createGroupHandler } from '../../shared/http/handler.ts';
import { paymentRoutes } from '../../shared/api/routes/payments.ts';
import { logger } from '../../shared/observability/logger.ts';
import { verifyStripeEvent } from '../../shared/payments/stripe-client.ts';
import { handleStripeEvent } from '../../shared/payments/event-router.ts';

/** Payments group: the Stripe webhook. No bearer credential: the signature over the raw body instead. */
export const handler = createGroupHandler('payments', paymentRoutes, {
  stripeWebhook: async ({ body, headers, requestId }) => {
    const event = await verifyStripeEvent(body, headers['stripe-signature']);
    const outcome = await handleStripeEvent(event);
    logger.info('stripe webhook', { requestId, eventId: event.id, type: event.type, outcome });
    return { received: true as const, outcome };
  },
});
