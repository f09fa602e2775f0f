import { keys } from '../db/keys.ts';
import { writeIfFirst, writeItem } from '../db/write.ts';
import { advanceWatermark, type PassPlan } from './pass.ts';

/**
 * Fan-out bookkeeping for passes run through a queue (AWS): the scheduler writes a pass record,
 * every worker adds its shard to the record's set of done shards when it succeeds, and whoever
 * completes the set moves the watermark. A shard retried by the queue adds itself once (a set).
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
        expiresAt: Math.floor(Date.now() / 1000) + 14 * 86_400,
      },
      ConditionExpression: 'attribute_not_exists(PK)',
    },
  });
}

export async function markShardDone(plan: Pick<PassPlan, 'throughHour'>, shard: number): Promise<boolean> {
  const record = await writeItem({
    Update: {
      Key: passKey(plan),
      UpdateExpression: 'ADD doneShards :s',
      ExpressionAttributeValues: { ':s': new Set([String(shard)]) },
      ReturnValues: 'ALL_NEW',
    },
  });
  const done = (record?.doneShards as Set<string> | undefined)?.size ?? 0;
  const complete = done >= Number(record?.shards ?? Number.POSITIVE_INFINITY);
  if (complete) await advanceWatermark(plan.throughHour);
  return complete;
}
