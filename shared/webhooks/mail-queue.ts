import { createHash } from 'node:crypto';
import { getConfig } from '../config/env.ts';
import type { EventItem, MailItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { writeIfFirst } from '../db/write.ts';
import type { MessageType } from '../mail/templates.ts';
import { EVENT_RETENTION_DAYS } from './events.ts';

/**
 * Mail is a subscriber of the account's events (events.ts): when the fan-out (dispatch.ts) takes
 * an event out of the outbox it first queues the messages the event calls for here, for the mail
 * sender (shared/mail/sender.ts). Here, not in shared/mail, because the fan-out calls it and
 * shared/mail renders documents whose modules record events (the folders would import each other).
 * Each message's id is derived from (event, message type) and put only if absent, so a fan-out
 * run twice, or an event put back in the outbox, never queues a second message. Table writes only:
 * the sending happens in the mail sender (shared/mail/sender.ts), apart from the customers' webhooks.
 */

/** The messages an event calls for (none for most). */
export function messageTypesFor(event: Pick<EventItem, 'type' | 'data'>): MessageType[] {
  switch (event.type) {
    case 'invoice.paid':
      return ['receipt'];
    case 'credit_note.issued':
      // A reversal gives back what a credit note took: nothing was taken from the customer.
      return (event.data as { type?: string }).type === 'credit_note' ? ['credit-note'] : [];
    case 'balance.low':
      return ['low-balance'];
    case 'balance.runway_warning':
      return ['runway-warning'];
    case 'auto_topup.failed':
      return ['auto-topup-failed'];
    case 'server.suspended':
      return ['server-suspended'];
    case 'server.unsuspended':
      return ['server-unsuspended'];
    // A reinstall the customer asked for (server.reinstalled) sends nothing: they watch it on the server's page.
    case 'server.installed':
      return ['server-installed'];
    case 'server.install_failed':
      return ['server-install-failed'];
    case 'webhook_endpoint.disabled':
      return ['webhook-endpoint-disabled'];
    case 'api_key.created':
      return ['api-key-created'];
    case 'account.sftp_password_set':
      return ['sftp-password-set'];
    case 'account.email_change_requested':
      return ['email-confirm', 'email-change-notice'];
    case 'account.email_changed':
      return ['email-changed'];
    default:
      return [];
  }
}

/** A UUIDv7-shaped id with the event's time and a hash of (event, message type): the same on every fan-out. */
export function mailIdOf(eventId: string, messageType: string): string {
  const h = createHash('sha256').update(`mail:${eventId}:${messageType}`).digest('hex');
  const time = eventId.replace(/-/g, '').slice(0, 12);
  const variant = (8 | (Number.parseInt(h[3]!, 16) & 3)).toString(16);
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${h.slice(0, 3)}-${variant}${h.slice(4, 7)}-${h.slice(7, 19)}`;
}

/** Queues the event's messages, due now (mail off, `MAIL_FROM` unset: none); returns how many were new. */
export async function queueMailFor(event: EventItem, now: Date): Promise<number> {
  if (!getConfig().mail.from) return 0;
  let made = 0;
  const at = now.toISOString();
  for (const messageType of messageTypesFor(event)) {
    const mailId = mailIdOf(event.eventId, messageType);
    const item: MailItem = {
      ...keys.mail(mailId),
      ...keys.mailDue(mailId, at),
      kind: 'mail',
      mailId,
      messageType,
      accountId: event.accountId,
      eventId: event.eventId,
      // The event's data as it was: the message says what happened then, whatever changed since.
      data: event.data,
      status: 'pending',
      attempts: [],
      nextAttemptAt: at,
      createdAt: at,
      updatedAt: at,
      expiresAt: Math.floor(now.getTime() / 1000) + EVENT_RETENTION_DAYS * 86_400,
    };
    if (await writeIfFirst({ Put: { Item: item, ConditionExpression: 'attribute_not_exists(PK)' } })) made++;
  }
  return made;
}
