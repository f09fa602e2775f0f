import { keys } from './keys.ts';
import type { IndexName } from './table.ts';

/**
 * Which partitions of the table each deployed function may touch: the one source of the
 * `dynamodb:LeadingKeys` conditions of the functions' IAM policies (infra/constructs/app-function.ts).
 *
 * The partition patterns are derived from the key builders of keys.ts, not spelled again: each
 * builder is called with a sentinel in place of its variable parts and the key is cut at the first
 * sentinel (`ACCOUNT#<id>` → `ACCOUNT#*`); a key with no variable part stays exact (`SETTINGS`).
 * tests/infra checks that every builder's partition key matches one of these patterns, so a new
 * kind of item cannot be forgotten here.
 */
const SENTINEL = '\u0001';
/** For builders that take a number (windows, years): the sentinel goes through the template literal. */
const N = SENTINEL as unknown as number;

/** An IAM `StringLike` pattern for the partition keys one builder makes. */
export function partitionPattern(partitionKey: string): string {
  const at = partitionKey.indexOf(SENTINEL);
  return at < 0 ? partitionKey : `${partitionKey.slice(0, at)}*`;
}

/** The sentinel-filled argument lists a caller (tests) may use to build every key. */
export const KEY_SENTINEL = SENTINEL;

export const PARTITIONS = {
  /** Profile, ledger, activity, API keys, servers, month spend, invoices: all under the account. */
  account: partitionPattern(keys.account(SENTINEL).PK),
  subject: partitionPattern(keys.subject(SENTINEL, SENTINEL).PK),
  apiKeyHash: partitionPattern(keys.apiKeyHash(SENTINEL).PK),
  ledgerGuard: partitionPattern(keys.ledgerGuard(SENTINEL).PK),
  /** Money received per UTC day (`MONEY#<yyyy-mm>`), written with the ledger entry that moves it. */
  moneyReceived: partitionPattern(keys.moneyReceivedDay(SENTINEL, SENTINEL, SENTINEL).PK),
  idempotency: partitionPattern(keys.idempotency(SENTINEL, SENTINEL).PK),
  rateWindow: partitionPattern(keys.rateWindow(SENTINEL, N).PK),
  serverPointer: partitionPattern(keys.serverPointer(SENTINEL).PK),
  liveState: partitionPattern(keys.liveState(SENTINEL).PK),
  /** A server's usage samples (`USAGE#<serverId>`), written by the live-state refresh (shared/servers/usage-history.ts). */
  usageSamples: partitionPattern(keys.usageSample(SENTINEL, SENTINEL).PK),
  serverLease: partitionPattern(keys.serverLease(SENTINEL).PK),
  serverRepair: partitionPattern(keys.serverRepair(SENTINEL).PK),
  /** Topology and eggs copies (`PANEL#<id>`); `PANELBUDGET#` does not match it (`B` ≠ `#`). */
  panelCopies: partitionPattern(keys.panelTopology(SENTINEL).PK),
  panelCallBudget: partitionPattern(keys.panelCallBudget(SENTINEL, SENTINEL).PK),
  invoicePointer: partitionPattern(keys.invoicePointer(SENTINEL).PK),
  invoiceNumber: partitionPattern(keys.invoiceNumber(SENTINEL).PK),
  /** `PAYMENTINTENT#<pi>` → invoice: how a Stripe refund or dispute finds what it reverses. */
  paymentIntent: partitionPattern(keys.paymentIntent(SENTINEL).PK),
  invoiceCounter: partitionPattern(keys.invoiceCounter(N).PK),
  creditNotePointer: partitionPattern(keys.creditNotePointer(SENTINEL).PK),
  creditNoteCounter: partitionPattern(keys.creditNoteCounter(N).PK),
  billingWatermark: partitionPattern(keys.billingWatermark().PK),
  stripeEventsCursor: partitionPattern(keys.stripeEventsCursor().PK),
  billingPass: partitionPattern(keys.billingPass(SENTINEL).PK),
  settings: partitionPattern(keys.settings().PK),
  instances: partitionPattern(keys.instance(SENTINEL).PK),
  /** Plans and the looks of regions and eggs (shared/plans). */
  storefront: partitionPattern(keys.plan(SENTINEL).PK),
  /** An endpoint's webhook deliveries (`WHDLV#<endpoint>`); endpoints and events sit under the account. */
  webhookDelivery: partitionPattern(keys.webhookDelivery(SENTINEL, SENTINEL).PK),
  /** A message to send (`MAIL#<id>`); `MAILSUPPRESS#` does not match it (`S` ≠ `#`). */
  mail: partitionPattern(keys.mail(SENTINEL).PK),
  mailSuppression: partitionPattern(keys.mailSuppression(SENTINEL).PK),
  /** A subdomain's claim (and, locally, its records): `SUBDOMAIN#<zone>#<name>`. */
  subdomain: partitionPattern(keys.subdomainClaim(SENTINEL, SENTINEL).PK),
  /** A server's shares and their count (`SHARES#<serverId>`); `SHAREDWITH#` does not match it (`D` ≠ `S`). */
  serverShares: partitionPattern(keys.serverShare(SENTINEL, SENTINEL).PK),
  /** An invitee's pointers to the servers shared with its e-mail (`SHAREDWITH#<email>`). */
  sharedWith: partitionPattern(keys.sharedWith(SENTINEL, SENTINEL).PK),
} as const;

