import { sendMailFor } from '../../shared/mail/sender.ts';
import { suppressAddress, suppressionsOf } from '../../shared/mail/suppression.ts';
import { logger } from '../../shared/observability/logger.ts';

/**
 * Customer mail (no HTTP; infra/stacks/mail-stack.ts), two functions from one bundle:
 * - `handler`, the sender: an EventBridge rule invokes it every minute; it sends the due messages
 *   the webhook fan-out queued (shared/mail/sender.ts), polling every second while there is work.
 *   The only function allowed to send through SES.
 * - `bounces`: SES's bounce and complaint notifications, through SNS, onto the suppression list.
 */
export async function handler(): Promise<Record<string, number>> {
  const summary = { ...(await sendMailFor()) };
  if (summary.sent || summary.retrying || summary.failed || summary.suppressed) logger.info('mail sent', summary);
  return summary;
}

interface SnsEvent {
  Records?: { Sns?: { Message?: string } }[];
}

export async function bounces(event: SnsEvent): Promise<{ suppressed: number }> {
  let suppressed = 0;
  for (const record of event.Records ?? []) {
    let notification: unknown;
    try {
      notification = JSON.parse(record.Sns?.Message ?? '');
    } catch {
      logger.warn('mail notification not JSON');
      continue;
    }
    for (const { email, reason } of suppressionsOf(notification)) if (await suppressAddress(email, reason)) suppressed++;
  }
  return { suppressed };
}
