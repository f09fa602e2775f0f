import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Item, ItemFilter, Page, PageRequest } from './access-patterns.ts';
import { accountsByIds } from './batch-read.ts';
import { type AccountItem, asKind } from './items.ts';
import { keys } from './keys.ts';
import { db, tableName } from './client.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import { FILTERED_READ, LISTING_SHARDS, type IndexName } from './table.ts';

/**
 * A listing spread over LISTING_SHARDS partitions of a GSI, merged newest first. The cursor keeps
 * one position per shard (`null` once a shard is exhausted), so each page is one query per live shard.
 *
 * Under a filter each shard reads up to FILTERED_READ items and returns only the matches; a shard
 * that stopped early (more left) may still hold matches newer than another shard's, so the page
 * keeps only matches at or after the newest place where such a shard stopped: the order stays
 * exact, and that shard has given all it read, so the next page moves past it. A page may then be
 * short, or empty with a cursor, like a sparse filter on one partition.
 */
export async function queryShardedListing(
  index: IndexName,
  shardKey: (shard: number) => string,
  page: PageRequest,
  filter?: ItemFilter,
): Promise<Page<Item>> {
  const pkAttr = `${index}PK`;
  const skAttr = `${index}SK`;
  const positions = ((await decodeCursor(page.cursor, page.boundTo)) as Record<string, Item | null> | undefined) ?? {};
  const shards = Array.from({ length: LISTING_SHARDS }, (_, shard) => shard).filter((s) => positions[s] !== null);
  const results = await Promise.all(
    shards.map(async (shard) => {
      const out = await db().send(
        new QueryCommand({
          TableName: tableName(),
          IndexName: index,
          KeyConditionExpression: `${pkAttr} = :pk`,
          FilterExpression: filter?.expression,
          ExpressionAttributeNames: filter && Object.keys(filter.names).length ? filter.names : undefined,
          ExpressionAttributeValues: { ':pk': shardKey(shard), ...filter?.values },
          ScanIndexForward: false,
          Limit: filter ? Math.max(page.limit, FILTERED_READ) : page.limit,
          ExclusiveStartKey: positions[shard] ?? undefined,
        }),
      );
      return { shard, items: out.Items ?? [], last: out.LastEvaluatedKey };
    }),
  );
  // Under a filter: the newest place a shard with more left stopped; nothing older is certain yet.
  const horizon = filter
    ? results
        .filter((r) => r.last)
        .map((r) => String(r.last![skAttr]))
        .sort()
        .at(-1)
    : undefined;
  const merged = results
    .flatMap((r) => r.items.map((item) => ({ shard: r.shard, item })))
    .filter((m) => horizon === undefined || String(m.item[skAttr]) >= horizon)
    .sort((a, b) => String(b.item[skAttr]).localeCompare(String(a.item[skAttr])))
    .slice(0, page.limit);

  const next: Record<string, Item | null> = { ...positions };
  let anyLeft = false;
  for (const r of results) {
    const taken = merged.filter((m) => m.shard === r.shard);
    const all = taken.length === r.items.length;
    const lastTaken = taken.at(-1)?.item;
    if (all && !r.last) next[r.shard] = null;
    else {
      anyLeft = true;
      // All it returned is on the page: go on from where the read stopped (under a filter, past items that did not match).
      if (all && r.last) next[r.shard] = r.last;
      else if (lastTaken) next[r.shard] = pick(lastTaken, ['PK', 'SK', pkAttr, skAttr]);
    }
  }
  return { data: merged.map((m) => m.item), nextCursor: anyLeft ? await encodeCursor(next, page.boundTo) : null };
}

const pick = (item: Item, attrs: string[]): Item => Object.fromEntries(attrs.map((a) => [a, item[a]]));

/**
 * The accounts listing (admin): its rows are listing entries (shared/accounts/listing.ts), whose
 * profiles one BatchGetItem reads, or, for accounts not yet moved to an entry, the profiles themselves.
 * Here, not in access-patterns.ts: only the admin function reads it.
 */
export async function accountsListing(page: PageRequest, filter?: ItemFilter): Promise<Page<AccountItem>> {
  const rows = await queryShardedListing('GSI1', keys.accountsShard, page, filter);
  const ids = rows.data.filter((row) => row.kind === 'account-listing').map((row) => asKind(row, 'account-listing').accountId);
  const profiles = ids.length ? await accountsByIds(ids) : new Map<string, AccountItem>();
  const data = rows.data
    .map((row) => (row.kind === 'account-listing' ? profiles.get(String(row.accountId)) : asKind(row, 'account')))
    .filter((profile): profile is AccountItem => profile !== undefined);
  return { data, nextCursor: rows.nextCursor };
}
