import type { ServerPermission } from '../api/server-permissions.ts';
/**
 * The stored item kinds, one type each (ARCHITECTURE.md, "The table"). Every item the service
 * writes carries `kind`; access patterns (access-patterns.ts) check it once where an item is read
 * and hand out the typed item, so domain code reads fields, not `item.x as T` casts.
 */
import type { Scope } from '../api/scopes.ts';
import type { PrintedBrand } from '../brand/printed.ts';
import type { PowerState } from '../panel/types.ts';
import type { SettingsValue } from '../api/schemas/settings.ts';
import type { PlanPrice } from '../pricing/index.ts';

export type Item = Record<string, unknown>;

interface Stored {
  PK: string;
  SK: string;
}

export type ServerStatus = 'active' | 'suspended' | 'deleted';

export interface AccountItem extends Stored {
  kind: 'account';
  accountId: string;
  email: string;
  issuer: string;
  subject: string;
  balanceCents: number;
  ledgerSeq: number;
  trialGranted: boolean;
  /** Active and suspended servers (moved with every server change, shared/servers/records.ts). */
  serverCount?: number;
  /** Sum of the active servers' prices, rounded up to whole cents: for display only. */
  burnCentsPerHour?: number;
  /** Sum of the active servers' exact hourly prices (shared/servers/records.ts); runway and budgets use it. */
  burnMillicentsPerHour?: number;
  /** What the hourly charges have not yet charged because it is less than a cent (0–999). */
  accruedMillicents?: number;
  budgetCapCents?: number | null;
  budgetAction?: 'refuse' | 'suspend';
  lowBalanceWarnedAt?: string;
  /** The account's balance.low threshold, replacing the platform setting (shared/ledger lowBalanceStep). */
  lowBalanceThresholdCents?: number;
  /** balance.low was recorded and the balance has not been back at or above the threshold since. */
  balanceLowFired?: boolean;
  /** When the balance was first seen at or below zero with servers running: the suspension grace counts from it (shared/servers/suspension.ts); a credit that lifts the balance above zero removes it. */
  graceStartedAt?: string;
  /** The smallest runway-warning horizon sent since the time left was last above it (shared/billing/runway-warnings.ts). */
  runwayWarnedHours?: number;
  /** The account's SFTP panel user by instance id (shared/servers/sftp.ts): there it has a password and is a subuser of the account's servers. */
  sftpUsers?: Record<string, number>;
  /** Webhook endpoints the account has (shared/webhooks/endpoints.ts): the limit of 10 is a condition on it. */
  webhookEndpointCount?: number;
  /** API keys not revoked (shared/api-keys): the key limit is a condition on it. Absent until the first create after it was introduced. */
  apiKeyCount?: number;
  /** Limits an admin set for this account (shared/settings/limits.ts); each replaces the platform setting. */
  limits?: { maxApiKeys?: number; requestsPerMinute?: number; maxServers?: number };
  /** When a top-up or admin grant was first seen: the account is no longer a trial account. */
  paidAt?: string;
  createdAt: string;
  /** The armed auto top-up's threshold (shared/payments/autotopup.ts): present only while the rule is enabled. */
  autoTopUpBelowCents?: number;
  /** A debit left the balance below autoTopUpBelowCents (the ledger sets it with GSI2 TOPUPDUE#<n>); the loop takes it. */
  autoTopUpDue?: string;
  GSI2PK?: string;
  GSI2SK?: string;
  /** Only on accounts created before the listing entry (AccountListingItem): their admin-listing keys, until moved. */
  GSI1PK?: string;
  GSI1SK?: string;
}

/**
 * The account's row in the admin listing (GSI1 `ACCOUNTS#<n>`, shared/accounts/listing.ts): what the
 * listing sorts and filters on, never changed after the account is created. The listing reads the
 * profiles of a page's rows from the table. Accounts created before it existed carry the GSI1 keys
 * on the profile itself until the billing pass moves them here.
 */
export interface AccountListingItem extends Stored {
  kind: 'account-listing';
  accountId: string;
  email: string;
  createdAt: string;
  GSI1PK: string;
  GSI1SK: string;
}

/** The message types an account turned off (shared/mail/preferences.ts); no item: every type on. */
export interface MailPreferencesItem extends Stored {
  kind: 'mail-preferences';
  accountId: string;
  /** Optional message types turned off (a string set: one-click unsubscribes add to it atomically); absent when none. */
  off?: Set<string>;
  updatedAt: string;
}

/**
 * An e-mail change waiting for (or done by) its confirmation (shared/accounts/email-change.ts).
 * The token is never stored: `tokenHash` is what a confirmation is compared with; `nonce` lets the
 * mail sender derive the token again with the service's key for the confirmation message.
 */
export interface EmailChangeItem extends Stored {
  kind: 'email-change';
  accountId: string;
  /** Names this request in its events (data of account.email_change_requested); not a secret. */
  requestId: string;
  email: string;
  previousEmail: string;
  nonce: string;
  tokenHash: string;
  requestedAt: string;
  /** The token works until then (24 h after the request). */
  tokenExpiresAt: string;
  confirmedAt?: string;
  /** DynamoDB TTL (epoch seconds): the item goes a while after the token expired. */
  expiresAt: number;
}

