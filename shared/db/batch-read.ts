import { setTimeout as sleep } from 'node:timers/promises';
import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import { BATCH_GET_MAX } from './table.ts';
import { db, tableName } from './client.ts';
import { type AccountItem, asKind, type Item } from './items.ts';
import { keys, type ItemKey } from './keys.ts';
import { backoffMs } from './write.ts';

/**
 * Batch reads (the billing pass's profiles, a page of the admin accounts listing), apart from
 * access-patterns.ts so that the functions that never batch (every customer route) do not load them.
 */
/** Up to BATCH_GET_MAX items by key, consistently, in one BatchGetItem; unprocessed keys are asked again with backoff. */
async function batchGet(itemKeys: ItemKey[]): Promise<Item[]> {
  if (itemKeys.length > BATCH_GET_MAX) throw new Error(`BatchGetItem takes at most ${BATCH_GET_MAX} keys, not ${itemKeys.length}`);
  const out: Item[] = [];
  let pending: Record<string, unknown>[] = itemKeys.map((k) => ({ ...k }));
  for (let attempt = 0; pending.length; attempt++) {
    if (attempt > 8) throw new Error(`BatchGetItem left ${pending.length} item(s) unprocessed`);
    if (attempt > 0) await sleep(backoffMs(attempt));
    const res = await db().send(new BatchGetCommand({ RequestItems: { [tableName()]: { Keys: pending, ConsistentRead: true } } }));
    out.push(...((res.Responses?.[tableName()] ?? []) as Item[]));
    pending = res.UnprocessedKeys?.[tableName()]?.Keys ?? [];
  }
  return out;
}

/** Profiles by id (at most BATCH_GET_MAX), consistently, in one BatchGetItem. */
export async function accountsByIds(accountIds: string[]): Promise<Map<string, AccountItem>> {
  const items = await batchGet(accountIds.map((id) => keys.account(id)));
  return new Map(items.map((item) => asKind(item, 'account')).map((profile) => [profile.accountId, profile]));
}
