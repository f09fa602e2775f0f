import { DEFAULT_TIMEOUT_MS, drainOutbox, runDueDeliveries } from '../../shared/webhooks/dispatch.ts';
import { logger } from '../../shared/observability/logger.ts';

/**
 * The webhook dispatcher (no HTTP; infra/stacks/webhooks-stack.ts): an EventBridge rule invokes
 * `handler` every minute; each run fans the outbox out into deliveries, then makes every attempt
 * that is due (shared/webhooks/dispatch.ts). Runs may overlap (a slow receiver, a backlog): each
 * attempt is claimed under a condition first, so two runs never send the same one. An exception
 * fails the invocation (the Errors alarm); whatever it left half done is picked up by the next run.
 */
export async function handler(): Promise<Record<string, number>> {
  // The clock, not the event's `time`: a retried or late invocation must not act in the past.
  const now = new Date();
  const fanned = await drainOutbox(now);
  const due = await runDueDeliveries(now, { timeoutMs: Number(process.env.WEBHOOK_TIMEOUT_MS ?? DEFAULT_TIMEOUT_MS) });
  const summary = { events: fanned.events, deliveries: fanned.deliveries, ...due };
  if (fanned.events || due.attempted) logger.info('webhook dispatch', summary);
  return summary;
}
