import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from './client.ts';
import { keys, type ItemKey } from './keys.ts';
import { FILTERED_READ, type IndexName } from './table.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import { accountsByIds as readAccountsByIds } from './batch-read.ts';
import { accountsListing, queryShardedListing } from './sharded-listing.ts';

/**
 * Every way the service reads the table, by name. Writes live with their domain module, built
 * from shared/db/keys.ts; reads come through here so the access patterns are listed in one place.
 * Each pattern is an export of its own, read as `import * as accessPatterns`: a bundle keeps only
 * the patterns its code calls (an object of them all was whole in every function's start).
 */
export type { Item } from './items.ts';
import {
  type AccountItem,
  asKind,
  asKindOrUndefined,
  type InstanceItem,
  type InvoiceCounterItem,
  type Item,
  type ItemKind,
  type PanelCallBudgetItem,
  type ServerItem,
  type WatermarkItem,
} from './items.ts';

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

/**
 * Queries one page may make: a sparse filter (a credential that reads few of the event types) must
 * not turn one request into a walk of the whole partition. A page cut short by it carries a cursor.
 */
const MAX_QUERIES_PER_PAGE = 10;

/**
 * A FilterExpression over an item's attributes (placeholders `#f…` and `:f…`, so they cannot meet
 * the ones of the query). DynamoDB applies it after reading: a page costs the items read, not the
 * items matched, so every filtered page reads at most MAX_QUERIES_PER_PAGE × FILTERED_READ items.
 */
export interface ItemFilter {
  /** Joined to others with AND, so an OR in it must be in parentheses (DynamoDB refuses redundant ones). */
  expression: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
}

/** One partition, items whose sort key starts with a prefix, newest (highest key) first; `oneOf`: only items whose attribute is one of the values; `filter`: only items it holds for. */
async function queryPrefix(
  pk: string,
  skPrefix: string,
  page: PageRequest,
  filterUnexpired = false,
  oneOf?: { attribute: string; values: readonly string[] },
  filter?: ItemFilter,
): Promise<Page<Item>> {
  let position = await decodeCursor(page.cursor, page.boundTo);
  const values: Record<string, unknown> = { ':pk': pk, ':prefix': skPrefix, ...filter?.values };
  const filters: string[] = filter ? [filter.expression] : [];
  const names: Record<string, string> = { ...filter?.names, ...(oneOf ? { '#oneOf': oneOf.attribute } : {}) };
  const sparse = oneOf !== undefined || filter !== undefined;
  // TTL deletes lag by up to two days, so expired entries are filtered on read too.
  if (filterUnexpired) {
    values[':now'] = Math.floor(Date.now() / 1000);
    filters.push('(attribute_not_exists(expiresAt) OR expiresAt > :now)');
  }
  if (oneOf) {
    if (oneOf.values.length === 0) return { data: [], nextCursor: null };
    oneOf.values.forEach((v, i) => {
      values[`:v${i}`] = v;
    });
    filters.push(`#oneOf IN (${oneOf.values.map((_, i) => `:v${i}`).join(', ')})`);
  }
  const data: Item[] = [];
  // A filter can thin a page out; keep reading until the page is full or the partition ends (or the bound).
  for (let queries = 0; queries < MAX_QUERIES_PER_PAGE; queries++) {
    const room = page.limit - data.length;
    const out = await db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
        FilterExpression: filters.length ? filters.join(' AND ') : undefined,
        ExpressionAttributeNames: Object.keys(names).length ? names : undefined,
        ExpressionAttributeValues: values,
        ScanIndexForward: false,
        Limit: sparse ? Math.max(room, FILTERED_READ) : room,
        ExclusiveStartKey: position,
      }),
    );
    const items = out.Items ?? [];
    if (items.length > room) {
      // More matched than the page holds: it ends at the last item kept, and the next starts after it.
      const kept = items.slice(0, room);
      data.push(...kept);
      position = { PK: kept.at(-1)!.PK, SK: kept.at(-1)!.SK };
      break;
    }
    data.push(...items);
    position = out.LastEvaluatedKey;
    if (!position || data.length >= page.limit) break;
  }
  return { data, nextCursor: position ? await encodeCursor(position, page.boundTo) : null };
}

