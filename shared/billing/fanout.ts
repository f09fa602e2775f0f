import { UpdateCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '../db/client.ts';
import { advanceWatermark, type PassPlan } from './pass.ts';

/**
 * Fan-out bookkeeping for passes run through a queue (AWS): the scheduler writes a pass record,
 * every worker adds its shard to the record's set of done shards when it succeeds, and whoever
 * completes the set moves the watermark. A shard retried by the queue adds itself once (a set).
 */
const passKey = (plan: Pick<PassPlan, 'throughHour'>) => ({ PK: 'BILLING#PASS', SK: new Date(plan.throughHour).toISOString() });

export async function openPassRecord(plan: PassPlan): Promise<void> {
  await db()
    .send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...passKey(plan),
          kind: 'billing-pass',
          at: plan.at,
          shards: plan.shards.length,
          expiresAt: Math.floor(Date.now() / 1000) + 14 * 86_400,
        },
        // A second scheduler run for the same hour keeps the first record (and its progress).
        ConditionExpression: 'attribute_not_exists(PK)',
      }),
    )
    .catch((err: Error) => {
      if (err.name !== 'ConditionalCheckFailedException') throw err;
    });
}

export async function markShardDone(plan: Pick<PassPlan, 'throughHour'>, shard: number): Promise<boolean> {
  const out = await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: passKey(plan),
      UpdateExpression: 'ADD doneShards :s',
      ExpressionAttributeValues: { ':s': new Set([String(shard)]) },
      ReturnValues: 'ALL_NEW',
    }),
  );
  const done = (out.Attributes?.doneShards as Set<string> | undefined)?.size ?? 0;
  const complete = done >= Number(out.Attributes?.shards ?? Number.POSITIVE_INFINITY);
  if (complete) await advanceWatermark(plan.throughHour);
  return complete;
}
