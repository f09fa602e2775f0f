import { keys } from '../db/keys.ts';
import type { MailSuppressionItem } from '../db/items.ts';
import { writeIfFirst } from '../db/write.ts';
import { logger } from '../observability/logger.ts';
import { putMetric } from '../observability/metrics.ts';

/**
 * The suppression list: addresses that bounced for good or complained, which the mail sender
 * never sends to again (shared/mail/sender.ts). SES reports them to an SNS topic through the
 * configuration set; functions/mail-events turns each notification into an item here. (SES's own
 * account-level suppression for the configuration set stops them on its side too.)
 */
export async function suppressAddress(email: string, reason: MailSuppressionItem['reason'], now = new Date()): Promise<boolean> {
  const address = email.trim().toLowerCase();
  const item: MailSuppressionItem = {
    ...keys.mailSuppression(address),
    kind: 'mail-suppression',
    email: address,
    reason,
    at: now.toISOString(),
  };
  // The first reason stays: a later notification for the same address changes nothing.
  const added = await writeIfFirst({ Put: { Item: item, ConditionExpression: 'attribute_not_exists(PK)' } });
  if (added) putMetric('MailSuppressions', 1, { Reason: reason });
  return added;
}

/**
 * The addresses an SES event notification (the JSON of an SNS message) puts on the list: a
 * permanent bounce's recipients, a complaint's. A transient bounce (a full mailbox) is not a reason.
 */
export function suppressionsOf(notification: unknown): { email: string; reason: MailSuppressionItem['reason'] }[] {
  if (!notification || typeof notification !== 'object') return [];
  const n = notification as {
    eventType?: string;
    notificationType?: string;
    bounce?: { bounceType?: string; bouncedRecipients?: { emailAddress?: string }[] };
    complaint?: { complainedRecipients?: { emailAddress?: string }[] };
  };
  const type = n.eventType ?? n.notificationType;
  const addresses = (list: { emailAddress?: string }[] | undefined) =>
    (list ?? []).map((r) => r.emailAddress).filter((e): e is string => typeof e === 'string' && e.includes('@'));
  if (type === 'Bounce' && n.bounce?.bounceType === 'Permanent') {
    return addresses(n.bounce.bouncedRecipients).map((email) => ({ email, reason: 'bounce' as const }));
  }
  if (type === 'Complaint') return addresses(n.complaint?.complainedRecipients).map((email) => ({ email, reason: 'complaint' as const }));
  if (type) logger.info('mail notification ignored', { type });
  return [];
}
