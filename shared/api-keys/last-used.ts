import { isConditionFailed, writeItem } from '../db/write.ts';
import { keys } from '../db/keys.ts';
import type { ApiKeyHashItem } from '../db/items.ts';

// Apart from index.ts: the request pipeline records every key's use, and only the key routes manage keys.

/**
 * lastUsedAt is written at most this often per key: it tells an operator which keys are still in
 * use, to the hour. A write per request would double a GET's DynamoDB cost (docs/costs.md).
 */
export const LAST_USED_INTERVAL_MS = 60 * 60_000;

/**
 * Records use at most every LAST_USED_INTERVAL_MS: the lookup item first, under a condition that
 * keeps concurrent requests from writing twice, then the listed key item. Two plain writes (2 WRU),
 * not a transaction (4 WRU): a listing that shows the previous hour for a moment is harmless.
 */
export async function touchLastUsed(hashItem: ApiKeyHashItem, now = new Date()): Promise<void> {
  const last = hashItem.lastUsedAt ? Date.parse(hashItem.lastUsedAt) : 0;
  if (now.getTime() - last < LAST_USED_INTERVAL_MS) return;
  const at = now.toISOString();
  const threshold = new Date(now.getTime() - LAST_USED_INTERVAL_MS).toISOString();
  try {
    await writeItem({
      Update: {
        Key: { PK: hashItem.PK, SK: hashItem.SK },
        UpdateExpression: 'SET lastUsedAt = :at',
        ConditionExpression: 'attribute_not_exists(lastUsedAt) OR lastUsedAt < :threshold',
        ExpressionAttributeValues: { ':at': at, ':threshold': threshold },
      },
    });
  } catch (err) {
    // Another request of the same key recorded the use first: nothing to do.
    if (isConditionFailed(err)) return;
    throw err;
  }
  await writeItem({
    Update: {
      Key: keys.apiKey(hashItem.accountId, hashItem.keyId),
      UpdateExpression: 'SET lastUsedAt = :at',
      ConditionExpression: 'attribute_exists(PK)',
      ExpressionAttributeValues: { ':at': at },
    },
  }).catch((err: unknown) => {
    // The key item is gone (the key was deleted meanwhile): nothing to record.
    if (!isConditionFailed(err)) throw err;
  });
}