/** Reads a page of items as one kind. */
const pageOf =
  <K extends ItemKind>(kind: K) =>
  async (page: Promise<Page<Item>>) => {
    const result = await page;
    return { data: result.data.map((item) => asKind(item, kind)), nextCursor: result.nextCursor };
  };

/** One page of a GSI2 partition, its sort key below or above a bound (`['<', x]`, `['>', x]`). */
/** An item's table and GSI2 keys: where the next page of an index query starts after it. */
export type IndexedKey = ItemKey & { GSI2PK?: string; GSI2SK?: string };

async function queryIndexPage(pk: string, limit: number, bound?: ['<' | '>', string], startAfter?: IndexedKey): Promise<Item[]> {
  const out = await db().send(
    new QueryCommand({
      TableName: tableName(),
      IndexName: 'GSI2',
      KeyConditionExpression: bound ? `GSI2PK = :pk AND GSI2SK ${bound[0]} :bound` : 'GSI2PK = :pk',
      ExpressionAttributeValues: { ':pk': pk, ...(bound ? { ':bound': bound[1] } : {}) },
      Limit: limit,
      // The next page after an item of the previous one: its table and index keys.
      ...(startAfter
        ? { ExclusiveStartKey: { PK: startAfter.PK, SK: startAfter.SK, GSI2PK: startAfter.GSI2PK, GSI2SK: startAfter.GSI2SK } }
        : {}),
    }),
  );
  return out.Items ?? [];
}

