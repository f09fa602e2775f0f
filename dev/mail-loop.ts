import { MailSender } from '../shared/mail/sender.ts';
import { errorFields, logger } from '../shared/observability/logger.ts';
import { startPassLoop } from './repair-loop.ts';

/**
 * The local stand-in for the mail sender function (functions/mail, every minute in AWS): polls
 * the due messages every `intervalMs`; the sends run in one MailSender, fair across accounts.
 */
export interface MailLoop {
  stop(): Promise<void>;
}

export const DEFAULT_MAIL_INTERVAL_MS = 250;

export function startMailLoop(intervalMs = DEFAULT_MAIL_INTERVAL_MS): MailLoop {
  const sender = new MailSender();
  const loop = startPassLoop(async () => {
    await sender.pollDue(new Date()).catch((err: unknown) => logger.error('mail pass failed', errorFields(err)));
  }, intervalMs);
  return {
    stop: async () => {
      await loop.stop();
      await sender.finish();
    },
  };
}
