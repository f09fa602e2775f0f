import { TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import type { z } from 'zod';
import { db, tableName } from '../db/client.ts';
import { keys } from '../db/keys.ts';
import { accessPatterns, getItem, type Item, type Page, type PageRequest } from '../db/access-patterns.ts';
import type { LedgerEntryView } from '../api/schemas.ts';

/**
 * The ledger: the balance on the account profile is a projection of these append-only entries
 * (`balanceCents == sum(amountCents)` at all times). Every change is one transaction that
 *   (1) moves the balance under an optimistic-lock condition on `ledgerSeq`,
 *   (2) appends the entry at the next sequence number,
 *   (3) writes a guard item for each of its deterministic idempotency keys,
 * so a retried, duplicated or concurrent change can never apply twice.
 */
export const LEDGER_TYPES = ['trial', 'topup', 'bonus', 'grant', 'deduction', 'charge', 'refund'] as const;
export type LedgerType = (typeof LEDGER_TYPES)[number];

/** Trial, bonus and admin grants are granted credit, kept apart from paid credit. */
const GRANTED: ReadonlySet<LedgerType> = new Set(['trial', 'bonus', 'grant']);

export interface LedgerReference {
  serverId?: string;
  invoiceId?: string;
  invoiceNumber?: string;
  note?: string;
  hour?: string;
  /** Hourly charges: what each server cost in that hour. */
  lines?: { serverId: string; cents: number }[];
}

export interface LedgerChange {
  type: LedgerType;
  /** Signed: credits are positive, charges and deductions negative. */
  amountCents: number;
  /** Deterministic: the same business event always yields the same key. */
  idempotencyKey: string;
  /** More keys that must all be new (an hourly charge has one per server-hour). */
  extraGuards?: string[];
  reference?: LedgerReference;
  actorId?: string;
}

export interface LedgerEntry extends Omit<LedgerChange, 'extraGuards'> {
  seq: number;
  balanceAfterCents: number;
  granted: boolean;
  at: string;
}

export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

const guardsOf = (change: LedgerChange): string[] => [change.idempotencyKey, ...(change.extraGuards ?? [])];

/** The items that append `change` after sequence `seq` with resulting balance `balanceAfter`. */
export function ledgerEntryItems(
  accountId: string,
  seq: number,
  balanceAfterCents: number,
  change: LedgerChange,
  at: string,
): TransactItem[] {
  if (!Number.isSafeInteger(change.amountCents)) throw new Error('Ledger amounts are integer cents');
  const { extraGuards: _extra, ...rest } = change;
  const entry: LedgerEntry = { ...rest, seq, balanceAfterCents, granted: GRANTED.has(change.type), at };
  return [
    {
      Put: {
        TableName: tableName(),
        Item: { ...keys.ledgerEntry(accountId, seq), kind: 'ledger', accountId, ...entry },
        ConditionExpression: 'attribute_not_exists(PK)',
      },
    },
    ...guardsOf(change).map((guard) => ({
      Put: {
        TableName: tableName(),
        Item: { ...keys.ledgerGuard(guard), kind: 'ledger-guard', accountId, seq },
        ConditionExpression: 'attribute_not_exists(PK)',
      },
    })),
  ];
}

export interface AppendOptions {
  now?: Date;
  /** More writes that must happen in the same transaction (an invoice turning paid, a spend counter). */
  extraItems?: (entries: LedgerEntry[]) => TransactItem[];
}

export interface AppendResult {
  applied: boolean;
  balanceCents: number;
  entries: LedgerEntry[];
  /** When not applied: the guard keys that already existed. */
  alreadyApplied: string[];
  /** When not applied: an extra item's condition failed (its index). */
  extraFailed?: number;
}

/**
 * Appends changes to an account's ledger in one transaction. Changes nothing and returns
 * `applied: false` when any idempotency key was used before (listed in `alreadyApplied`) or an
 * extra item's condition fails.
 */
export async function appendLedger(accountId: string, changes: LedgerChange[], options: AppendOptions = {}): Promise<AppendResult> {
  for (let attempt = 0; attempt < 12; attempt++) {
    const profile = await getItem(keys.account(accountId));
    if (!profile) throw new Error(`Account ${accountId} not found`);
    const seq0 = Number(profile.ledgerSeq ?? 0);
    let balance = Number(profile.balanceCents ?? 0);
    const at = (options.now ?? new Date()).toISOString();
    const items: TransactItem[] = [];
    const guardAt: { index: number; key: string }[] = [];
    const entries: LedgerEntry[] = [];
    changes.forEach((change, i) => {
      balance += change.amountCents;
      const entryItems = ledgerEntryItems(accountId, seq0 + i + 1, balance, change, at);
      // Item 0 of the transaction is the profile; the guards follow each entry.
      const base = 1 + items.length;
      for (const [g, key] of guardsOf(change).entries()) guardAt.push({ index: base + 1 + g, key });
      items.push(...entryItems);
      const { extraGuards: _extra, ...rest } = change;
      entries.push({ ...rest, seq: seq0 + i + 1, balanceAfterCents: balance, granted: GRANTED.has(change.type), at });
    });
    items.unshift({
      Update: {
        TableName: tableName(),
        Key: keys.account(accountId),
        UpdateExpression: 'SET balanceCents = :balance, ledgerSeq = :seq',
        ConditionExpression: 'ledgerSeq = :seq0',
        ExpressionAttributeValues: { ':balance': balance, ':seq': seq0 + changes.length, ':seq0': seq0 },
      },
    });
    const extra = options.extraItems?.(entries) ?? [];
    const extraStart = items.length;
    items.push(...extra);
    try {
      await db().send(new TransactWriteCommand({ TransactItems: items }));
      return { applied: true, balanceCents: balance, entries, alreadyApplied: [] };
    } catch (err) {
      if (!(err instanceof TransactionCanceledException)) throw err;
      const reasons = err.CancellationReasons ?? [];
      const failed = (i: number) => reasons[i]?.Code === 'ConditionalCheckFailed';
      const alreadyApplied = guardAt.filter((g) => failed(g.index)).map((g) => g.key);
      const unchanged = { applied: false, balanceCents: Number(profile.balanceCents ?? 0), entries: [] };
      if (alreadyApplied.length) return { ...unchanged, alreadyApplied };
      const extraFailed = extra.findIndex((_, i) => failed(extraStart + i));
      if (extraFailed !== -1) return { ...unchanged, alreadyApplied: [], extraFailed };
      // Otherwise another change moved the balance first (or a write conflicted): read again and retry.
      await new Promise((r) => setTimeout(r, Math.random() * 20 * (attempt + 1)));
    }
  }
  throw new Error('Ledger append kept conflicting; gave up');
}

export function toLedgerView(item: Item): z.infer<typeof LedgerEntryView> {
  const reference = (item.reference as LedgerReference | undefined) ?? {};
  return {
    seq: Number(item.seq),
    type: item.type as LedgerType,
    amountCents: Number(item.amountCents),
    balanceAfterCents: Number(item.balanceAfterCents),
    granted: Boolean(item.granted),
    reference: {
      serverId: reference.serverId ?? null,
      invoiceId: reference.invoiceId ?? null,
      invoiceNumber: reference.invoiceNumber ?? null,
      hour: reference.hour ?? null,
      note: reference.note ?? null,
      lines: reference.lines ?? [],
    },
    at: item.at as string,
  };
}

export async function listLedger(accountId: string, page: PageRequest): Promise<Page<z.infer<typeof LedgerEntryView>>> {
  const result = await accessPatterns.ledgerOfAccount(accountId, page);
  return { data: result.data.map(toLedgerView), nextCursor: result.nextCursor };
}
