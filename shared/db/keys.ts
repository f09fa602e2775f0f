import { createHash } from 'node:crypto';
import {
  AUTO_TOPUP_SHARDS,
  BILLING_SHARDS,
  INSTALL_WATCH_SHARDS,
  LISTING_SHARDS,
  MAIL_SHARDS,
  REPAIR_SHARDS,
  WEBHOOK_SHARDS,
} from './table.ts';
import { isTimeOrderedId } from '../ids.ts';

/**
 * Key builders: the only place that knows how keys are spelled. Nothing else concatenates `#`.
 */
export interface ItemKey {
  PK: string;
  SK: string;
}

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

/**
 * The sort-key part of an id in a listing read newest first (servers, API keys). Time-ordered ids
 * (UUIDv7, shared/ids.ts) carry `v7#`, which sorts above every hex digit, so each of them lists
 * before every random (v4) id made before them; those older rows list after, among themselves by
 * their random id. The part is derived from the id alone, so a Get by id builds the same key.
 */
const listed = (id: string): string => (isTimeOrderedId(id) ? `v7#${id}` : id);

/** Stable shard of an id, so one account's items always land in the same listing shard. */
export function shardOf(id: string, shards = LISTING_SHARDS): number {
  return createHash('sha256').update(id).digest().readUInt32BE(0) % shards;
}