/** The account's billing profile (shared/accounts/billing-profile.ts): printed as the buyer on invoice PDFs. */
export interface BillingProfileItem extends Stored {
  kind: 'billing-profile';
  accountId: string;
  /** As PUT /v1/account/billing-profile validated it (BillingProfile in shared/api/schemas/billing-profile.ts). */
  profile: {
    name: string | null;
    company: string | null;
    address: Record<'line1' | 'line2' | 'postalCode' | 'city' | 'region' | 'country', string | null>;
    vatId: string | null;
  };
  /** VIES's answer for `vatId` (shared/accounts/vies.ts); valid null: VIES could not say. Absent: never checked. */
  vatCheck?: { vatId: string; valid: boolean | null; checkedAt: string };
  updatedAt: string;
}

export interface SubjectItem extends Stored {
  kind: 'subject';
  accountId: string;
  email: string;
}

export interface ServerItem extends Stored {
  kind: 'server';
  serverId: string;
  accountId: string;
  instanceId: string;
  panelServerId: number;
  identifier: string;
  uuid: string;
  name: string;
  eggId: number;
  nestId: number;
  nodeId: number;
  allocationId: number;
  /** Where players connect (the primary allocation at deploy); absent on servers recorded before it was kept. */
  address?: ServerAddress;
  /** Where Wings' SFTP listens (the node's FQDN and SFTP port at deploy); absent on servers recorded before it was kept. */
  sftp?: { host: string; port: number };
  /**
   * Every allocation of the server on its panel, the primary (`allocationId`, `address`) among them,
   * as last changed through us (shared/servers/network.ts); absent: only the deploy's primary.
   */
  allocations?: ServerAllocation[];
  /** When the account's SFTP panel user became a subuser of this server (shared/servers/sftp.ts); absent: not yet. */
  sftpGrantedAt?: string;
  region: string | null;
  dockerImage: string;
  resources: { ramMb: number; cpuPercent: number; diskMb: number };
  /** The exact price rounded up to whole cents, for display. */
  priceCentsPerHour: number;
  /** The exact hourly price charged; absent on servers recorded before it existed (then cents × 1000). */
  priceMillicentsPerHour?: number;
  /** When the server was active and at which price: what billing charges from. */
  history: { at: string; status: ServerStatus; priceCentsPerHour: number; priceMillicentsPerHour?: number }[];
  status: ServerStatus;
  createdAt: string;
  updatedAt: string;
  suspendedAt?: string;
  suspendedReason?: 'balance' | 'budget' | 'admin';
  deletedAt?: string;
  deletedReason?: string;
  billedThrough?: string;
  /** The caller's labels (shared/labels.ts); absent on servers recorded before labels existed (shown as `{}`). */
  labels?: Record<string, string>;
  /** The panel ids of the server's schedules (shared/servers/schedules.ts), for the `schedulesPerServer` limit; absent: none made yet. */
  scheduleIds?: number[];
  /** Extras bought beyond what the settings include (shared/servers/addons.ts); absent: none. */
  addons?: { backups: number; databases: number; ports: number };
  /** The server's name under the DNS zone (shared/servers/subdomain.ts); absent: none. */
  subdomain?: ServerSubdomain;
  /** The plan it was deployed on (shared/plans); absent: a custom size (or resized off its plan). */
  planId?: string;
  /**
   * The plan's set hourly price and the add-ons it covers, as at the deploy (a later change of the
   * plan does not reach the server): add-on changes and a resize that keeps the plan's resources
   * are priced from it (shared/pricing priceWithAddons). Absent: priced from its resources.
   */
  planPrice?: PlanPrice;
}

/**
 * A server's subdomain: the claimed name, its records as last published (`records`) and whether
 * the DNS provider has them (`status`: `pending` until the provider confirmed, `failed` when it
 * refused or did not answer; the pending-repair pass publishes again, reason `dns`).
 */
export interface ServerSubdomain {
  name: string;
  zone: string;
  fqdn: string;
  /** The SRV service (`_minecraft._tcp`) when the game has one (shared/dns/names.ts srvServiceOf). */
  srvService?: string;
  status: 'pending' | 'active' | 'failed';
  /** What the provider was last asked to hold, so a change can remove what is no longer right. */
  published?: DnsRecordValues;
}

/** The values of one subdomain's records: an address (A or AAAA by its form) and, with an SRV service, the port. */
export interface DnsRecordValues {
  ip: string;
  port: number;
  srvService?: string;
}

/** A name a server gave up (renamed, cleared, deleted), with the records last published under it. */
export interface RetiredSubdomain {
  zone: string;
  name: string;
  values: DnsRecordValues | null;
}

/** A subdomain claimed by one server (keys.subdomainClaim): what makes a name unique in its zone. */
export interface SubdomainClaimItem extends Stored {
  kind: 'subdomain-claim';
  zone: string;
  name: string;
  accountId: string;
  serverId: string;
  claimedAt: string;
}