export type Partition = keyof typeof PARTITIONS;

/**
 * The index partitions (GSI1PK, GSI2PK values) the code queries, by index, derived from the shard
 * builders the same way (`ACCOUNTS#<n>` → `ACCOUNTS#*`). A Query on an index names one partition
 * key value, the index's (`GSI2PK = BILLABLE#3`): that is the request's `dynamodb:LeadingKeys`, so
 * these patterns scope index queries as PARTITIONS scope the table's items.
 */
export const INDEX_PARTITIONS = {
  /** GSI1: the admin listings of accounts, the audit log and servers (servers also the reconciler's). */
  accountsListing: { index: 'GSI1', pattern: partitionPattern(keys.accountsShard(N)) },
  auditListing: { index: 'GSI1', pattern: partitionPattern(keys.auditShard(N)) },
  serversListing: { index: 'GSI1', pattern: partitionPattern(keys.serversShard(N)) },
  /** GSI2: the sparse queues. */
  billable: { index: 'GSI2', pattern: partitionPattern(keys.billableShard(N)) },
  outbox: { index: 'GSI2', pattern: partitionPattern(keys.outboxShard(N)) },
  deliveryDue: { index: 'GSI2', pattern: partitionPattern(keys.deliveryDueShard(N)) },
  repairDue: { index: 'GSI2', pattern: partitionPattern(keys.repairDueShard(N)) },
  autoTopUpDue: { index: 'GSI2', pattern: partitionPattern(keys.autoTopUpDueShard(N)) },
  installWatchDue: { index: 'GSI2', pattern: partitionPattern(keys.installWatchDueShard(N)) },
  mailDue: { index: 'GSI2', pattern: partitionPattern(keys.mailDueShard(N)) },
  /** GSI2, not a queue: one server's activity entries (shared/servers/activity.ts). */
  serverActivity: { index: 'GSI2', pattern: partitionPattern(keys.serverActivityPartition(SENTINEL)) },
} as const satisfies Record<string, { index: IndexName; pattern: string }>;

export type IndexPartition = keyof typeof INDEX_PARTITIONS;

/**
 * What one function may do: `write` partitions (read, conditions and writes), `read` partitions
 * (GetItem, Query, ConditionCheckItem only) and the indexes it queries. Index queries get a
 * statement per index, limited by `dynamodb:LeadingKeys` to `indexPartitions` of that index: a
 * Query on an index is keyed by the index's partition key (`ACCOUNTS#3`, `BILLABLE#7`), not the
 * table's, so the table's patterns would not describe it. An index is granted only to the
 * functions whose code queries it.
 */
export interface TableAccess {
  write: readonly Partition[];
  read: readonly Partition[];
  indexes: readonly IndexName[];
  /** The index partitions queried (INDEX_PARTITIONS), each on an index of `indexes`. */
  indexPartitions: readonly IndexPartition[];
  /**
   * Partitions also read with BatchGetItem (each also in `write` or `read`): the billing pass,
   * which reads a shard's profiles 100 at a time (shared/billing/pass.ts), and admin, which reads
   * the profiles of a page of the accounts listing.
   */
  batchRead?: readonly Partition[];
}

/**
 * Every request of an endpoint group runs the same pipeline (shared/http/handler.ts): rate-limit
 * windows, the API key lookup and its `lastUsedAt`, the session's subject and, on first sight, the
 * new account with its trial credit (profile, ledger entry, `TXN#` guard), the idempotency record,
 * the activity-log entry; the platform settings are read (trial credit, limits).
 */
const PIPELINE: TableAccess = {
  write: ['rateWindow', 'apiKeyHash', 'subject', 'account', 'ledgerGuard', 'moneyReceived', 'idempotency'],
  read: ['settings'],
  indexes: [],
  indexPartitions: [],
};
/**
 * Panel work (deploy, resize, delete, power, suspension, reconciling, catalog copies): instance
 * records and their server counts, server pointers, live state, leases, pending repairs, the shared
 * panel copies and the panels' call budgets.
 */
