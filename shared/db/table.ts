/**
 * The one DynamoDB table, described once. infra/ builds the CDK table from it and dev/ creates
 * the DynamoDB Local table from it, so the two can never drift apart.
 *
 * Items (all keys are built in shared/db/keys.ts):
 *   ACCOUNT#<id>        PROFILE              account profile and balance
 *   ACCOUNT#<id>        LEDGER#<seq>         ledger entry (append-only)
 *   ACCOUNT#<id>        LOG#<ts>#<id>        activity log entry (TTL)
 *   ACCOUNT#<id>        KEY#<keyId>          API key record (no secret, hash only)
 *   KEYHASH#<sha256>    KEYHASH              lookup item used on every API-key request
 *   SUBJECT#<iss>#<sub> SUBJECT              OIDC subject -> account id
 *   TXN#<key>           TXN                  ledger idempotency guard
 *   IDEM#<acct>#<key>   IDEM                 Idempotency-Key record (TTL)
 *   RATE#<who>#<minute> RATE                 rate-limit counter (TTL)
 *   ACCOUNT#<id>        SERVER#<id>          server (GSI1 SERVERS#<n> for admins, GSI2 BILLABLE#<n> while billable)
 *   LIVE#<serverId>     LIVE                 server's live state from the panel, cached for every process; refresh lease (TTL)
 *   ACCOUNT#<id>        SPEND#<yyyy-mm>      hourly charges of the month (budgets)
 *   ACCOUNT#<id>        INVOICE#<number>     invoice
 *   INVOICEID#<uuid>    INVOICEID            invoice id -> account and number
 *   INVOICENO#<number>  INVOICENO            uniqueness of an invoice number
 *   COUNTER#INVOICE#<y> COUNTER              last invoice number of the year
 *   BILLING#HOURLY      CURSOR               billing watermark (last hour billed)
 *   INSTANCES           INSTANCE#<id>        registered panel (keys in the secret store)
 *   PANEL#<instanceId>  TOPOLOGY             shared copy of a panel's locations, nodes, free allocations, our claims (TTL)
 *   PANEL#<instanceId>  EGGS                 shared copy of a panel's eggs with their variables (TTL)
 *   PANELBUDGET#<i>#<api>[#<acct>]  W#<ms>   a panel's shared call budget this minute (and one account's reads) (TTL)
 *   LEASE#<serverId>    LEASE                the one operation changing a server now (expiry)
 *   REPAIR#<serverId>   REPAIR               a suspension or repair still to complete (GSI2 REPAIRDUE#<n> while due)
 *   ACCOUNT#<id>        AUTOTOPUP            auto top-up rule, saved card, attempt counters (the profile carries GSI2 TOPUPDUE#<n> while one is due)
 *   SETTINGS            PLATFORM             platform settings
 *   ACCOUNT#<id>        WHEP#v7#<id>         webhook endpoint (its signing secrets)
 *   ACCOUNT#<id>        EVENT#v7#<id>        event, written with the change it reports (TTL 30 days)
 *   WHDLV#<endpointId>  DLV#v7#<id>          one event's delivery to one endpoint, with its attempts (TTL)
 * GSI1 holds the sharded, newest-first listings for admins (ACCOUNTS#<n>, AUDIT#<n>).
 * GSI2 holds sparse, sharded queues: billable servers (BILLABLE#<n>, the billing pass reads only
 * it), events not yet fanned out (OUTBOX#<n>) deliveries with an attempt due (WHDUE#<n>) pending server repairs (REPAIRDUE#<n>) and
 * account profiles with an auto top-up due (TOPUPDUE#<n>).
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

/** Shards of the pending-repair queue (GSI2 REPAIRDUE#<n>): a handful of items at any time, spread anyway. */
export const REPAIR_SHARDS = 4;

/** Shards of the auto top-up queue (GSI2 TOPUPDUE#<n> on account profiles): few at any time, spread anyway. */
export const AUTO_TOPUP_SHARDS = 4;

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