/** The local DNS provider's records of one name (keys.localDnsRecords), which dev/local-dns.ts answers. */
export interface LocalDnsRecordsItem extends Stored {
  kind: 'local-dns-records';
  zone: string;
  name: string;
  values: DnsRecordValues;
  updatedAt: string;
}

/** The primary allocation of a server: `host` is what a player types (the alias, else the node's FQDN, else the IP). */
export interface ServerAddress {
  host: string;
  ip: string;
  alias: string | null;
  port: number;
}

/** One allocation (port) of a server: its panel id, where players reach it, and the owner's note. */
export interface ServerAllocation extends ServerAddress {
  id: number;
  notes: string | null;
}

/** What the panel said about a server (install, power, suspension, usage). */
export interface PanelLiveAnswer {
  installStatus: 'installing' | 'installed' | 'install_failed';
  powerState: PowerState | null;
  suspendedOnPanel: boolean;
  resources: {
    memoryBytes: number;
    cpuAbsolute: number;
    diskBytes: number;
    networkRxBytes: number;
    networkTxBytes: number;
    uptimeMs: number;
  } | null;
}

/** Why the last refresh of a live state failed (shared/servers/live.ts). */
export type LiveRefreshFailure = 'panel_busy' | 'panel_unreachable' | 'panel_error';

/** A server's live state cached for every process, and who may ask the panel next (shared/servers/live.ts). */
export interface LiveStateItem extends Stored {
  kind: 'live-state';
  serverId: string;
  /** The panel's last answer and when it gave it; both absent until a refresh succeeded. */
  answer?: PanelLiveAnswer;
  asOf?: string;
  /** Epoch ms before which nobody else asks the panel: a refresh in flight, or one that failed backing off. */
  refreshingUntil?: number;
  /** The refresh that holds the lease; its answer is stored only while it still does. */
  leaseId?: string;
  /** Set when the last refresh failed; cleared by the next that succeeds. */
  failedReason?: LiveRefreshFailure;
  /** The usage-sample bucket already written (shared/servers/usage-history.ts): later refreshes in it write none. */
  sampledBucket?: string;
  expiresAt: number;
}

/**
 * One usage sample (shared/servers/usage-history.ts): short attribute names keep the item near
 * 100 bytes, one write unit. Network counters are the panel's cumulative bytes.
 */
export interface UsageSampleItem extends Stored {
  kind: 'usage-sample';
  /** When the panel gave the sample (ISO). */
  at: string;
  cpu: number;
  mem: number;
  disk: number;
  rx: number;
  tx: number;
  expiresAt: number;
}

export interface ServerPointerItem extends Stored {
  kind: 'server-pointer';
  accountId: string;
}

export interface InstanceLastTestRecord {
  at: string;
  ok: boolean;
  clientKey: 'ok' | 'refused' | 'missing' | 'unreachable' | 'error';
  message: string;
}

export interface InstanceItem extends Stored {
  kind: 'instance';
  instanceId: string;
  name: string;
  baseUrl: string;
  /** Which panel software it is, detected from its routes (shared/panel/detect.ts); absent means Pterodactyl. */
  panelKind?: 'pterodactyl' | 'pelican';
  /** The Origin its Wings accept on the console websocket (their `remote`); absent means `baseUrl`. */
  wingsOrigin?: string;
  priority: number;
  enabled?: boolean;
  hasClientKey: boolean;
  serviceUserId?: number;
  /** The last instance test with the current keys (shared/instances); removed when the keys or the URL change. */
  lastTest?: InstanceLastTestRecord;
  serverCount?: number;
  /** The panel's own request limits (shared/instances/call-budget.ts); absent means the panel's defaults. */
  panelRateLimits?: { applicationPerMinute: number; clientPerMinute: number };
  /** The uuids of the panel's nodes this instance claims (`panel-node-claim` items); absent until read. */
  panelNodeUuids?: string[];
  /** Another instance claims this panel's nodes: the same panel registered twice (found by the reconciler). */
  duplicateOf?: string;
  /** Whether the panel's last database create found a database host (shared/servers/databases.ts); absent before any. */
  databaseHost?: { available: boolean; at: string };
  createdAt: string;
  updatedAt: string;
}

/** One node of a registered panel and the instance that registered it (shared/instances/identity.ts). */
export interface PanelNodeClaimItem extends Stored {
  kind: 'panel-node-claim';
  nodeUuid: string;
  instanceId: string;
  claimedAt: string;
}

/** A panel server without a live record, held until an admin confirms its removal (shared/servers/orphans.ts). */
export interface HeldOrphanItem extends Stored {
  kind: 'held-orphan';
  instanceId: string;
  panelServerId: number;
  /** The panel server's external id: a server id of ours that no live record holds. */
  serverId: string;
  name: string;
  panelCreatedAt: string;
  heldAt: string;
}