const PANEL_WORK: readonly Partition[] = [
  'instances',
  'serverPointer',
  'liveState',
  'usageSamples',
  'serverLease',
  // A suspension or repair that did not complete is queued by whoever met the failure (shared/servers/pending.ts).
  'serverRepair',
  'panelCopies',
  'panelCallBudget',
  // A server's subdomain claim goes with its deploy, its delete and the repair of its records (shared/servers/subdomain.ts).
  'subdomain',
];
/** Invoice and credit-note numbering and lookup (shared/invoices, shared/credit-notes). */
const INVOICES: readonly Partition[] = [
  'invoicePointer',
  'invoiceNumber',
  'invoiceCounter',
  'paymentIntent',
  'creditNotePointer',
  'creditNoteCounter',
];

const withPipeline = (extra: Partial<TableAccess>): TableAccess => ({
  write: [...PIPELINE.write, ...(extra.write ?? [])],
  read: [...PIPELINE.read, ...(extra.read ?? [])],
  indexes: [...(extra.indexes ?? [])],
  indexPartitions: [...(extra.indexPartitions ?? [])],
  ...(extra.batchRead ? { batchRead: [...extra.batchRead] } : {}),
});

/**
 * Per deployed function (the route groups, `billing-pass` for the scheduler and the worker,
 * `webhooks` for the dispatcher, and the edge `authorizer`). Read from each group's code paths
 * (docs/design/data-model.md):
 * - public: health counts the instances; docs and the OpenAPI document read nothing.
 * - account: keys, ledger, logs, budget; a budget change may lift a suspension (panel work);
 *   webhook endpoints and events (under the account) and the endpoints' deliveries (`WHDLV#`).
 * - catalog: instance records, the panels' copies and call budgets; plans and looks read.
 * - admin-panels: instances and their keys, copies and call budgets; the held orphans (panel work).
 * - admin-storefront: plans and the looks of regions and eggs, written (shared/plans).
 * - servers: every server change, panel work, budgets (`SPEND#` sits under the account).
 * - server-tools: startup, files, backups, schedules, databases, ports, add-ons: server records, leases,
 *   panel work; the caller's share of the server (the pipeline's shared-access stage reads it and binds
 *   it on first use).
 * - server-history: a server's activity (GSI2 `SERVERLOG#<serverId>`, and the panel's log: panel work),
 *   usage samples, the month's spend; the caller's share, as server-tools.
 * - servers and account also: shares (servers manages them; account's SFTP password makes an
 *   invitee's panel subuser of each server shared with it and records it on the share).
 * - billing: checkout opens invoices; listings and reads of invoices.
 * - payments: the webhook credits (ledger), moves invoices, lifts suspensions (panel work).
 * - admin: settings, instances and their keys, credits (which may lift a suspension: panel work),
 *   the listings of users, servers and the audit log (GSI1); a refund reads the invoice it refunds. No billing pass.
 * - billing-pass: charges (account, `TXN#` guards), watermark and pass record, suspension and the
 *   reconciler (panel work, server pointers), the listings of GSI1 (reconciler) and GSI2 (shards, and
 *   the pending repairs the every-minute `repairs` entry takes); that entry also opens the invoices
 *   of the due auto top-ups (invoice numbering) and books the Stripe events the webhook missed
 *   (as payments does; its cursor `STRIPE#EVENTS`); settings are read. No rate limits, API keys, subjects or idempotency records.
 * - webhooks: the dispatcher (functions/webhooks): reads the outbox and the retry queue (GSI2),
 *   events and endpoints (under the account), writes deliveries (`WHDLV#`), takes events out of
 *   the outbox, marks or disables a failing endpoint and records its `webhook_endpoint.disabled`
 *   event (under the account); its fan-out also queues the mail an event calls for (`MAIL#`).
 *   Nothing else: no settings, no pipeline, no panel work.
 * - mail: the mail sender (functions/mail): reads the mail queue (GSI2), the account, the invoice
 *   or credit note a message carries (and their pointers, the seller in the settings), writes the
 *   message's state; the suppression list is read there and written by the bounce handler (`mail-events`).
 * - authorizer: `authenticate` only: the key hash read, the subject and, on first sight of a
 *   session, the account it creates (as the pipeline would), settings read; a refused credential
 *   counts against the caller's `ip:` rate-limit window.
 */
