import { keys } from '../db/keys.ts';
import type { StripeEventsCursorItem } from '../db/items.ts';
import { isConditionFailed, writeItem } from '../db/write.ts';
import { ApiError } from '../errors.ts';
import { errorFields, logger } from '../observability/logger.ts';
import { handleStripeEvent } from './event-router.ts';
import { paymentsConfig, stripe } from './stripe-client.ts';
import { STRIPE_EVENT_TYPES } from './stripe-events.ts';

/**
 * The Stripe event reconciliation, run by the every-minute billing entry at most every
 * RECONCILE_EVERY_MS: lists the events of the handled types (stripe-events.ts) created since the
 * stored cursor, less an overlap, and books each, oldest first, through the webhook's own code
 * (handleStripeEvent), whose bookings are keyed by invoice, refund and dispute: an event the webhook
 * already booked changes nothing, one it never delivered is booked now. A late or lost webhook is
 * then a delay of minutes, never a loss and never a second booking.
 */
export const RECONCILE_EVERY_MS = 5 * 60_000;
/**
 * Listed again from before the cursor: an event Stripe dates a little before it becomes listable
 * (its clock, its replicas) is still seen by a later run. Re-booking the overlap is a no-op.
 */
export const OVERLAP_S = 10 * 60;
/** The first run looks back as far as Stripe keeps retrying a webhook (three days). */
export const FIRST_LOOKBACK_S = 3 * 86_400;
/** An event that has failed to book for this long holds the cursor: logged as an error (the alarm). */
const STUCK_AFTER_S = 3_600;
/** Listed newest first, so a run that stops early keeps its cursor (and the error alarm says so). */
const MAX_EVENTS_PER_RUN = 2_000;

export interface StripeEventsSummary {
  listed: number;
  /** Events that changed something now: the webhook had not (yet) booked them. */
  booked: number;
  /** Events already booked, or not ours (another integration on the Stripe account). */
  unchanged: number;
  /** Events that could not be booked now (retried by the next run: the cursor waits for them). */
  failed: number;
  /** Events whose object cannot be read (logged; a retry would not read it either). */
  unreadable: number;
  /** Stripe `created` where the next run starts (before the overlap). */
  createdFrom: number;
}

/** Outcomes that say the event was booked by this run rather than already (or never ours). */
const BOOKED = new Set(['credited', 'voided', 'refund_booked', 'dispute_booked', 'card_saved']);

/** Null when there is no Stripe to list (the sandbox, payments off) or another run is within its interval. */
export async function reconcileStripeEvents(now: Date): Promise<StripeEventsSummary | null> {
  const config = await paymentsConfig();
  if (config.provider !== 'stripe') return null;
  const claimed = await claimRun(now.getTime());
  if (!claimed) return null;
  const nowS = Math.floor(now.getTime() / 1000);
  const from = (claimed.createdFrom ?? nowS - FIRST_LOOKBACK_S) - OVERLAP_S;

  const client = await stripe(config);
  // Every event of the window, not only `delivery_success=false`: one whose delivery is still
  // pending or retrying has not failed yet, and re-booking one the webhook booked changes nothing.
  const events: { id: string; type: string; created: number }[] = [];
  let complete = true;
  for await (const event of client.events.list({ types: STRIPE_EVENT_TYPES, created: { gte: from }, limit: 100 })) {
    if (events.length === MAX_EVENTS_PER_RUN) {
      complete = false;
      break;
    }
    events.push(event);
  }
  events.sort((a, b) => a.created - b.created);

  const summary: StripeEventsSummary = { listed: events.length, booked: 0, unchanged: 0, failed: 0, unreadable: 0, createdFrom: nowS };
  for (const event of events) {
    try {
      const outcome = await handleStripeEvent(event);
      if (BOOKED.has(outcome)) {
        summary.booked++;
        // Worth a line: the webhook missed this one (or has not come yet).
        logger.info('stripe event booked by reconciliation', { eventId: event.id, type: event.type, outcome });
      } else summary.unchanged++;
    } catch (err) {
      if (err instanceof ApiError && err.code === 'validation_failed') {
        summary.unreadable++;
        logger.error('stripe event unreadable; not booked', { eventId: event.id, type: event.type });
        continue;
      }
      // A refund of an invoice not paid yet (409), a table error: the next run lists it again.
      summary.failed++;
      summary.createdFrom = Math.min(summary.createdFrom, event.created);
      // Still failing an hour on: an error, so the logged-errors alarm says the cursor is held.
      const log = nowS - event.created > STUCK_AFTER_S ? logger.error : logger.warn;
      log('stripe event not booked; the next run retries it', { eventId: event.id, type: event.type, ...errorFields(err) });
    }
  }
  if (!complete) {
    summary.createdFrom = Math.min(summary.createdFrom, claimed.createdFrom ?? from + OVERLAP_S);
    logger.error('stripe event reconciliation listed its maximum; older events wait', { max: MAX_EVENTS_PER_RUN, from });
  }
  await writeItem({
    Update: {
      Key: keys.stripeEventsCursor(),
      UpdateExpression: 'SET createdFrom = :from',
      ExpressionAttributeValues: { ':from': summary.createdFrom },
    },
  });
  return summary;
}

/**
 * One run per interval, however many every-minute invocations overlap: the run takes the cursor
 * item under a condition on its last claim, and reads the cursor in the same write.
 */
async function claimRun(nowMs: number): Promise<StripeEventsCursorItem | null> {
  try {
    return (await writeItem({
      Update: {
        Key: keys.stripeEventsCursor(),
        UpdateExpression: 'SET runAt = :now',
        ConditionExpression: 'attribute_not_exists(runAt) OR runAt <= :due',
        ExpressionAttributeValues: { ':now': nowMs, ':due': nowMs - RECONCILE_EVERY_MS },
        ReturnValues: 'ALL_NEW',
      },
    })) as unknown as StripeEventsCursorItem;
  } catch (err) {
    if (isConditionFailed(err)) return null;
    throw err;
  }
}