export interface LedgerItem extends Stored {
  kind: 'ledger';
  accountId: string;
  seq: number;
  type: 'trial' | 'topup' | 'bonus' | 'grant' | 'deduction' | 'charge' | 'refund' | 'dispute';
  amountCents: number;
  balanceAfterCents: number;
  granted: boolean;
  idempotencyKey: string;
  reference?: {
    serverId?: string;
    invoiceId?: string;
    invoiceNumber?: string;
    note?: string;
    hour?: string;
    /** Hourly charges: what each server cost in that hour (exact; entries before exact pricing carry `cents`). */
    lines?: { serverId: string; millicents?: number; cents?: number }[];
    /** Hourly charges: what was below a cent before and after this entry. */
    accruedBeforeMillicents?: number;
    accruedAfterMillicents?: number;
    /** Credits landing on a negative balance: the part of this entry that paid the debt off (shared/ledger). */
    settlesDebtCents?: number;
  };
  actorId?: string;
  at: string;
}

export interface LedgerGuardItem extends Stored {
  kind: 'ledger-guard';
  accountId: string;
  seq: number;
}

export interface InvoiceItem extends Stored {
  kind: 'invoice';
  invoiceId: string;
  accountId: string;
  number: string;
  status: 'open' | 'paid' | 'void' | 'refunded' | 'partially_refunded' | 'disputed';
  /** The credit bought (net of tax): what the top-up line credits to the balance. */
  amountCents: number;
  /** ISO 4217, lower case, copied from the deployment's currency when the invoice opens; absent on invoices of before: 'usd'. */
  currency?: string;
  /** Tax charged on top of `amountCents` (shared/invoices/amounts.ts); absent: none. The card pays the sum. */
  taxCents?: number;
  bonusPercent: number;
  /** The tax line (type `tax`, its amount `taxCents`) is charged to the card and credits nothing. */
  lineItems: { type: 'topup' | 'bonus' | 'tax'; description: string; amountCents: number }[];
  /** How the top-up was taxed (shared/invoices/tax.ts), fixed when it opened; absent on invoices of before: none, no reason. */
  tax?: InvoiceTax;
  /** Stripe Tax on an auto top-up: the Tax Calculation its tax came from (shared/payments/stripe-tax.ts). */
  taxCalculationId?: string;
  /** ... and the Tax Transaction recorded from it once the payment was booked. */
  taxTransactionId?: string;
  provider: 'stripe' | 'sandbox';
  creditedCents?: number;
  sessionId?: string;
  /** Sandbox checkouts only: where the sandbox page returns to (Stripe keeps these on its session). */
  successUrl?: string;
  cancelUrl?: string;
  paymentIntentId?: string | null;
  createdAt: string;
  paidAt?: string;
  /**
   * The seller and the buyer as they were when the payment was booked (shared/invoices/parties.ts):
   * the paid invoice's document prints these. Absent on invoices paid before copies were kept.
   */
  parties?: {
    seller: {
      legalName: string | null;
      address: Record<'line1' | 'line2' | 'postalCode' | 'city' | 'region' | 'country', string | null>;
      taxId: string | null;
      email: string | null;
      footer: string | null;
    };
    buyer: BillingProfileItem['profile'] & { email: string | null };
    /** The operator's brand as printed (shared/brand/printed.ts); absent on copies kept before brands. */
    brand?: PrintedBrand;
    copiedAt: string;
  };
  voidedAt?: string;
  voidReason?: string;
  /** Refunds and disputes of the paid invoice (shared/payments/refunds.ts); `reversalRev` is their optimistic lock. */
  /** What refunds took back, net of refunds that failed since (derived from the next two, kept for reading). */
  refundedCents?: number;
  /** The charge's latest `amount_refunded` and when Stripe stated it (event `created`, s; null: booked before this was kept). */
  refundTotal?: { cents: number; at: number | null };
  /** Refunds that failed or were canceled: their money came back (times in seconds). */
  failedRefunds?: { id: string; amountCents: number; createdAt: number; failedAt: number }[];
  /** The charge's one dispute: `open` and `lost` hold its money back; `won` returned it; `prevented` never took it. */
  disputes?: { id: string; amountCents: number; status: 'open' | 'won' | 'lost' | 'prevented' }[];
  bonusReversedCents?: number;
  reversalRev?: number;
  /** Paid credit an admin deducted against this invoice (net), each deduction with its credit note (shared/credit-notes/deductions.ts). */
  deductedCents?: number;
  /** The credit notes issued against this invoice, oldest first (written with each note, shared/credit-notes). */
  creditNotes?: { id: string; number: string; type: CreditNoteItem['type'] }[];
}

/**
 * A credit note (shared/credit-notes): what a refund, a lost dispute or an admin deduction took
 * back of a paid invoice, or (`reversal`) what a won dispute or a failed refund gave back of an
 * earlier note. Amounts are never negative; the type says which way they go. Seller and buyer are
 * copied when it is issued, so the document never changes.
 */
export interface CreditNoteItem extends Stored {
  kind: 'credit-note';
  creditNoteId: string;
  accountId: string;
  number: string;
  type: 'credit_note' | 'reversal';
  reason: 'refund' | 'dispute_lost' | 'admin_deduction' | 'dispute_won' | 'refund_failed';
  invoiceId: string;
  invoiceNumber: string;
  /** A reversal: the invoice's latest credit note it answers. */
  reverses?: { id: string; number: string };
  currency: string;
  lineItems: { type: 'topup' | 'bonus'; description: string; amountCents: number; returnedCents: number; debitedCents: number }[];
  netCents: number;
  taxCents: number;
  /** Net plus tax: the money returned (or, for a reversal, taken again). */
  totalCents: number;
  /** Credit taken off the balance (net plus the bonus share); given back by a reversal. */
  debitedCents: number;
  issuedAt: string;
  seller: SettingsValue['invoiceIssuer'];
  buyer: BillingProfileItem['profile'] & { email: string | null };
  /** The operator's brand as printed, copied when the note was made (absent on notes made before brands). */
  brand?: PrintedBrand;
}

