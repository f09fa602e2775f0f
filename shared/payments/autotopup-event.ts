import type * as Zod from 'zod';
import { loadZod } from '../packages.ts';
import { eventTypeOf, parseEvent } from './checkout-event.ts';

/**
 * The PaymentIntent events of an auto top-up, checked like the Checkout Session events
 * (checkout-event.ts): a malformed object is a 400 that changes nothing. Only a PaymentIntent our
 * auto top-up created (metadata `auto_topup`) is read; a Checkout payment's own PaymentIntent
 * events stay ignored, as its session events already credit it.
 */
const schemasWith = (z: typeof Zod) => {
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

  const AutoTopUpEvent = z.object({ type: AutoTopUpEventType, data: z.object({ object: AutoTopUpIntent }) });
  const Tagged = z.object({ data: z.object({ object: z.object({ metadata: z.object({ auto_topup: z.literal('true') }) }) }) });
  return { AutoTopUpEventType, AutoTopUpIntent, AutoTopUpEvent, Tagged };
};

type Schemas = ReturnType<typeof schemasWith>;
export type AutoTopUpIntent = Zod.infer<Schemas['AutoTopUpIntent']>;
export type AutoTopUpEvent = Zod.infer<Schemas['AutoTopUpEvent']>;

let built: Schemas | undefined;
const schemas = async (): Promise<Schemas> => {
  built ??= schemasWith(await loadZod());
  return built;
};

/** A PaymentIntent as Stripe's API answers it (create, retrieve, search), read as its event's object is. */
export const parseAutoTopUpIntent = async (answer: unknown): Promise<AutoTopUpIntent> => (await schemas()).AutoTopUpIntent.parse(answer);

/** The auto top-up PaymentIntent event of a verified delivery, or null for any other event. */
export async function readAutoTopUpEvent(event: unknown): Promise<AutoTopUpEvent | null> {
  const { AutoTopUpEventType, AutoTopUpEvent, Tagged } = await schemas();
  if (!AutoTopUpEventType.safeParse(await eventTypeOf(event)).success || !Tagged.safeParse(event).success) return null;
  return parseEvent(AutoTopUpEvent, event);
}
