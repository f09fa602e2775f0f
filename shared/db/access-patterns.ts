import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from './client.ts';
import { keys, type ItemKey } from './keys.ts';
import { LISTING_SHARDS, type IndexName } from './table.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';

/**
 * Every way the service reads the table, by name. Writes live with their domain module, built
 * from shared/db/keys.ts; reads come through here so the access patterns are listed in one place.
 */
export type Item = Record<string, unknown>;

export interface Page<T> {
  data: T[];
  nextCursor: string | null;
}

export interface PageRequest {
  limit: number;
  cursor?: string | undefined;
  /** Caller and listing identity the cursor is bound to. */
  boundTo: string;
}

export async function getItem(key: ItemKey, consistent = true): Promise<Item | undefined> {
  const out = await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: consistent }));
  return out.Item;
}

/** One partition, items whose sort key starts with a prefix, newest (highest key) first. */
async function queryPrefix(pk: string, skPrefix: string, page: PageRequest, filterUnexpired = false): Promise<Page<Item>> {
  let position = decodeCursor(page.cursor, page.boundTo);
  const values: Record<string, unknown> = { ':pk': pk, ':prefix': skPrefix };
  // TTL deletes lag by up to two days, so expired entries are filtered on read too.
  if (filterUnexpired) values[':now'] = Math.floor(Date.now() / 1000);
  const data: Item[] = [];
  // A filter can thin a page out; keep reading until the page is full or the partition ends.
  do {
    const out = await db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
        FilterExpression: filterUnexpired ? 'attribute_not_exists(expiresAt) OR expiresAt > :now' : undefined,
        ExpressionAttributeValues: values,
        ScanIndexForward: false,
        Limit: page.limit - data.length,
        ExclusiveStartKey: position,
      }),
    );
    data.push(...(out.Items ?? []));
    position = out.LastEvaluatedKey;
  } while (position && data.length < page.limit);
  return { data, nextCursor: position ? encodeCursor(position, page.boundTo) : null };
}

/**
 * A listing spread over LISTING_SHARDS partitions of a GSI, merged newest first. The cursor keeps
 * one position per shard (`null` once a shard is exhausted), so each page is one query per live shard.
 */
async function queryShardedListing(index: IndexName, shardKey: (shard: number) => string, page: PageRequest): Promise<Page<Item>> {
  const pkAttr = `${index}PK`;
  const skAttr = `${index}SK`;
  const positions = (decodeCursor(page.cursor, page.boundTo) as Record<string, Item | null> | undefined) ?? {};
  const shards = Array.from({ length: LISTING_SHARDS }, (_, shard) => shard).filter((s) => positions[s] !== null);
  const results = await Promise.all(
    shards.map(async (shard) => {
      const out = await db().send(
        new QueryCommand({
          TableName: tableName(),
          IndexName: index,
          KeyConditionExpression: `${pkAttr} = :pk`,
          ExpressionAttributeValues: { ':pk': shardKey(shard) },
          ScanIndexForward: false,
          Limit: page.limit,
          ExclusiveStartKey: positions[shard] ?? undefined,
        }),
      );
      return { shard, items: out.Items ?? [], more: out.LastEvaluatedKey !== undefined };
    }),
  );
  const merged = results
    .flatMap((r) => r.items.map((item) => ({ shard: r.shard, item })))
    .sort((a, b) => String(b.item[skAttr]).localeCompare(String(a.item[skAttr])))
    .slice(0, page.limit);

  const next: Record<string, Item | null> = { ...positions };
  let anyLeft = false;
  for (const r of results) {
    const taken = merged.filter((m) => m.shard === r.shard);
    const exhausted = taken.length === r.items.length && !r.more;
    const lastTaken = taken.at(-1)?.item;
    if (exhausted) next[r.shard] = null;
    else {
      anyLeft = true;
      if (lastTaken) next[r.shard] = pick(lastTaken, ['PK', 'SK', pkAttr, skAttr]);
    }
  }
  return { data: merged.map((m) => m.item), nextCursor: anyLeft ? encodeCursor(next, page.boundTo) : null };
}

const pick = (item: Item, attrs: string[]): Item => Object.fromEntries(attrs.map((a) => [a, item[a]]));

export const accessPatterns = {
  accountById: (accountId: string) => getItem(keys.account(accountId)),
  accountBySubject: (issuer: string, subject: string) => getItem(keys.subject(issuer, subject)),
  apiKeyByHash: (hash: string) => getItem(keys.apiKeyHash(hash)),
  apiKeyById: (accountId: string, keyId: string) => getItem(keys.apiKey(accountId, keyId)),
  apiKeysOfAccount: (accountId: string, page: PageRequest) => {
    const k = keys.apiKeyPrefix(accountId);
    return queryPrefix(k.PK, k.SKPrefix, page);
  },
  ledgerOfAccount: (accountId: string, page: PageRequest) => {
    const k = keys.ledgerPrefix(accountId);
    return queryPrefix(k.PK, k.SKPrefix, page);
  },
  activityOfAccount: (accountId: string, page: PageRequest) => {
    const k = keys.activityPrefix(accountId);
    return queryPrefix(k.PK, k.SKPrefix, page, true);
  },
  serverOfAccount: (accountId: string, serverId: string) => getItem(keys.server(accountId, serverId)),
  /** Any account's server by id (the reconciler's way from a panel's external id to the record). */
  serverById: async (serverId: string): Promise<Item | undefined> => {
    const pointer = await getItem(keys.serverPointer(serverId));
    return pointer ? getItem(keys.server(pointer.accountId as string, serverId)) : undefined;
  },
  serversOfAccount: (accountId: string, page: PageRequest) => {
    const k = keys.serverPrefix(accountId);
    return queryPrefix(k.PK, k.SKPrefix, page);
  },
  /** Every server of an account (bounded by the per-account server limit), for runway and budgets. */
  allServersOfAccount: async (accountId: string): Promise<Item[]> => {
    const k = keys.serverPrefix(accountId);
    const out = await db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :p)',
        ExpressionAttributeValues: { ':pk': k.PK, ':p': k.SKPrefix },
        ConsistentRead: true,
      }),
    );
    return out.Items ?? [];
  },
  allServers: (page: PageRequest) => queryShardedListing('GSI1', keys.serversShard, page),
  invoicesOfAccount: (accountId: string, page: PageRequest) => {
    const k = keys.invoicePrefix(accountId);
    return queryPrefix(k.PK, k.SKPrefix, page);
  },
  allAccounts: (page: PageRequest) => queryShardedListing('GSI1', keys.accountsShard, page),
  platformAudit: (page: PageRequest) => queryShardedListing('GSI1', keys.auditShard, page),
  idempotencyRecord: (accountId: string, key: string) => getItem(keys.idempotency(accountId, key)),
  settings: () => getItem(keys.settings()),
  instanceById: (instanceId: string) => getItem(keys.instance(instanceId)),
  /** Instances are few (one per panel), so they share one partition and are read whole. */
  allInstances: async (): Promise<Item[]> => {
    const out = await db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': keys.instancesPartition() },
      }),
    );
    return out.Items ?? [];
  },
};