export interface CreditNotePointerItem extends Stored {
  kind: 'credit-note-id';
  accountId: string;
  number: string;
}

/** An invoice's tax as decided when it opened (shared/invoices/tax.ts); Stripe Tax states its figure at payment. */
export interface InvoiceTax {
  treatment: 'none' | 'rates' | 'stripe';
  /** The buyer accounts for the tax (an EU business with a valid VAT id in another EU country): 0 charged. */
  reverseCharge: boolean;
  /** The country whose rate applied (ISO 3166-1 alpha-2); null: none. */
  country: string | null;
  rateBasisPoints: number;
  /** The tax's name on the invoice (VAT, GST, …). */
  label: string;
  /** Printed when no tax is charged: the operator's reason, or the reverse-charge statement. */
  reason: string | null;
}

export interface InvoicePointerItem extends Stored {
  kind: 'invoice-pointer';
  accountId: string;
  number: string;
}

/** A paid invoice's Stripe PaymentIntent → the invoice (written when it is paid). */
export interface PaymentIntentPointerItem extends Stored {
  kind: 'payment-intent';
  invoiceId: string;
  accountId: string;
}

export interface ApiKeyItem extends Stored {
  kind: 'api-key';
  keyId: string;
  accountId: string;
  name: string;
  prefix: string;
  last4: string;
  scopes: Scope[];
  hash: string;
  createdAt: string;
  expiresAt?: string;
  lastUsedAt?: string;
  revokedAt?: string;
  /** The caller's labels (shared/labels.ts), set at creation; absent on keys made before labels existed. */
  labels?: Record<string, string>;
}

/** The lookup item read on every API-key request: carries what authentication needs. */
export interface ApiKeyHashItem extends Stored {
  kind: 'api-key-hash';
  keyId: string;
  accountId: string;
  email: string;
  scopes: Scope[];
  expiresAt?: string;
  lastUsedAt?: string;
  revokedAt?: string;
}

export interface IdempotencyItem extends Stored {
  kind: 'idempotency';
  fingerprint: string;
  state: 'in_progress' | 'done';
  lockedUntil?: number;
  expiresAt: number;
  response?: { statusCode: number; body: unknown };
}

export interface SettingsItem extends Stored {
  kind: 'settings';
  value: Record<string, unknown>;
  version: number;
  updatedAt: string;
  updatedBy: string;
}

/** An admin-defined plan (shared/plans): the storefront's offer, checked against a deploy that names it. */
export interface PlanItem extends Stored {
  kind: 'plan';
  planId: string;
  name: string;
  description: string;
  pictureUrl: string | null;
  category: string;
  resources: { ramMb: number; cpuPercent: number; diskMb: number };
  addons: { backups: number; databases: number; ports: number };
  eggIds: number[];
  /** A set hourly price; null: derived from the resources and add-ons at the settings' prices. */
  setPriceMillicentsPerHour: number | null;
  visible: boolean;
  createdAt: string;
  updatedAt: string;
}

/** How the storefront names a region (panel location `short`) or shows an egg (shared/plans). */
export interface RegionLookItem extends Stored {
  kind: 'region-look';
  region: string;
  displayName: string | null;
  city: string | null;
  country: string | null;
}

export interface EggLookItem extends Stored {
  kind: 'egg-look';
  instanceId: string;
  eggId: number;
  pictureUrl: string | null;
  category: string | null;
}

export interface MonthSpendItem extends Stored {
  kind: 'month-spend';
  cents: number;
}

export interface ActivityItem extends Stored {
  kind: 'activity';
  expiresAt?: number;
  [field: string]: unknown;
}

/** Counters and cursors written without a kind: the invoice and credit-note counters and the billing watermark. */
export interface InvoiceCounterItem extends Stored {
  last: number;
}

/**
 * A panel's call-budget window (shared/instances/call-budget.ts): the newest bucket `cur`, the trailing
 * `total`, per-bucket counts `s0`…`s31`, a 429's pause, and the limit the panel's headers announce.
 */
export interface PanelCallBudgetItem extends Stored {
  cur?: number;
  total?: number;
  pausedUntil?: number;
  panelLimit?: number;
  [slot: `s${number}`]: number | undefined;
}

export interface WatermarkItem extends Stored {
  lastCompletedHour?: string;
}

/** The Stripe event reconciliation (shared/payments/reconcile-events.ts): where the next listing starts, and the last run's claim. */
export interface StripeEventsCursorItem extends Stored {
  /** Stripe `created` (epoch seconds): every listed event older than it was booked. */
  createdFrom?: number;
  /** Epoch ms the last run claimed the item: runs are RECONCILE_EVERY_MS apart. */
  runAt?: number;
}

