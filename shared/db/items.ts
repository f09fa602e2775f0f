/**
 * The stored item kinds, one type each (ARCHITECTURE.md, "The table"). Every item the service
 * writes carries `kind`; access patterns (access-patterns.ts) check it once where an item is read
 * and hand out the typed item, so domain code reads fields, not `item.x as T` casts.
 */
import type { Scope } from '../api/scopes.ts';

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
  /** Sum of the active servers' hourly prices; absent on accounts created before it existed. */
  burnCentsPerHour?: number;
  budgetCapCents?: number | null;
  budgetAction?: 'refuse' | 'suspend';
  lowBalanceWarnedAt?: string;
  createdAt: string;
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
  region: string | null;
  dockerImage: string;
  resources: { ramMb: number; cpuPercent: number; diskMb: number };
  priceCentsPerHour: number;
  /** When the server was active and at which price: what billing charges from. */
  history: { at: string; status: ServerStatus; priceCentsPerHour: number }[];
  status: ServerStatus;
  createdAt: string;
  updatedAt: string;
  suspendedAt?: string;
  suspendedReason?: 'balance' | 'budget';
  deletedAt?: string;
  deletedReason?: string;
  billedThrough?: string;
}

export interface ServerPointerItem extends Stored {
  kind: 'server-pointer';
  accountId: string;
}

export interface InstanceItem extends Stored {
  kind: 'instance';
  instanceId: string;
  name: string;
  baseUrl: string;
  priority: number;
  enabled?: boolean;
  hasClientKey: boolean;
  serviceUserId?: number;
  serverCount?: number;
  createdAt: string;
  updatedAt: string;
}

export interface LedgerItem extends Stored {
  kind: 'ledger';
  accountId: string;
  seq: number;
  type: 'trial' | 'topup' | 'bonus' | 'grant' | 'deduction' | 'charge' | 'refund';
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
    /** Hourly charges: what each server cost in that hour. */
    lines?: { serverId: string; cents: number }[];
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
  status: 'open' | 'paid' | 'void';
  amountCents: number;
  bonusPercent: number;
  lineItems: { type: 'topup' | 'bonus'; description: string; amountCents: number }[];
  provider: 'stripe' | 'sandbox';
  creditedCents?: number;
  sessionId?: string;
  paymentIntentId?: string | null;
  createdAt: string;
  paidAt?: string;
  voidedAt?: string;
  voidReason?: string;
}

export interface InvoicePointerItem extends Stored {
  kind: 'invoice-pointer';
  accountId: string;
  number: string;
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

export interface MonthSpendItem extends Stored {
  kind: 'month-spend';
  cents: number;
}

export interface ActivityItem extends Stored {
  kind: 'activity';
  expiresAt?: number;
  [field: string]: unknown;
}

/** Counters and cursors written without a kind: the invoice counter and the billing watermark. */
export interface InvoiceCounterItem extends Stored {
  last: number;
}

export interface WatermarkItem extends Stored {
  lastCompletedHour?: string;
}

interface Kinds {
  account: AccountItem;
  subject: SubjectItem;
  server: ServerItem;
  'server-pointer': ServerPointerItem;
  instance: InstanceItem;
  ledger: LedgerItem;
  'ledger-guard': LedgerGuardItem;
  invoice: InvoiceItem;
  'invoice-pointer': InvoicePointerItem;
  'api-key': ApiKeyItem;
  'api-key-hash': ApiKeyHashItem;
  idempotency: IdempotencyItem;
  settings: SettingsItem;
  'month-spend': MonthSpendItem;
  activity: ActivityItem;
}
export type ItemKind = keyof Kinds;

/** Reads a stored item as its kind, once: an item of another kind here is corrupt data, not a 404. */
export function asKind<K extends ItemKind>(item: Item, kind: K): Kinds[K] {
  if (item.kind !== kind) throw new Error(`Expected a ${kind} item at ${String(item.PK)}/${String(item.SK)}, found ${String(item.kind)}`);
  return item as unknown as Kinds[K];
}

export const asKindOrUndefined = <K extends ItemKind>(item: Item | undefined, kind: K): Kinds[K] | undefined =>
  item === undefined ? undefined : asKind(item, kind);
