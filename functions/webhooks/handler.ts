import { drainOutbox, runDueDeliveries } from '../../shared/webhooks/dispatch.ts';
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
  // The due attempts run even when the fan-out failed (a failing outbox must not stop retries);
  // the failure is thrown afterwards, for the Errors alarm.
  const drained = await drainOutbox(now).then(
    (fanned) => ({ fanned }),
    (error: unknown) => ({ error }),
  );
  const due = await runDueDeliveries(now);
  if ('error' in drained) throw drained.error;
  const { fanned } = drained;
  const summary = { events: fanned.events, deliveries: fanned.deliveries, ...due };
  if (fanned.events || due.attempted) logger.info('webhook dispatch', summary);
  return summary;
}