/** What every shared copy of a panel read carries (shared/catalog/shared-copy.ts). */
interface PanelCopy extends Stored {
  instanceId: string;
  /** The panel the copy was read from: a copy of another URL counts as no copy. */
  baseUrl: string;
  /** Epoch ms of the panel read. */
  readAt: number;
  /** Epoch ms after which one reader refreshes it; the others keep using it meanwhile. */
  freshUntil: number;
  /** The refresh lease: epoch ms until which one reader is asking the panel. */
  refreshingUntil?: number;
  expiresAt: number;
}

export interface CachedLocation {
  id: number;
  /** Our region tag. */
  short: string;
  long: string | null;
}

/** One node with the figures placement reads; `allocated*` as the panel counted them at the read. */
export interface CachedNode {
  id: number;
  name: string;
  locationId: number;
  /** Absent in copies read before it was kept. */
  fqdn?: string;
  /** Wings' SFTP port (`daemon_sftp`); absent in copies read before it was kept. */
  sftpPort?: number;
  public: boolean;
  maintenance: boolean;
  memory: number;
  memoryOverallocate: number;
  disk: number;
  diskOverallocate: number;
  allocatedMemory: number;
  allocatedDisk: number;
  /** Pelican only (its `Node::isViable` counts CPU): percent capacity, overallocation, allocated at the read. */
  cpu?: number;
  cpuOverallocate?: number;
  allocatedCpu?: number;
}

/** Where an allocation is reached, as the panel listed it (the application API's `alias` is the allocation's `ip_alias`). */
export interface CachedAllocationAddress {
  ip: string;
  alias: string | null;
  port: number;
}

/** An allocation a deploy took from the copy; kept across a refresh while its create was in flight at the panel read. */
export interface AllocationClaim {
  nodeId: number;
  memoryMb: number;
  diskMb: number;
  at: number;
  /** When the panel answered the create: a read before it cannot have counted the server. */
  createdAt?: number;
}

export interface PanelTopologyItem extends PanelCopy {
  kind: 'panel-topology';
  locations: CachedLocation[];
  nodes: CachedNode[];
  /** Free allocation ids by node id, as number sets (a claim removes one with DELETE); no entry: none left in the copy. */
  freeAllocations: Record<string, Set<number>>;
  /** Where each listed free allocation is reached, by node id then allocation id; written with the node's free set. Absent in copies read before it was kept. */
  allocationAddresses?: Record<string, Record<string, CachedAllocationAddress>>;
  /** Nodes the panel listed no free allocation for: not asked again before the next read. */
  exhaustedNodes?: Set<number>;
  /** Memory and disk our deploys placed on each node since the read (ADD counters), by node id. */
  addedMemoryMb: Record<string, number>;
  addedDiskMb: Record<string, number>;
  /** By allocation id. */
  claims: Record<string, AllocationClaim>;
  /** Epoch ms each node's free set was read from the panel, by node id. */
  allocationsReadAt: Record<string, number>;
  /** When the panel last refused an allocation the copy offered: sets read before it are read again before use. */
  doubtedAt?: number;
  /** Moved by every write after the read, so a refill or refresh never overwrites a claim it did not see. */
  version: number;
}

export interface CachedEggVariable {
  id: number;
  name: string;
  description: string;
  env: string;
  defaultValue: string | null;
  userViewable: boolean;
  userEditable: boolean;
  /** Laravel validation rules, one a rule (a copy written before panels were told apart holds Pterodactyl's one string). */
  rules: string[] | string;
}

export interface CachedEgg {
  id: number;
  uuid: string;
  name: string;
  description: string | null;
  nestId: number;
  nestName: string;
  dockerImage: string;
  dockerImages: Record<string, string>;
  startup: string;
  variables: CachedEggVariable[];
}

export interface PanelEggsItem extends PanelCopy {
  kind: 'panel-eggs';
  eggs: CachedEgg[];
}

interface Kinds {
  account: AccountItem;
  'account-listing': AccountListingItem;
  subject: SubjectItem;
  'billing-profile': BillingProfileItem;
  server: ServerItem;
  'server-pointer': ServerPointerItem;
  'live-state': LiveStateItem;
  'usage-sample': UsageSampleItem;
  instance: InstanceItem;
  'panel-node-claim': PanelNodeClaimItem;
  'held-orphan': HeldOrphanItem;
  ledger: LedgerItem;
  'ledger-guard': LedgerGuardItem;
  invoice: InvoiceItem;
  'invoice-pointer': InvoicePointerItem;
  'payment-intent': PaymentIntentPointerItem;
  'credit-note': CreditNoteItem;
  'credit-note-id': CreditNotePointerItem;
  'api-key': ApiKeyItem;
  'api-key-hash': ApiKeyHashItem;
  idempotency: IdempotencyItem;
  settings: SettingsItem;
  plan: PlanItem;
  'region-look': RegionLookItem;
  'egg-look': EggLookItem;
  'month-spend': MonthSpendItem;
  activity: ActivityItem;
  'panel-topology': PanelTopologyItem;
  'panel-eggs': PanelEggsItem;
  webhookEndpoint: WebhookEndpointItem;
  event: EventItem;
  webhookDelivery: WebhookDeliveryItem;
  mail: MailItem;
  'mail-suppression': MailSuppressionItem;
  'mail-preferences': MailPreferencesItem;
  'email-change': EmailChangeItem;
  'server-repair': ServerRepairItem;
  'auto-topup': AutoTopUpItem;
  'install-watch': InstallWatchItem;
  'server-share': ServerShareItem;
  'shared-with': SharedWithItem;
  'subdomain-claim': SubdomainClaimItem;
  'local-dns-records': LocalDnsRecordsItem;
}
export type ItemKind = keyof Kinds;