async function queryAll(input: { IndexName?: IndexName; pk: string; skPrefix?: string; consistent?: boolean }): Promise<Item[]> {
  const pkAttr = input.IndexName ? `${input.IndexName}PK` : 'PK';
  const items: Item[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await db().send(
      new QueryCommand({
        TableName: tableName(),
        IndexName: input.IndexName,
        KeyConditionExpression: input.skPrefix ? `${pkAttr} = :pk AND begins_with(SK, :prefix)` : `${pkAttr} = :pk`,
        ExpressionAttributeValues: { ':pk': input.pk, ...(input.skPrefix ? { ':prefix': input.skPrefix } : {}) },
        ConsistentRead: input.consistent,
        ExclusiveStartKey: start,
      }),
    );
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}

export const accountById = async (accountId: string) => asKindOrUndefined(await getItem(keys.account(accountId)), 'account');

export const mailPreferences = async (accountId: string) =>
  asKindOrUndefined(await getItem(keys.mailPreferences(accountId)), 'mail-preferences');

export const emailChange = async (accountId: string) => asKindOrUndefined(await getItem(keys.emailChange(accountId)), 'email-change');

export const billingProfile = async (accountId: string) =>
  asKindOrUndefined(await getItem(keys.billingProfile(accountId)), 'billing-profile');

/** Profiles by id (at most BATCH_GET_MAX), consistently, in one BatchGetItem: the billing pass reads a shard's this way. */
export const accountsByIds = (accountIds: string[]): Promise<Map<string, AccountItem>> => readAccountsByIds(accountIds);

export const accountBySubject = async (issuer: string, subject: string) =>
  asKindOrUndefined(await getItem(keys.subject(issuer, subject)), 'subject');

export const apiKeyByHash = async (hash: string) => asKindOrUndefined(await getItem(keys.apiKeyHash(hash)), 'api-key-hash');

export const apiKeyById = async (accountId: string, keyId: string) =>
  asKindOrUndefined(await getItem(keys.apiKey(accountId, keyId)), 'api-key');

export const apiKeysOfAccount = (accountId: string, page: PageRequest) => {
  const k = keys.apiKeyPrefix(accountId);
  return pageOf('api-key')(queryPrefix(k.PK, k.SKPrefix, page));
};

export const ledgerOfAccount = (accountId: string, page: PageRequest) => {
  const k = keys.ledgerPrefix(accountId);
  return pageOf('ledger')(queryPrefix(k.PK, k.SKPrefix, page));
};

export const ledgerEntry = async (accountId: string, seq: number) =>
  asKindOrUndefined(await getItem(keys.ledgerEntry(accountId, seq)), 'ledger');

/** Which entry a ledger idempotency key produced. */
export const ledgerGuard = async (idempotencyKey: string) =>
  asKindOrUndefined(await getItem(keys.ledgerGuard(idempotencyKey)), 'ledger-guard');

/**
 * One page of a server's activity entries (GSI2 `SERVERLOG#<serverId>`), newest first, after the
 * entry `startAfter` (its table and index keys), unexpired only. The caller keeps the position (the
 * merged listing of shared/servers/activity.ts signs it with the panel's); `more` when the query stopped early.
 */
export async function activityOfServer(
  serverId: string,
  limit: number,
  startAfter?: IndexedKey,
  /** With no `startAfter`: only entries whose index sort key is below this (the walk's first read). */
  below?: string,
): Promise<{ items: Item[]; more: boolean }> {
  const ceiling = !startAfter && below !== undefined;
  const out = await db().send(
    new QueryCommand({
      TableName: tableName(),
      IndexName: 'GSI2',
      KeyConditionExpression: ceiling ? 'GSI2PK = :pk AND GSI2SK < :below' : 'GSI2PK = :pk',
      // TTL deletes lag by up to two days, so expired entries are filtered on read too.
      FilterExpression: 'attribute_not_exists(expiresAt) OR expiresAt > :now',
      ExpressionAttributeValues: {
        ':pk': keys.serverActivityPartition(serverId),
        ':now': Math.floor(Date.now() / 1000),
        ...(ceiling ? { ':below': below } : {}),
      },
      ScanIndexForward: false,
      Limit: limit,
      ...(startAfter
        ? { ExclusiveStartKey: { PK: startAfter.PK, SK: startAfter.SK, GSI2PK: startAfter.GSI2PK, GSI2SK: startAfter.GSI2SK } }
        : {}),
    }),
  );
  return { items: (out.Items ?? []).map((item) => asKind(item, 'activity')), more: out.LastEvaluatedKey !== undefined };
}

export const activityOfAccount = (accountId: string, page: PageRequest) => {
  const k = keys.activityPrefix(accountId);
  return pageOf('activity')(queryPrefix(k.PK, k.SKPrefix, page, true));
};

export const serverOfAccount = async (accountId: string, serverId: string) =>
  asKindOrUndefined(await getItem(keys.server(accountId, serverId)), 'server');

/** Any account's server by id (the reconciler's way from a panel's external id to the record). */
export const serverById = async (serverId: string): Promise<ServerItem | undefined> => {
  const pointer = asKindOrUndefined(await getItem(keys.serverPointer(serverId)), 'server-pointer');
  return pointer ? serverOfAccount(pointer.accountId, serverId) : undefined;
};

/** Consistent, so a state dropped after our own change (shared/servers/live.ts) is not read back. */
export const liveStateOfServer = async (serverId: string) => asKindOrUndefined(await getItem(keys.liveState(serverId)), 'live-state');

/** A server's usage samples with `SK` from `from` to `to` (bucket ISO times), oldest first, every page read (a week is ~2,000 small items). */
export async function usageSamplesOfServer(serverId: string, from: string, to: string) {
  const k = keys.usageSamplePrefix(serverId);
  const items: Item[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'PK = :pk AND SK BETWEEN :from AND :to',
        ExpressionAttributeValues: { ':pk': k.PK, ':from': `${k.SKPrefix}${from}`, ':to': `${k.SKPrefix}${to}` },
        ExclusiveStartKey: start,
      }),
    );
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start);
  return items.map((item) => asKind(item, 'usage-sample'));
}

