/**
 * The one DynamoDB table, described once. infra/ builds the CDK table from it and dev/ creates
 * the DynamoDB Local table from it, so the two can never drift apart.
 *
 * Every kind of item, its keys, attributes, index entries and TTL: docs/design/data-model.md (a unit test,
 * tests/unit/docs.test.ts, fails when a key builder of shared/db/keys.ts has no row there). GSI1
 * holds the sharded, newest-first listings for admins; GSI2 the sparse, sharded queues (billable
 * servers, the webhook outbox and retries, pending repairs, accounts with an auto top-up due, servers
 * still installing), and one unsharded listing: each server's activity (`SERVERLOG#<serverId>`).
 */
export const TABLE = {
  partitionKey: 'PK',
  sortKey: 'SK',
  ttlAttribute: 'expiresAt',
  indexes: [
    { name: 'GSI1', partitionKey: 'GSI1PK', sortKey: 'GSI1SK' },
    { name: 'GSI2', partitionKey: 'GSI2PK', sortKey: 'GSI2SK' },
  ],
} as const;

export type IndexName = (typeof TABLE.indexes)[number]['name'];

/** Shard count of every sharded GSI listing: spreads writes, read with one query per shard. */
export const LISTING_SHARDS = 8;

/**
 * Shards of the billable-servers index: one billing work unit each. An account's servers share a
 * shard (the shard is derived from the account id), so one worker charges an account's hour at once.
 */
export const BILLING_SHARDS = 16;

/** Shards of the webhook outbox and retry queue (GSI2 OUTBOX#<n>, WHDUE#<n>): few writes, spread anyway. */
export const WEBHOOK_SHARDS = 4;

/** Shards of the mail queue (GSI2 MAILDUE#<n>): a few messages at a time, spread anyway. */
export const MAIL_SHARDS = 4;

/** Shards of the pending-repair queue (GSI2 REPAIRDUE#<n>): a handful of items at any time, spread anyway. */
export const REPAIR_SHARDS = 4;

/** Shards of the auto top-up queue (GSI2 TOPUPDUE#<n> on account profiles): few at any time, spread anyway. */
export const AUTO_TOPUP_SHARDS = 4;

/** Shards of the install watch (GSI2 INSTALLDUE#<n>): the servers still installing, a handful at any time. */
export const INSTALL_WATCH_SHARDS = 4;

/** Items a query under a filter on values reads: more than a page, since most may be filtered out. */
export const FILTERED_READ = 100;

/** Items per BatchGetItem (DynamoDB's limit). */
export const BATCH_GET_MAX = 100;

/** The CreateTable input for DynamoDB Local (and for anything else that wants the raw shape). */
export function createTableInput(tableName: string) {
  const attributes = new Set<string>([TABLE.partitionKey, TABLE.sortKey]);
  for (const index of TABLE.indexes) {
    attributes.add(index.partitionKey);
    attributes.add(index.sortKey);
  }
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST' as const,
    AttributeDefinitions: [...attributes].map((name) => ({ AttributeName: name, AttributeType: 'S' as const })),
    KeySchema: [
      { AttributeName: TABLE.partitionKey, KeyType: 'HASH' as const },
      { AttributeName: TABLE.sortKey, KeyType: 'RANGE' as const },
    ],
    GlobalSecondaryIndexes: TABLE.indexes.map((index) => ({
      IndexName: index.name,
      KeySchema: [
        { AttributeName: index.partitionKey, KeyType: 'HASH' as const },
        { AttributeName: index.sortKey, KeyType: 'RANGE' as const },
      ],
      Projection: { ProjectionType: 'ALL' as const },
    })),
  };
}