/** Reads a stored item as its kind, once: an item of another kind here is corrupt data, not a 404. */
export function asKind<K extends ItemKind>(item: Item, kind: K): Kinds[K] {
  if (item.kind !== kind) throw new Error(`Expected a ${kind} item at ${String(item.PK)}/${String(item.SK)}, found ${String(item.kind)}`);
  return item as unknown as Kinds[K];
}

export const asKindOrUndefined = <K extends ItemKind>(item: Item | undefined, kind: K): Kinds[K] | undefined =>
  item === undefined ? undefined : asKind(item, kind);

/** An account's outbound webhook endpoint (shared/webhooks/endpoints.ts). */
export interface WebhookEndpointItem extends Stored {
  kind: 'webhookEndpoint';
  endpointId: string;
  accountId: string;
  url: string;
  /** Event types sent to it; empty: every type. */
  events: string[];
  /** The event-reading scopes of the credential that last set its url or events; absent on endpoints made before they were recorded (every type). */
  scopes?: string[];
  description: string | null;
  enabled: boolean;
  /** Why it was disabled, when the service disabled it (`failing`); null when enabled or disabled by the account. */
  disabledReason: string | null;
  /** Signing secrets (`whsec_…`): the current one, and the previous one until it expires after a rotation. */
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: string | null;
  /** When deliveries to it started failing without a success since; null while healthy. */
  failingSince: string | null;
  /** The caller's labels (shared/labels.ts); absent on endpoints made before labels existed. */
  labels?: Record<string, string>;
  createdAt: string;
  updatedAt: string;
}

/** One event of an account, written in the same transaction as the change it reports (the outbox). */
export interface EventItem extends Stored {
  kind: 'event';
  eventId: string;
  accountId: string;
  type: string;
  data: Record<string, unknown>;
  createdAt: string;
  /** TTL (epoch seconds): events are kept 30 days. */
  expiresAt: number;
  /** Present (sparse GSI2 OUTBOX#<n>) until the event has been fanned out to the endpoints. */
  GSI2PK?: string;
  GSI2SK?: string;
}

/** One event's delivery to one endpoint, with every attempt. */
export interface WebhookDeliveryItem extends Stored {
  kind: 'webhookDelivery';
  deliveryId: string;
  endpointId: string;
  accountId: string;
  eventId: string;
  eventType: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: { at: string; status: number | null; durationMs: number; error: string | null; responseExcerpt: string | null }[];
  nextAttemptAt: string | null;
  createdAt: string;
  updatedAt: string;
  /** TTL (epoch seconds): kept 30 days like the events. */
  expiresAt: number;
  /** Present (sparse GSI2 WHDUE#<n>) while an attempt is due. */
  GSI2PK?: string;
  GSI2SK?: string;
}

/** Why a server is in the pending-repair queue: its suspension state, or its panel build (or existence) against the record. */
/** `sftp`: the account's SFTP panel user is still to be made a subuser of a new server (shared/servers/sftp.ts). */
export type RepairReason = 'suspension' | 'panel' | 'sftp' | 'dns';

/** A server whose panel and record may disagree, until the pending-repair pass sees them agree (shared/servers/pending.ts). */
export interface ServerRepairItem extends Stored {
  kind: 'server-repair';
  serverId: string;
  accountId: string;
  reasons: Set<RepairReason>;
  /** Moved by every queueing: the pass removes the item only if nobody queued it again meanwhile. */
  version: number;
  attempts: number;
  queuedAt: string;
  /** The last failure's error code or name (never a message that could carry a panel's text). */
  lastError?: string;
  /** Reason `dns`: names the server gave up whose records are still to be removed, then their claims released (shared/servers/subdomain.ts). */
  dnsRetire?: RetiredSubdomain[];
  /** Present (sparse GSI2 REPAIRDUE#<n>) while the item waits: `<dueAt>#<serverId>`. */
  GSI2PK?: string;
  GSI2SK?: string;
}

/** What started the install a watch follows: the deploy's create, or a reinstall. */
export type InstallKind = 'deploy' | 'reinstall';