/** `filter`: only the servers it holds for (shared/servers/filters.ts), read in bounded pages. */
export const serversOfAccount = (accountId: string, page: PageRequest, filter?: ItemFilter) => {
  const k = keys.serverPrefix(accountId);
  return pageOf('server')(queryPrefix(k.PK, k.SKPrefix, page, false, undefined, filter));
};

/** Every server of an account (bounded by the per-account server limit), for runway and budgets. */
export const allServersOfAccount = async (accountId: string): Promise<ServerItem[]> => {
  const k = keys.serverPrefix(accountId);
  return (await queryAll({ pk: k.PK, skPrefix: k.SKPrefix, consistent: true })).map((item) => asKind(item, 'server'));
};

export const allServers = async (page: PageRequest, filter?: ItemFilter) =>
  pageOf('server')(queryShardedListing('GSI1', keys.serversShard, page, filter));

/** The billing pass's work unit: every server in one shard of the sparse billable index (GSI2). */
export const billableServersOfShard = async (shard: number): Promise<ServerItem[]> =>
  (await queryAll({ IndexName: 'GSI2', pk: keys.billableShard(shard) })).map((item) => asKind(item, 'server'));

export const billingWatermark = async () => (await getItem(keys.billingWatermark())) as WatermarkItem | undefined;

export const monthSpendOfAccount = async (accountId: string, month: string) =>
  asKindOrUndefined(await getItem(keys.monthSpend(accountId, month)), 'month-spend');

export const invoicesOfAccount = (accountId: string, page: PageRequest) => {
  const k = keys.invoicePrefix(accountId);
  return pageOf('invoice')(queryPrefix(k.PK, k.SKPrefix, page));
};

export const invoiceOfAccount = async (accountId: string, number: string) =>
  asKindOrUndefined(await getItem(keys.invoice(accountId, number)), 'invoice');

/** Invoice id → account and number (the webhook knows only the id). */
export const invoicePointer = async (invoiceId: string) =>
  asKindOrUndefined(await getItem(keys.invoicePointer(invoiceId)), 'invoice-pointer');

/** Stripe PaymentIntent → invoice (refunds and disputes name only the payment). */
export const invoiceByPaymentIntent = async (paymentIntentId: string) =>
  asKindOrUndefined(await getItem(keys.paymentIntent(paymentIntentId)), 'payment-intent');

export const invoiceCounter = async (year: number) => (await getItem(keys.invoiceCounter(year))) as InvoiceCounterItem | undefined;

export const creditNotesOfAccount = (accountId: string, page: PageRequest) => {
  const k = keys.creditNotePrefix(accountId);
  return pageOf('credit-note')(queryPrefix(k.PK, k.SKPrefix, page));
};

export const creditNoteOfAccount = async (accountId: string, number: string) =>
  asKindOrUndefined(await getItem(keys.creditNote(accountId, number)), 'credit-note');

/** Credit note id → account and number. */
export const creditNotePointer = async (creditNoteId: string) =>
  asKindOrUndefined(await getItem(keys.creditNotePointer(creditNoteId)), 'credit-note-id');

export const creditNoteCounter = async (year: number) => (await getItem(keys.creditNoteCounter(year))) as InvoiceCounterItem | undefined;

/**
 * `filter`: e.g. an e-mail prefix (shared/admin/users.ts), applied to the bounded shard reads. The
 * rows are listing entries (shared/accounts/listing.ts), whose profiles one BatchGetItem reads,
 * or, for accounts not yet moved to an entry, the profiles themselves.
 */
export const allAccounts = async (page: PageRequest, filter?: ItemFilter): Promise<Page<AccountItem>> => accountsListing(page, filter);

