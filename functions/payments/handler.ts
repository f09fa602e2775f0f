import { createGroupHandler } from '../../shared/http/handler.ts';
import { paymentRoutes } from '../../shared/api/routes/payments.ts';
import { logger } from '../../shared/observability/logger.ts';

/** Payments group: the Stripe webhook. No bearer credential: the signature over the raw body instead. */
export const handler = createGroupHandler('payments', paymentRoutes, {
  stripeWebhook: async ({ body, headers, requestId }) => {
    // Loaded with the first delivery: the Stripe event schemas (zod) stay out of the start chunk.
    const [{ verifyStripeEvent }, { handleStripeEvent }] = await Promise.all([
      import('../../shared/payments/stripe-client.ts'),
      import('../../shared/payments/event-router.ts'),
    ]);
    const event = await verifyStripeEvent(body, headers['stripe-signature']);
    const outcome = await handleStripeEvent(event);
    logger.info('stripe webhook', { requestId, eventId: event.id, type: event.type, outcome });
    return { received: true as const, outcome };
  },
});
