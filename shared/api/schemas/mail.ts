import * as z from 'zod';
import { Email, Timestamp } from './common.ts';
import { OPTIONAL_MESSAGE_TYPES, TRANSACTIONAL_MESSAGE_TYPES } from '../mail-classes.ts';

/** Mail preferences and the one-click unsubscribe (docs/mail.md). The message types come from shared/api/mail-classes.ts. */
const optionalShape = () => Object.fromEntries(OPTIONAL_MESSAGE_TYPES.map((t) => [t, z.boolean()])) as Record<string, z.ZodBoolean>;

export const MailPreferences = z
  .object({
    preferences: z
      .object(optionalShape())
      .meta({ description: 'Each message type that can be turned off: true when it is sent (the default).' }),
    transactional: z
      .array(z.string().max(64))
      .max(64)
      .meta({
        description: `Message types always sent, whatever the preferences: ${TRANSACTIONAL_MESSAGE_TYPES.join(', ')}.`,
      }),
  })
  .meta({ id: 'MailPreferences' });

export const MailPreferencesUpdate = z
  .object({
    preferences: z.record(z.string().max(64), z.boolean()).meta({
      description:
        'Message type → on (true) or off (false); types left out keep their value. A transactional type set off is refused with 400 naming it; an unknown type is refused too.',
    }),
  })
  .strict()
  .superRefine((value, ctx) => {
    const known = new Set<string>([...OPTIONAL_MESSAGE_TYPES, ...TRANSACTIONAL_MESSAGE_TYPES]);
    for (const type of Object.keys(value.preferences))
      if (!known.has(type)) ctx.addIssue({ code: 'custom', path: ['preferences', type], message: `unknown message type ${type}` });
  })
  .meta({ id: 'MailPreferencesUpdate' });

export const UnsubscribeQuery = z.object({
  token: z.string().min(1).max(512).meta({ description: 'The token of the List-Unsubscribe link.' }),
});

export const Unsubscribed = z.object({ unsubscribed: z.literal(true), messageType: z.string().max(64) }).meta({ id: 'Unsubscribed' });

/** A change of the account's e-mail (docs/mail.md, "A changed e-mail"). */
export const EmailChangeRequest = z
  .object({ email: Email.meta({ description: 'The new address: mail goes to it once confirmed from it.' }) })
  .strict()
  .meta({ id: 'EmailChangeRequest' });

export const EmailChange = z
  .object({
    email: Email.meta({ description: 'The address mail goes to now.' }),
    pendingEmail: Email.nullable().meta({ description: 'The address waiting for its confirmation.' }),
    tokenExpiresAt: Timestamp.nullable().meta({ description: 'When the confirmation link stops working.' }),
  })
  .meta({ id: 'EmailChange' });

export const EmailConfirmQuery = z.object({
  token: z.string().min(1).max(256).meta({ description: 'The token of the confirmation link.' }),
});

export const EmailConfirmed = z.object({ confirmed: z.literal(true), email: Email, previousEmail: Email }).meta({ id: 'EmailConfirmed' });