export const platformAudit = async (page: PageRequest) => pageOf('activity')(queryShardedListing('GSI1', keys.auditShard, page));

export const idempotencyRecord = async (accountId: string, key: string) =>
  asKindOrUndefined(await getItem(keys.idempotency(accountId, key)), 'idempotency');

/** A panel's call-budget window (the admin view; spends read it back from their own writes). */
export const panelCallBudget = async (budgetId: string, api: string) =>
  (await getItem(keys.panelCallBudget(budgetId, api), false)) as PanelCallBudgetItem | undefined;

/** One account's call counter of one class and minute (the newcomer check reads the previous minute's). */
export const panelCallBudgetAccount = async (budgetId: string, api: string, accountId: string, callClass: string, minuteStartMs: number) =>
  (await getItem(keys.panelCallBudgetAccount(budgetId, api, accountId, callClass, minuteStartMs), false)) as { used?: number } | undefined;

/** The shared copies of a panel's reads (shared/catalog); eventually consistent unless a write is to be based on it. */
export const panelTopology = async (instanceId: string, consistent = false) =>
  asKindOrUndefined(await getItem(keys.panelTopology(instanceId), consistent), 'panel-topology');

export const panelEggs = async (instanceId: string) => asKindOrUndefined(await getItem(keys.panelEggs(instanceId), false), 'panel-eggs');

/** Outbound webhooks (shared/webhooks): an account's endpoints (at most 10), its events (30 days), an endpoint's deliveries. */
export const webhookEndpointsOfAccount = (accountId: string, page: PageRequest) => {
  const k = keys.webhookEndpointPrefix(accountId);
  return pageOf('webhookEndpoint')(queryPrefix(k.PK, k.SKPrefix, page));
};

export const webhookEndpointOfAccount = async (accountId: string, endpointId: string) =>
  asKindOrUndefined(await getItem(keys.webhookEndpoint(accountId, endpointId)), 'webhookEndpoint');

/** `types`: only events of these types (a type filter, or the types a credential may read); undefined: every type. */
export const eventsOfAccount = (accountId: string, page: PageRequest, types?: readonly string[]) => {
  const k = keys.eventPrefix(accountId);
  return pageOf('event')(queryPrefix(k.PK, k.SKPrefix, page, true, types ? { attribute: 'type', values: types } : undefined));
};

export const eventOfAccount = async (accountId: string, eventId: string) =>
  asKindOrUndefined(await getItem(keys.event(accountId, eventId)), 'event');

export const deliveriesOfEndpoint = (endpointId: string, page: PageRequest) => {
  const k = keys.webhookDeliveryPrefix(endpointId);
  return pageOf('webhookDelivery')(queryPrefix(k.PK, k.SKPrefix, page, true));
};

export const deliveryOfEndpoint = async (endpointId: string, deliveryId: string) =>
  asKindOrUndefined(await getItem(keys.webhookDelivery(endpointId, deliveryId)), 'webhookDelivery');

/** Every delivery of an endpoint still waiting for an attempt (its deletion stops them). */
export const pendingDeliveriesOf = async (endpointId: string) => {
  const k = keys.webhookDeliveryPrefix(endpointId);
  return (await queryAll({ pk: k.PK, skPrefix: k.SKPrefix, consistent: true }))
    .map((item) => asKind(item, 'webhookDelivery'))
    .filter((d) => d.status === 'pending');
};

/** The dispatcher's fan-out work: up to `limit` events of one shard of the outbox (sparse GSI2 OUTBOX#<n>), oldest first. */
/** The dispatcher's fan-out: up to `limit` events of one outbox shard (GSI2 OUTBOX#<n>), oldest first, after the event id `after`. */
export const outboxOfShard = async (shard: number, limit: number, after?: string) =>
  (await queryIndexPage(keys.outboxShard(shard), limit, after ? ['>', after] : undefined)).map((item) => asKind(item, 'event'));

