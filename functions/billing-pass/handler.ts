import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { chargeShard, planPass, readWatermark, runPassInProcess } from '../../shared/billing/pass.ts';
import { HOUR_MS, lastBillableHour } from '../../shared/pricing/hours.ts';
import { markShardDone, openPassRecord } from '../../shared/billing/fanout.ts';
import { reconcileAll } from '../../shared/servers/reconcile.ts';
import { type RepairSummary, runRepairs } from '../../shared/servers/repairs.ts';
import { type AutoTopUpSummary, runAutoTopUps } from '../../shared/payments/autotopup.ts';
import { type InstallWatchSummary, runInstallWatch } from '../../shared/servers/install-watch.ts';
import { reconcileStripeEvents, type StripeEventsSummary } from '../../shared/payments/reconcile-events.ts';
import { loadSqs, type SQSClient } from '../../shared/packages.ts';
import { logger, errorFields } from '../../shared/observability/logger.ts';
import { getConfig } from '../../shared/config/env.ts';

/**
 * The hourly billing pass (no HTTP). `scheduler` is what the EventBridge hourly rule invokes:
 * with BILLING_QUEUE_URL it plans the pass and sends one message per shard; without it, it runs
 * the whole pass in this process. `worker` consumes the queue, one shard per message, reporting
 * failed messages so only those are retried (and land in the dead-letter queue in the end).
 * `minutePasses` is what the every-minute rule invokes (the function `BillingRepairs`): four passes,
 * each on its own so one failing hides none of the others —
 * - the suspensions and repairs that did not complete (shared/servers/repairs.ts), within minutes
 *   instead of at the next hourly pass;
 * - the auto top-ups the ledger marked due (shared/payments/autotopup.ts: Stripe is called here,
 *   never on a customer's request or in the hourly pass);
 * - the install watch (shared/servers/install-watch.ts: servers still installing, their end raised
 *   as an event);
 * - every five minutes, the Stripe events the webhook did not deliver (shared/payments/reconcile-events.ts).
 */
const queueUrl = getConfig().billingQueueUrl;
const queue: { url: string; sqs?: SQSClient } | undefined = queueUrl ? { url: queueUrl } : undefined;

interface ShardMessage {
  at: string;
  throughHour: number;
  fromWatermark: number | null;
  shard: number;
}

export async function scheduler(event: { time?: string; at?: string } = {}) {
  const at = new Date(event.at ?? event.time ?? Date.now());
  await reportWatermarkLag(at);
  if (!queue) {
    // In one process: reconcile first, so no orphan runs unbilled and no vanished server is billed.
    await reconcile();
    return runPassInProcess(at);
  }
  const plan = await planPass(at);
  await openPassRecord(plan);
  const { SendMessageBatchCommand, SQSClient } = await loadSqs();
  queue.sqs ??= new SQSClient({});
  const messages: ShardMessage[] = plan.shards.map((shard) => ({
    at: plan.at,
    throughHour: plan.throughHour,
    fromWatermark: plan.fromWatermark,
    shard,
  }));
  for (let i = 0; i < messages.length; i += 10) {
    const batch = messages.slice(i, i + 10);
    const out = await queue.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queue.url,
        Entries: batch.map((m) => ({ Id: String(m.shard), MessageBody: JSON.stringify(m) })),
      }),
    );
    if (out.Failed?.length) throw new Error(`Could not queue ${out.Failed.length} billing shard(s)`);
  }
  logger.info('billing pass queued', { at: plan.at, throughHour: new Date(plan.throughHour).toISOString(), shards: plan.shards.length });
  // Queued first: a slow panel must not hold up billing. A server the reconciler closes now is
  // billed up to this hour, as it would be after a customer's delete.
  await reconcile();
  return { queued: plan.shards.length, at: plan.at, throughHour: new Date(plan.throughHour).toISOString() };
}

async function reconcile(): Promise<void> {
  try {
    logger.info('reconciled', { ...(await reconcileAll()) });
  } catch (err) {
    logger.error('reconciler failed; the pass goes on', errorFields(err));
  }
}

/**
 * Hours between the last hour that should be billed by now and the watermark: 0 when passes keep
 * up. A metric filter turns this log line into a metric; an alarm fires above two hours.
 */
async function reportWatermarkLag(at: Date): Promise<void> {
  const watermark = await readWatermark();
  const due = lastBillableHour(at.getTime());
  const lagHours = watermark === null ? 0 : Math.max(0, Math.round((due - watermark) / HOUR_MS));
  logger.info('billing watermark', { lagHours, watermark: watermark === null ? null : new Date(watermark).toISOString() });
}

export async function worker(event: SQSEvent): Promise<SQSBatchResponse> {
  const batchItemFailures: SQSBatchResponse['batchItemFailures'] = [];
  for (const record of event.Records) {
    try {
      const message = JSON.parse(record.body) as ShardMessage;
      const summary = await chargeShard(message, message.shard);
      if (summary.errors > 0) throw new Error(`${summary.errors} account(s) of shard ${message.shard} failed`);
      await markShardDone(message, message.shard);
      logger.info('billing shard charged', { shard: message.shard, ...summary });
    } catch (err) {
      logger.error('billing shard failed; the queue retries it', { messageId: record.messageId, ...errorFields(err) });
      batchItemFailures.push({ itemIdentifier: record.messageId });
    }
  }
  return { batchItemFailures };
}

/**
 * The every-minute passes (above). Runs may overlap (a slow panel): each item is claimed under a
 * condition first, so two runs never work on the same server at once. The clock, not the event's
 * `time`: a late invocation must not act in the past.
 */
export async function minutePasses(): Promise<
  RepairSummary & {
    autoTopUps: AutoTopUpSummary | null;
    installWatch: InstallWatchSummary | null;
    stripeEvents: StripeEventsSummary | null;
  }
> {
  const summary = await runRepairs(new Date());
  // Apart: a failing auto top-up pass must not hide the repairs' summary, nor the other way round.
  const autoTopUps = await runAutoTopUps(new Date()).catch((err: unknown) => {
    logger.error('auto top-up pass failed', errorFields(err));
    return null;
  });
  // Apart, like the auto top-ups.
  const installWatch = await runInstallWatch(new Date()).catch((err: unknown) => {
    logger.error('install watch pass failed', errorFields(err));
    return null;
  });
  // Apart. Null as well between its five-minute runs and without Stripe.
  const stripeEvents = await reconcileStripeEvents(new Date()).catch((err: unknown) => {
    logger.error('stripe event reconciliation failed', errorFields(err));
    return null;
  });
  return { ...summary, autoTopUps, installWatch, stripeEvents };
}