export const keys = {
  account: (accountId: string): ItemKey => ({ PK: `ACCOUNT#${accountId}`, SK: 'PROFILE' }),
  /** The message types the account turned off (shared/mail/preferences.ts). */
  mailPreferences: (accountId: string): ItemKey => ({ PK: `ACCOUNT#${accountId}`, SK: 'MAIL_PREFERENCES' }),
  /** The account's latest e-mail change request (shared/accounts/email-change.ts): one at a time, a new one replaces it. */
  emailChange: (accountId: string): ItemKey => ({ PK: `ACCOUNT#${accountId}`, SK: 'EMAIL_CHANGE' }),
  /** Who the account's invoices are addressed to (shared/accounts/billing-profile.ts): apart from the profile every request reads. */
  billingProfile: (accountId: string): ItemKey => ({ PK: `ACCOUNT#${accountId}`, SK: 'BILLING_PROFILE' }),
  /**
   * The account's entry in the admin listing (GSI1 `ACCOUNTS#<n>`): a small item of its own, so the
   * profile, whose balance every charge moves, is not copied into the index with each change.
   */
  accountListingEntry: (accountId: string): ItemKey => ({ PK: `ACCOUNT#${accountId}`, SK: 'LISTING' }),
  accountsListing: (accountId: string, createdAt: string) => ({
    GSI1PK: `ACCOUNTS#${shardOf(accountId)}`,
    GSI1SK: `${createdAt}#${accountId}`,
  }),
  accountsShard: (shard: number): string => `ACCOUNTS#${shard}`,

  subject: (issuer: string, subject: string): ItemKey => ({ PK: `SUBJECT#${issuer}#${subject}`, SK: 'SUBJECT' }),

  apiKey: (accountId: string, keyId: string): ItemKey => ({ PK: `ACCOUNT#${accountId}`, SK: `KEY#${listed(keyId)}` }),
  apiKeyPrefix: (accountId: string) => ({ PK: `ACCOUNT#${accountId}`, SKPrefix: 'KEY#' }),
  apiKeyHash: (hash: string): ItemKey => ({ PK: `KEYHASH#${hash}`, SK: 'KEYHASH' }),

  ledgerEntry: (accountId: string, seq: number): ItemKey => ({ PK: `ACCOUNT#${accountId}`, SK: `LEDGER#${pad(seq, 12)}` }),
  ledgerPrefix: (accountId: string) => ({ PK: `ACCOUNT#${accountId}`, SKPrefix: 'LEDGER#' }),
  ledgerGuard: (idempotencyKey: string): ItemKey => ({ PK: `TXN#${idempotencyKey}`, SK: 'TXN' }),

  activity: (accountId: string, at: string, id: string): ItemKey => ({ PK: `ACCOUNT#${accountId}`, SK: `LOG#${at}#${id}` }),
  activityPrefix: (accountId: string) => ({ PK: `ACCOUNT#${accountId}`, SKPrefix: 'LOG#' }),
  auditListing: (accountId: string, at: string, id: string) => ({
    GSI1PK: `AUDIT#${shardOf(accountId)}`,
    GSI1SK: `${at}#${id}`,
  }),
  auditShard: (shard: number): string => `AUDIT#${shard}`,
  /**
   * An activity entry whose target is a server, in that server's listing (GSI2), whoever's account
   * it is written under (the owner's, an admin's, an invitee's): shared/servers/activity.ts.
   */
  serverActivityListing: (serverId: string, at: string, id: string) => ({
    GSI2PK: `SERVERLOG#${serverId}`,
    GSI2SK: `${at}#${id}`,
  }),
  serverActivityPartition: (serverId: string): string => `SERVERLOG#${serverId}`,

  idempotency: (accountId: string, key: string): ItemKey => ({ PK: `IDEM#${accountId}#${key}`, SK: 'IDEM' }),
  rateWindow: (who: string, windowStart: number): ItemKey => ({ PK: `RATE#${who}#${windowStart}`, SK: 'RATE' }),
  server: (accountId: string, serverId: string): ItemKey => ({ PK: `ACCOUNT#${accountId}`, SK: `SERVER#${listed(serverId)}` }),
  /** Server id → account: how a panel's external id (our server id) leads back to the record. */
  serverPointer: (serverId: string): ItemKey => ({ PK: `SERVERID#${serverId}`, SK: 'SERVERID' }),
  serverPrefix: (accountId: string) => ({ PK: `ACCOUNT#${accountId}`, SKPrefix: 'SERVER#' }),
  /** A server's live state as the panel last told it, shared by every process (shared/servers/live.ts). */
  liveState: (serverId: string): ItemKey => ({ PK: `LIVE#${serverId}`, SK: 'LIVE' }),
  /** One usage sample per server per bucket (`bucketStart` ISO), written by the live-state refresh (shared/servers/usage-history.ts). */
  usageSample: (serverId: string, bucketStart: string): ItemKey => ({ PK: `USAGE#${serverId}`, SK: `SAMPLE#${bucketStart}` }),
  usageSamplePrefix: (serverId: string) => ({ PK: `USAGE#${serverId}`, SKPrefix: 'SAMPLE#' }),
  serversListing: (accountId: string, createdAt: string, serverId: string) => ({
    GSI1PK: `SERVERS#${shardOf(accountId)}`,
    GSI1SK: `${createdAt}#${serverId}`,
  }),
  serversShard: (shard: number): string => `SERVERS#${shard}`,

  /** Sparse billable-servers index: only servers the billing pass must still look at carry it. */
  billable: (accountId: string, serverId: string) => ({
    GSI2PK: `BILLABLE#${shardOf(accountId, BILLING_SHARDS)}`,
    GSI2SK: `${accountId}#${serverId}`,
  }),
  billableShard: (shard: number): string => `BILLABLE#${shard}`,
  monthSpend: (accountId: string, month: string): ItemKey => ({ PK: `ACCOUNT#${accountId}`, SK: `SPEND#${month}` }),
  billingWatermark: (): ItemKey => ({ PK: 'BILLING#HOURLY', SK: 'CURSOR' }),
  /** The Stripe event reconciliation's cursor and run claim (shared/payments/reconcile-events.ts). */
  stripeEventsCursor: (): ItemKey => ({ PK: 'STRIPE#EVENTS', SK: 'CURSOR' }),
  /** A fanned-out pass's record (AWS): which shards are done for the hour it bills through (ISO time). */
  billingPass: (throughHour: string): ItemKey => ({ PK: 'BILLING#PASS', SK: throughHour }),
  /**
   * Money received on one UTC day (shared/admin/home.ts): added to in the ledger transaction of each
   * top-up, refund and dispute (shared/ledger/index.ts). One row per account shard spreads the
   * writes; a month is one partition, so the admin home reads a month in one query.
   */
  moneyReceivedDay: (month: string, dayOfMonth: string, accountId: string): ItemKey => ({
    PK: `MONEY#${month}`,
    SK: `DAY#${dayOfMonth}#${shardOf(accountId)}`,
  }),
  moneyReceivedMonth: (month: string) => ({ PK: `MONEY#${month}`, SKPrefix: 'DAY#' }),
  invoice: (accountId: string, number: string): ItemKey => ({ PK: `ACCOUNT#${accountId}`, SK: `INVOICE#${number}` }),
  invoicePrefix: (accountId: string) => ({ PK: `ACCOUNT#${accountId}`, SKPrefix: 'INVOICE#' }),
  invoicePointer: (invoiceId: string): ItemKey => ({ PK: `INVOICEID#${invoiceId}`, SK: 'INVOICEID' }),
  invoiceNumber: (number: string): ItemKey => ({ PK: `INVOICENO#${number}`, SK: 'INVOICENO' }),
  invoiceCounter: (year: number): ItemKey => ({ PK: `COUNTER#INVOICE#${year}`, SK: 'COUNTER' }),
  /** Credit notes (shared/credit-notes): under the account by number, an id → number pointer, their own yearly counter. */
  creditNote: (accountId: string, number: string): ItemKey => ({ PK: `ACCOUNT#${accountId}`, SK: `CREDITNOTE#${number}` }),
  creditNotePrefix: (accountId: string) => ({ PK: `ACCOUNT#${accountId}`, SKPrefix: 'CREDITNOTE#' }),
  creditNotePointer: (creditNoteId: string): ItemKey => ({ PK: `CREDITNOTEID#${creditNoteId}`, SK: 'CREDITNOTEID' }),
  creditNoteCounter: (year: number): ItemKey => ({ PK: `COUNTER#CREDITNOTE#${year}`, SK: 'COUNTER' }),
  /** Stripe PaymentIntent id → invoice: refunds and disputes name the payment, not our invoice. */
  paymentIntent: (paymentIntentId: string): ItemKey => ({ PK: `PAYMENTINTENT#${paymentIntentId}`, SK: 'PAYMENTINTENT' }),

  /**
   * A panel's shared call budget (shared/instances/call-budget.ts): one item per panel and API holding
   * the trailing window's buckets; and one counter per account, call class and minute.
   */
  panelCallBudget: (budgetId: string, api: string): ItemKey => ({ PK: `PANELBUDGET#${budgetId}#${api}`, SK: 'WINDOW' }),
  panelCallBudgetAccount: (budgetId: string, api: string, accountId: string, callClass: string, minuteStartMs: number): ItemKey => ({
    PK: `PANELBUDGET#${budgetId}#${api}#${accountId}`,
    SK: `W#${minuteStartMs}#${callClass}`,
  }),
  /** A short lease on one server: one operation at a time changes it. */
  serverLease: (serverId: string): ItemKey => ({ PK: `LEASE#${serverId}`, SK: 'LEASE' }),
  /** A compress or decompress sent to the panel and not known to have ended, by what it does (a hash): it is never sent twice. */
  archiveOperation: (serverId: string, fingerprint: string): ItemKey => ({ PK: `LEASE#${serverId}`, SK: `ARCHIVE#${fingerprint}` }),
  archiveOperationPrefix: (serverId: string) => ({ PK: `LEASE#${serverId}`, SKPrefix: 'ARCHIVE#' }),
  /** A suspension or repair of one server not yet completed: the pending-repair queue (shared/servers/pending.ts). */
  serverRepair: (serverId: string): ItemKey => ({ PK: `REPAIR#${serverId}`, SK: 'REPAIR' }),
  /** Sparse GSI2 entry of a pending repair due at `dueAt` (ISO). */
  repairDue: (serverId: string, dueAt: string) => ({
    GSI2PK: keys.repairDueShard(shardOf(serverId, REPAIR_SHARDS)),
    GSI2SK: `${dueAt}#${serverId}`,
  }),
  repairDueShard: (shard: number): string => `REPAIRDUE#${shard}`,

  /** The shared, short-lived copies of one panel's reads (shared/catalog): topology with free allocations, and eggs. */
  panelTopology: (instanceId: string): ItemKey => ({ PK: `PANEL#${instanceId}`, SK: 'TOPOLOGY' }),
  panelEggs: (instanceId: string): ItemKey => ({ PK: `PANEL#${instanceId}`, SK: 'EGGS' }),

  /** Outbound webhooks (shared/webhooks): an account's endpoints and its events, listed newest first. */
  webhookEndpoint: (accountId: string, endpointId: string): ItemKey => ({ PK: `ACCOUNT#${accountId}`, SK: `WHEP#${listed(endpointId)}` }),
  webhookEndpointPrefix: (accountId: string) => ({ PK: `ACCOUNT#${accountId}`, SKPrefix: 'WHEP#' }),
  event: (accountId: string, eventId: string): ItemKey => ({ PK: `ACCOUNT#${accountId}`, SK: `EVENT#${listed(eventId)}` }),
  eventPrefix: (accountId: string) => ({ PK: `ACCOUNT#${accountId}`, SKPrefix: 'EVENT#' }),
  /** Sparse GSI2 entry of an event not yet fanned out to the endpoints: the outbox. */
  outboxEntry: (eventId: string) => ({ GSI2PK: keys.outboxShard(shardOf(eventId, WEBHOOK_SHARDS)), GSI2SK: eventId }),
  outboxShard: (shard: number): string => `OUTBOX#${shard}`,
  /** One event's delivery to one endpoint, with its attempts; listed per endpoint newest first. */
  webhookDelivery: (endpointId: string, deliveryId: string): ItemKey => ({ PK: `WHDLV#${endpointId}`, SK: `DLV#${listed(deliveryId)}` }),
  webhookDeliveryPrefix: (endpointId: string) => ({ PK: `WHDLV#${endpointId}`, SKPrefix: 'DLV#' }),
  /** Sparse GSI2 entry of a delivery whose next attempt is due at `dueAt` (ISO): the retry queue. */
  deliveryDue: (deliveryId: string, dueAt: string) => ({
    GSI2PK: keys.deliveryDueShard(shardOf(deliveryId, WEBHOOK_SHARDS)),
    GSI2SK: `${dueAt}#${deliveryId}`,
  }),
  deliveryDueShard: (shard: number): string => `WHDUE#${shard}`,
  /** When a `deliveryDue` entry is due (its GSI2SK's ISO time). */
  deliveryDueAt: (gsi2sk: string): string => gsi2sk.slice(0, gsi2sk.indexOf('#')),

  /** One message to send (shared/mail): its id is derived from (event, message type), so it is made once. */
  mail: (mailId: string): ItemKey => ({ PK: `MAIL#${mailId}`, SK: 'MAIL' }),
  /** Sparse GSI2 entry of a message whose next attempt is due at `dueAt` (ISO): the mail queue. */
  mailDue: (mailId: string, dueAt: string) => ({
    GSI2PK: keys.mailDueShard(shardOf(mailId, MAIL_SHARDS)),
    GSI2SK: `${dueAt}#${mailId}`,
  }),
  mailDueShard: (shard: number): string => `MAILDUE#${shard}`,
  /** An address mail is no longer sent to (a hard bounce or a complaint), by its lower-cased form. */
  mailSuppression: (email: string): ItemKey => ({ PK: `MAILSUPPRESS#${email.trim().toLowerCase()}`, SK: 'SUPPRESSED' }),

  /** An account's auto top-up: its rule, saved card and attempt counters (shared/payments/autotopup.ts). */
  autoTopUp: (accountId: string): ItemKey => ({ PK: `ACCOUNT#${accountId}`, SK: 'AUTOTOPUP' }),
  /** Sparse GSI2 entry on the profile while an auto top-up is due (the ledger sets it): `<dueAt>#<accountId>`. */
  autoTopUpDue: (accountId: string, dueAt: string) => ({
    GSI2PK: keys.autoTopUpDueShard(shardOf(accountId, AUTO_TOPUP_SHARDS)),
    GSI2SK: `${dueAt}#${accountId}`,
  }),
  autoTopUpDueShard: (shard: number): string => `TOPUPDUE#${shard}`,

  /** A server whose install (deploy or reinstall) is being watched until it ends (shared/servers/install-watch.ts). */
  installWatch: (accountId: string, serverId: string): ItemKey => ({ PK: `ACCOUNT#${accountId}`, SK: `INSTALL#${serverId}` }),
  /** Sparse GSI2 entry of a watched install whose next check is due at `dueAt` (ISO): `<dueAt>#<serverId>`. */
  installWatchDue: (serverId: string, dueAt: string) => ({
    GSI2PK: keys.installWatchDueShard(shardOf(serverId, INSTALL_WATCH_SHARDS)),
    GSI2SK: `${dueAt}#${serverId}`,
  }),
  installWatchDueShard: (shard: number): string => `INSTALLDUE#${shard}`,

  /**
   * Shared access (shared/servers/shares.ts): a server's share per invited e-mail (lower case) and
   * their count under `SHARES#<serverId>`; the invitee's pointer to it under the e-mail, so the
   * invitee's list and an invitation to an e-mail without an account yet read the same way.
   */
  serverShare: (serverId: string, email: string): ItemKey => ({ PK: `SHARES#${serverId}`, SK: `EMAIL#${email.toLowerCase()}` }),
  serverSharePrefix: (serverId: string) => ({ PK: `SHARES#${serverId}`, SKPrefix: 'EMAIL#' }),
  serverShareCount: (serverId: string): ItemKey => ({ PK: `SHARES#${serverId}`, SK: 'COUNT' }),
  sharedWith: (email: string, serverId: string): ItemKey => ({ PK: `SHAREDWITH#${email.toLowerCase()}`, SK: `SERVER#${serverId}` }),
  sharedWithPrefix: (email: string) => ({ PK: `SHAREDWITH#${email.toLowerCase()}`, SKPrefix: 'SERVER#' }),
  /**
   * A subdomain of the DNS zone, claimed by one server (shared/servers/subdomain.ts): written in the
   * same transaction as the server's `subdomain`, under `attribute_not_exists`, so a name is unique per zone.
   */
  subdomainClaim: (zone: string, name: string): ItemKey => ({ PK: `SUBDOMAIN#${zone}#${name}`, SK: 'CLAIM' }),
  /** The records of a subdomain as the local DNS provider publishes them (shared/dns/local.ts; read by dev/local-dns.ts). */
  localDnsRecords: (zone: string, name: string): ItemKey => ({ PK: `SUBDOMAIN#${zone}#${name}`, SK: 'RECORDS' }),

  settings: (): ItemKey => ({ PK: 'SETTINGS', SK: 'PLATFORM' }),
  instancesPartition: (): string => 'INSTANCES',
  instance: (instanceId: string): ItemKey => ({ PK: 'INSTANCES', SK: `INSTANCE#${instanceId}` }),
  instancePrefix: () => ({ PK: 'INSTANCES', SKPrefix: 'INSTANCE#' }),
  /**
   * One node of a registered panel, by the node's uuid (shared/instances/identity.ts): written with
   * the instance that claims it, so one panel is registered once however its URL is spelled.
   */
  panelNodeClaim: (nodeUuid: string): ItemKey => ({ PK: 'INSTANCES', SK: `PANELNODE#${nodeUuid.toLowerCase()}` }),
  /** A panel server the reconciler found without a record, held for an admin to confirm its removal. */
  heldOrphan: (instanceId: string, panelServerId: number): ItemKey => ({ PK: 'INSTANCES', SK: `ORPHAN#${instanceId}#${panelServerId}` }),
  heldOrphanPrefix: () => ({ PK: 'INSTANCES', SKPrefix: 'ORPHAN#' }),

  /**
   * The storefront (shared/plans): admin-defined plans and the looks of regions and eggs, in one
   * small partition so the catalog reads all of it with one Query.
   */
  storefrontPartition: (): string => 'STOREFRONT',
  plan: (planId: string): ItemKey => ({ PK: 'STOREFRONT', SK: `PLAN#${planId}` }),
  regionLook: (region: string): ItemKey => ({ PK: 'STOREFRONT', SK: `REGION#${region}` }),
  eggLook: (instanceId: string, eggId: number): ItemKey => ({ PK: 'STOREFRONT', SK: `EGG#${instanceId}#${eggId}` }),
};