/** A server still installing, checked by the every-minute install watch until the install ends (shared/servers/install-watch.ts). */
export interface InstallWatchItem extends Stored {
  kind: 'install-watch';
  accountId: string;
  serverId: string;
  instanceId: string;
  /** The panel's server uuid: the watch asks for its servers by uuid, many in one listing call. */
  uuid: string;
  installKind: InstallKind;
  /** When the install began (ISO); also what an ending write is conditional on, so one arming raises one event. */
  startedAt: string;
  /** The watch's limit (ISO): still installing after it, the install is reported failed (`timeout`). */
  until: string;
  /** Checks made so far. */
  checks: number;
  /** TTL: a day after `until`, for a watch no pass ended. */
  expiresAt: number;
  /** Present (sparse GSI2 INSTALLDUE#<n>) while the watch runs: `<dueAt>#<serverId>`. */
  GSI2PK?: string;
  GSI2SK?: string;
}

/** An account's auto top-up (shared/payments/autotopup.ts): the rule, the saved card, and the attempts. */
export interface AutoTopUpItem extends Stored {
  kind: 'auto-topup';
  accountId: string;
  enabled: boolean;
  belowCents: number;
  amountCents: number;
  maxPerDay: number;
  /** Stripe Customer (or the sandbox's) the card is saved to; kept when the card is forgotten. */
  customerId?: string;
  /** The saved card: a PaymentMethod id (never card data), with what Stripe shows of it, under our own id. */
  paymentMethodId?: string;
  cardId?: string;
  cardBrand?: string;
  cardLast4?: string;
  cardSavedAt?: string;
  /** The setup Checkout Session last opened: only its completion saves a card. */
  pendingSetupSessionId?: string;
  /** UTC day (yyyy-mm-dd) of `dayCount` attempts. */
  day?: string;
  dayCount?: number;
  /** The attempt waiting for Stripe's answer: one at a time. */
  inFlightInvoiceId?: string;
  inFlightAt?: string;
  /** Its Idempotency-Key, and the PaymentIntent Stripe answered with: a stale attempt is read back, never charged again. */
  inFlightKey?: string;
  inFlightPaymentIntentId?: string;
  /** A loop reading a stale attempt back from Stripe holds it from this time (one at a time). */
  resolvingAt?: string;
  /** The invoice whose failure was counted last: each attempt counts once, by its answer or by its webhook. */
  failureCountedFor?: string;
  consecutiveFailures: number;
  /** Why the service turned the rule off (`failures`, `card_removed`, `authentication_required`); null when the account did. */
  disabledReason?: string | null;
  /** Authentication required: the open invoice the customer pays at `url` (hosted Checkout) to turn the rule back on. */
  pendingPayment?: { invoiceId: string; url: string; expiresAt: string } | null;
  /** Where the card page returned (kept at card setup): the pending payment's page returns there too. */
  returnTo?: { successUrl: string; cancelUrl: string; apiBaseUrl: string };
  lastFailure?: { at: string; code: string; invoiceId: string } | null;
  updatedAt: string;
}

/**
 * One message to send (shared/webhooks/mail-queue.ts): made by the webhook fan-out for an event that calls
 * for mail, at most once per (event, message type); the mail sender claims, sends and closes it.
 * What it says is rendered from the event at send time; the recipient is the account's e-mail then.
 */
export interface MailItem extends Stored {
  kind: 'mail';
  mailId: string;
  /** A message type of shared/mail/templates.ts. */
  messageType: string;
  accountId: string;
  eventId: string;
  /** The event's data as it was recorded: the message says what happened then. */
  data: Record<string, unknown>;
  /** `sent` (handed to SES or the SMTP server), `suppressed` (the address bounced or complained), `skipped` (the account turned this type off), `failed` (given up). */
  status: 'pending' | 'sent' | 'suppressed' | 'skipped' | 'failed';
  attempts: { at: string; error: string | null }[];
  /** Where it went, once sent (or would have gone, suppressed). */
  recipient?: string;
  /** The transport's id of the sent message (SES's MessageId, the SMTP Message-ID). */
  messageId?: string;
  nextAttemptAt: string | null;
  createdAt: string;
  updatedAt: string;
  /** TTL (epoch seconds): kept 30 days like the events. */
  expiresAt: number;
  /** Present (sparse GSI2 MAILDUE#<n>) while an attempt is due. */
  GSI2PK?: string;
  GSI2SK?: string;
}

/** An address no mail goes to: it bounced for good or its owner complained (SES's notification, functions/mail-events). */
export interface MailSuppressionItem extends Stored {
  kind: 'mail-suppression';
  email: string;
  reason: 'bounce' | 'complaint';
  at: string;
}

/** One account's access to another's server (shared/servers/shares.ts), by the e-mail it was given to. */
export interface ServerShareItem extends Stored {
  kind: 'server-share';
  shareId: string;
  serverId: string;
  ownerAccountId: string;
  /** The owner's e-mail when inviting: the invitee's list names who shares the server. */
  ownerEmail: string;
  /** Lower case. */
  email: string;
  permissions: ServerPermission[];
  /** The first account with this verified e-mail that used the share; only it holds the share after. */
  accountId?: string;
  joinedAt?: string;
  /** The invitee's panel user as a subuser of the server (its uuid), set by its SFTP password set. */
  subuser?: { instanceId: string; uuid: string };
  createdAt: string;
  updatedAt: string;
}

/** The invitee's pointer to a share, under the invited e-mail. */
export interface SharedWithItem extends Stored {
  kind: 'shared-with';
  serverId: string;
  ownerAccountId: string;
}