export const TABLE_ACCESS = {
  public: withPipeline({ read: ['instances'] }),
  // Webhook deliveries: listed, redelivered, and stopped when their endpoint is deleted.
  account: withPipeline({ write: [...PANEL_WORK, 'webhookDelivery', 'serverShares'], read: ['sharedWith'] }),
  // The storefront's plans and the looks of regions and eggs are read here (shared/plans).
  catalog: withPipeline({ write: ['instances', 'panelCopies', 'panelCallBudget'], read: ['storefront'] }),
  // A deploy or quote naming a plan reads it.
  servers: withPipeline({ write: [...PANEL_WORK, 'serverShares', 'sharedWith'], read: ['storefront'] }),
  'server-tools': withPipeline({ write: [...PANEL_WORK, 'serverShares'] }),
  // A server's activity: its listing in GSI2 (shared/servers/activity.ts), and the panel's log (panel
  // work: its call budget); its usage samples and the month's spend (under the account), read.
  'server-history': withPipeline({ write: [...PANEL_WORK, 'serverShares'], indexes: ['GSI2'], indexPartitions: ['serverActivity'] }),
  billing: withPipeline({ write: INVOICES }),
  payments: withPipeline({ write: [...INVOICES, ...PANEL_WORK] }),
  // A refund reads its invoice (pointer, then the item under the account) and, in the sandbox, books
  // the signed event in-process: the payment-intent pointer is read like the payments function does.
  admin: withPipeline({
    // A deduction of paid credit issues a credit note (its counter and id pointer).
    write: [...PANEL_WORK, 'settings', 'creditNotePointer', 'creditNoteCounter'],
    read: ['invoicePointer', 'paymentIntent'],
    // The admin home also counts the pending repairs and the webhook queues (GSI2, shared/admin/home.ts).
    indexes: ['GSI1', 'GSI2'],
    indexPartitions: ['accountsListing', 'auditListing', 'serversListing', 'repairDue', 'outbox', 'deliveryDue'],
    // The profiles of a page of the accounts listing (its rows are listing entries).
    batchRead: ['account'],
  }),
  // Panels registered, changed, tested and removed (their copies, call budgets), and the held orphans
  // (under `INSTANCES`): confirming one deletes it from its panel under the server's lease.
  'admin-panels': withPipeline({ write: [...PANEL_WORK] }),
  // Plans and the looks of regions and eggs: written here only (shared/plans); an egg's look checks
  // its panel is registered and the egg in the panel's stored copy.
  'admin-storefront': withPipeline({ write: ['storefront'], read: ['instances', 'panelCopies'] }),
  // The every-minute entry also runs the due auto top-ups: it opens their invoices (and, in the sandbox, books the payment).
  'billing-pass': {
    write: ['account', 'ledgerGuard', 'moneyReceived', 'billingWatermark', 'billingPass', 'stripeEventsCursor', ...PANEL_WORK, ...INVOICES],
    read: ['settings'],
    indexes: ['GSI1', 'GSI2'],
    // The reconciler's servers listing; the billable shards, pending repairs, due auto top-ups and watched installs.
    indexPartitions: ['serversListing', 'billable', 'repairDue', 'autoTopUpDue', 'installWatchDue'],
    batchRead: ['account'],
  },
  webhooks: { write: ['account', 'webhookDelivery', 'mail'], read: [], indexes: ['GSI2'], indexPartitions: ['outbox', 'deliveryDue'] },
  mail: {
    write: ['mail'],
    read: ['account', 'invoicePointer', 'creditNotePointer', 'settings', 'mailSuppression'],
    indexes: ['GSI2'],
    indexPartitions: ['mailDue'],
  },
  'mail-events': { write: ['mailSuppression'], read: [], indexes: [], indexPartitions: [] },
  authorizer: {
    write: ['subject', 'account', 'ledgerGuard', 'rateWindow'],
    read: ['apiKeyHash', 'settings'],
    indexes: [],
    indexPartitions: [],
  },
} as const satisfies Record<string, TableAccess>;

export type FunctionTableAccess = keyof typeof TABLE_ACCESS;

/** The partition patterns of an access: `write` patterns and all patterns that may be read. */
export function leadingKeyPatterns(access: TableAccess): { write: string[]; read: string[]; batchRead: string[] } {
  const write = [...new Set(access.write.map((p) => PARTITIONS[p]))];
  const read = [...new Set([...access.write, ...access.read].map((p) => PARTITIONS[p]))];
  const batchRead = [...new Set((access.batchRead ?? []).map((p) => PARTITIONS[p]))];
  return { write, read, batchRead };
}

/** The `dynamodb:LeadingKeys` patterns of an access's queries on one index. */
export function indexPatterns(access: TableAccess, index: IndexName): string[] {
  return [
    ...new Set(
      access.indexPartitions
        .map((p) => INDEX_PARTITIONS[p])
        .filter((p) => p.index === index)
        .map((p) => p.pattern),
    ),
  ];
}
