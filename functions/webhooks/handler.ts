import { dispatchFor } from '../../shared/webhooks/dispatch.ts';
import { logger } from '../../shared/observability/logger.ts';

/**
 * The webhook dispatcher (no HTTP; infra/stacks/webhooks-stack.ts): an EventBridge rule invokes
 * `handler` every minute; each run fans the outbox out into deliveries and makes the due attempts,
 * polling again every second while there is work, for up to 50 s (`dispatchFor`,
 * shared/webhooks/dispatch.ts), fairly across accounts. Runs may still overlap (slow table writes):
 * each attempt is claimed under a condition first, so two runs never send the same one. An
 * exception fails the invocation (the Errors alarm); whatever it left half done is picked up by the
 * next run.
 */
export async function handler(): Promise<Record<string, number>> {
  const summary: Record<string, number> = { ...(await dispatchFor()) };
  if (summary.events || summary.attempted || summary.deferred) logger.info('webhook dispatch', summary);
  return summary;
}
