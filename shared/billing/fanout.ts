import { keys } from '../db/keys.ts';
import { writeIfFirst, writeItem } from '../db/write.ts';
import { putMetric } from '../observability/metrics.ts';
import { advanceWatermark, type PassPlan } from './pass.ts';

/**
 * Fan-out bookkeeping for passes run through a queue (AWS): the scheduler writes a pass record,
 * every worker adds its shard to the record's set of done shards when it succeeds, and whoever
 * completes the set moves the watermark. A shard retried by the queue adds itself once (a set).
 * The shard that completes the set (only it: the record as it was before its write says so) emits
 * `BillingPassDuration`, from the record's opening, right after the plan, to the watermark moved.
 */
const passKey = (plan: Pick<PassPlan, 'throughHour'>) => keys.billingPass(new Date(plan.throughHour).toISOString());

export async function openPassRecord(plan: PassPlan): Promise<void> {
  // A second scheduler run for the same hour keeps the first record (and its progress).
  await writeIfFirst({
    Put: {
      Item: {
        ...passKey(plan),
        kind: 'billing-pass',
        at: plan.at,
        shards: plan.shards.length,
        openedAt: Date.now(),
        expiresAt: Math.floor(Date.now() / 1000) + 14 * 86_400,
      },
      ConditionExpression: 'attribute_not_exists(PK)',
    },
  });
}

export async function markShardDone(plan: Pick<PassPlan, 'throughHour'>, shard: number): Promise<boolean> {
  // The record before this write: what it holds after is that plus this shard.
  const before = await writeItem({
    Update: {
      Key: passKey(plan),
      UpdateExpression: 'ADD doneShards :s',
      ExpressionAttributeValues: { ':s': new Set([String(shard)]) },
      ReturnValues: 'ALL_OLD',
    },
  });
  const doneBefore = (before?.doneShards as Set<string> | undefined) ?? new Set<string>();
  const shards = Number(before?.shards ?? Number.POSITIVE_INFINITY);
  const complete = doneBefore.size + (doneBefore.has(String(shard)) ? 0 : 1) >= shards;
  if (complete) {
    await advanceWatermark(plan.throughHour);
    // Writes to one item are applied one after another: exactly one shard finds the set one short.
    if (doneBefore.size < shards && typeof before?.openedAt === 'number') putMetric('BillingPassDuration', Date.now() - before.openedAt);
  }
  return complete;
}