/** The dispatcher's attempts: up to `limit` deliveries of one shard of the retry queue (GSI2 WHDUE#<n>) due at `nowIso` or before, oldest first, after the delivery `after` (one read before). */
export const dueDeliveriesOfShard = async (shard: number, nowIso: string, limit: number, after?: IndexedKey) =>
  // `$` sorts right after `#`: every `<dueAt>#<id>` with dueAt ≤ now, and none later.
  (await queryIndexPage(keys.deliveryDueShard(shard), limit, ['<', `${nowIso}$`], after)).map((item) => asKind(item, 'webhookDelivery'));

/** The pending-repair pass: up to `limit` repairs of one shard (GSI2 REPAIRDUE#<n>) due at `nowIso` or before. */
export const dueRepairsOfShard = async (shard: number, nowIso: string, limit: number) =>
  (await queryIndexPage(keys.repairDueShard(shard), limit, ['<', `${nowIso}$`])).map((item) => asKind(item, 'server-repair'));

/** The install watch (every minute): up to `limit` watched installs of one shard (GSI2 INSTALLDUE#<n>) due at `nowIso` or before. */
export const installWatchOfServer = async (accountId: string, serverId: string) =>
  asKindOrUndefined(await getItem(keys.installWatch(accountId, serverId)), 'install-watch');

export const dueInstallWatchesOfShard = async (shard: number, nowIso: string, limit: number) =>
  (await queryIndexPage(keys.installWatchDueShard(shard), limit, ['<', `${nowIso}$`])).map((item) => asKind(item, 'install-watch'));

export const autoTopUpOf = async (accountId: string) => asKindOrUndefined(await getItem(keys.autoTopUp(accountId)), 'auto-topup');

/** Profiles marked due by the ledger at or before `nowIso`, oldest first. */
export const dueAutoTopUpsOfShard = async (shard: number, nowIso: string, limit: number) =>
  (await queryIndexPage(keys.autoTopUpDueShard(shard), limit, ['<', `${nowIso}$`])).map((item) => asKind(item, 'account'));

export const settings = async () => asKindOrUndefined(await getItem(keys.settings()), 'settings');

export const instanceById = async (instanceId: string) => asKindOrUndefined(await getItem(keys.instance(instanceId)), 'instance');

/** Instances are few (one per panel), so they share one partition and are read whole. */
export const allInstances = async (): Promise<InstanceItem[]> =>
  (await queryAll({ pk: keys.instancePrefix().PK, skPrefix: keys.instancePrefix().SKPrefix })).map((item) => asKind(item, 'instance'));

/** Which instance registered the panel that has this node (consistent: a registration decides on it). */
export const panelNodeClaim = async (nodeUuid: string) =>
  asKindOrUndefined(await getItem(keys.panelNodeClaim(nodeUuid)), 'panel-node-claim');

/** The panel servers held for an admin's confirmation (few: each one is an anomaly). */
export const heldOrphans = async () =>
  (await queryAll({ pk: keys.heldOrphanPrefix().PK, skPrefix: keys.heldOrphanPrefix().SKPrefix, consistent: true })).map((item) =>
    asKind(item, 'held-orphan'),
  );

export const heldOrphan = async (instanceId: string, panelServerId: number) =>
  asKindOrUndefined(await getItem(keys.heldOrphan(instanceId, panelServerId)), 'held-orphan');

/** The mail sender (shared/mail/sender.ts): up to `limit` messages of one shard of the mail queue (GSI2 MAILDUE#<n>) due at `nowIso` or before, oldest first. */
export const dueMailOfShard = async (shard: number, nowIso: string, limit: number) =>
  (await queryIndexPage(keys.mailDueShard(shard), limit, ['<', `${nowIso}$`])).map((item) => asKind(item, 'mail'));

export const mailById = async (mailId: string) => asKindOrUndefined(await getItem(keys.mail(mailId)), 'mail');

