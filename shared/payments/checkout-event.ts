import type * as Zod from 'zod';
import { ApiError } from '../errors.ts';
import { logger } from '../observability/logger.ts';
import { loadZod } from '../packages.ts';

/**
 * The shape of the webhook's events, checked before anything is read or written. A signature
 * proves who sent a body, not that the body is what we expect: a Checkout Session event without a
 * usable `data.object` is a 400 that changes nothing (Stripe retries it and the dashboard shows
 * it), never a 500 halfway through crediting. zod and the schemas are built with the first event
 * read (shared/packages.ts).
 */
const schemasWith = (z: typeof Zod) => {
  const CheckoutEventType = z.enum([
    'checkout.session.completed',
    'checkout.session.async_payment_succeeded',
    'checkout.session.expired',
    'checkout.session.async_payment_failed',
  ]);

  /** The fields of a Checkout Session the webhook reads, nullable where Stripe sends null; the many others are dropped. */
  const CheckoutSession = z.object({
    id: z.string().min(1),
    payment_status: z.string(),
    amount_total: z.number().int().nullable(),
    /** With Stripe Tax: the net (the lines before tax) and the tax Stripe added (shared/payments/credit.ts). */
    amount_subtotal: z.number().int().nullable().optional(),
    total_details: z
      .object({
        amount_tax: z.number().int().nonnegative(),
        /** Only in a session read back expanded (or the sandbox's): why Stripe Tax charged what it did (shared/payments/stripe-tax.ts). */
        breakdown: z
          .object({ taxes: z.array(z.object({ amount: z.number().int(), taxability_reason: z.string().nullable().optional() })) })
          .nullable()
          .optional(),
      })
      .nullable()
      .optional(),
    customer_details: z
      .object({ address: z.object({ country: z.string().nullable().optional() }).nullable().optional() })
      .nullable()
      .optional(),
    currency: z.string().nullable(),
    client_reference_id: z.string().nullable().optional(),
    metadata: z.record(z.string(), z.string()).nullable().optional(),
    payment_intent: z
      .union([z.string(), z.object({ id: z.string() })])
      .nullable()
      .optional(),
    /** `setup` saves a card for auto top-up (shared/payments/autotopup.ts); absent or `payment` is a top-up. */
    mode: z.string().optional(),
    customer: z
      .union([z.string(), z.object({ id: z.string() })])
      .nullable()
      .optional(),
    setup_intent: z
      .union([z.string(), z.object({ id: z.string() })])
      .nullable()
      .optional(),
  });

  const EventEnvelope = z.object({ type: z.string() });
  const CheckoutEvent = z.object({ type: CheckoutEventType, data: z.object({ object: CheckoutSession }) });
  return { CheckoutEventType, CheckoutSession, EventEnvelope, CheckoutEvent };
};

type Schemas = ReturnType<typeof schemasWith>;
export type CheckoutSession = Zod.infer<Schemas['CheckoutSession']>;
export type CheckoutEvent = Zod.infer<Schemas['CheckoutEvent']>;

let built: Schemas | undefined;
const schemas = async (): Promise<Schemas> => {
  built ??= schemasWith(await loadZod());
  return built;
};

/** The `type` of a verified event (400 without one). */
export async function eventTypeOf(event: unknown): Promise<string> {
  return parseEvent((await schemas()).EventEnvelope, event).type;
}

/** The Checkout Session event of a verified delivery, or null for a type the webhook does not act on. */
export async function readCheckoutEvent(event: unknown): Promise<CheckoutEvent | null> {
  const { CheckoutEventType, CheckoutEvent } = await schemas();
  if (!CheckoutEventType.safeParse(await eventTypeOf(event)).success) return null;
  return parseEvent(CheckoutEvent, event);
}

export function parseEvent<T extends Zod.ZodType>(schema: T, event: unknown): Zod.infer<T> {
  const result = schema.safeParse(event);
  if (result.success) return result.data;
  // Fields named as the request pipeline names them: the event is the request body.
  const issues = result.error.issues.map((issue) => ({
    field: ['body', ...issue.path.map(String)].join('.'),
    message: issue.message,
    code: issue.code,
  }));
  logger.warn('stripe webhook event malformed', { fields: issues.map((issue) => issue.field) });
  throw new ApiError(
    'validation_failed',
    `The event cannot be read (${issues.map((issue) => `${issue.field} ${issue.message}`).join('; ')}); nothing was changed`,
    { issues },
  );
}