/** Whether an address is on the suppression list (eventually consistent: a bounce a second ago may still get one more). */
export const mailSuppression = async (email: string) =>
  asKindOrUndefined(await getItem(keys.mailSuppression(email), false), 'mail-suppression');

/** A server's share given to one e-mail (shared access, shared/servers/shares.ts): the pipeline's one read per server route. */
export const shareOfServer = async (serverId: string, email: string) =>
  asKindOrUndefined(await getItem(keys.serverShare(serverId, email)), 'server-share');

/** Every share of one server (at most MAX_SHARES_PER_SERVER). */
export const sharesOfServer = async (serverId: string) => {
  const k = keys.serverSharePrefix(serverId);
  return (await queryAll({ pk: k.PK, skPrefix: k.SKPrefix, consistent: true })).map((item) => asKind(item, 'server-share'));
};

/** The servers shared with an e-mail, up to `limit` (the invitee's list reads one bounded page). */
export const sharedWithEmail = async (email: string, limit: number) => {
  const k = keys.sharedWithPrefix(email);
  const out = await db().send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
      ExpressionAttributeValues: { ':pk': k.PK, ':prefix': k.SKPrefix },
      ConsistentRead: true,
      Limit: limit,
    }),
  );
  return (out.Items ?? []).map((item) => asKind(item as Item, 'shared-with'));
};
/** Who holds a subdomain of the zone (shared/servers/subdomain.ts), if anyone. */
export async function subdomainClaim(zone: string, name: string) {
  return asKindOrUndefined(await getItem(keys.subdomainClaim(zone, name)), 'subdomain-claim');
}

/** A name's records as the local DNS provider published them (dev/local-dns.ts answers from these). */
export async function localDnsRecords(zone: string, name: string) {
  return asKindOrUndefined(await getItem(keys.localDnsRecords(zone, name), false), 'local-dns-records');
}

// ── The admin home's figures (shared/admin/home.ts) ──

/** A month's daily money counters (`MONEY#<yyyy-mm>`: at most 31 days × LISTING_SHARDS small rows), one query. */
export const moneyReceivedOfMonth = async (month: string) => {
  const k = keys.moneyReceivedMonth(month);
  return queryAll({ pk: k.PK, skPrefix: k.SKPrefix });
};

/**
 * Tallies one index partition, reading at most `bound` items and only the attribute `tallyBy` (or
 * nothing but the count): what the admin home counts. DynamoDB bills the size of each item read,
 * so the read costs the partition's items up to the bound; `complete` is false when it stopped there.
 */
export async function tallyIndexPartition(
  index: IndexName,
  pk: string,
  bound: number,
  tallyBy?: string,
): Promise<{ counts: Map<string, number>; read: number; complete: boolean }> {
  const counts = new Map<string, number>();
  let read = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const out = await db().send(
      new QueryCommand({
        TableName: tableName(),
        IndexName: index,
        KeyConditionExpression: `${index}PK = :pk`,
        ExpressionAttributeValues: { ':pk': pk },
        ...(tallyBy ? { ProjectionExpression: '#t', ExpressionAttributeNames: { '#t': tallyBy } } : { Select: 'COUNT' as const }),
        Limit: bound - read,
        ExclusiveStartKey: start,
      }),
    );
    if (tallyBy) for (const item of out.Items ?? []) counts.set(String(item[tallyBy]), (counts.get(String(item[tallyBy])) ?? 0) + 1);
    else counts.set('', (counts.get('') ?? 0) + (out.Count ?? 0));
    read += out.Count ?? 0;
    start = out.LastEvaluatedKey;
  } while (start && read < bound);
  return { counts, read, complete: !start };
}
export const planById = async (planId: string) => asKindOrUndefined(await getItem(keys.plan(planId)), 'plan');

/** The storefront's whole partition (plans, region and egg looks): few items, one Query. */
export const storefront = async (): Promise<Item[]> => queryAll({ pk: keys.storefrontPartition(), consistent: true });
