import { TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { db, tableName } from '../db/client.ts';
import { keys } from '../db/keys.ts';
import { getItem } from '../db/access-patterns.ts';

/**
 * The ledger: the balance on the account profile is a projection of these append-only entries.
 * Every change is one transaction that (1) moves the balance under an optimistic-lock condition on
 * `ledgerSeq`, (2) appends the entry at the next sequence number, (3) writes a guard item keyed by
 * the entry's deterministic idempotency key, so a retried change can never apply twice.
 */
export const LEDGER_TYPES = ['trial', 'topup', 'bonus', 'grant', 'deduction', 'charge', 'refund'] as const;
export type LedgerType = (typeof LEDGER_TYPES)[number];

/** Trial and bonus credit are granted credit, kept apart from paid credit. */
const GRANTED: ReadonlySet<LedgerType> = new Set(['trial', 'bonus', 'grant']);

export interface LedgerChange {
  type: LedgerType;
  /** Signed: credits are positive, charges and deductions negative. */
  amountCents: number;
  /** Deterministic: the same business event always yields the same key. */
  idempotencyKey: string;
  reference?: { serverId?: string; invoiceId?: string; note?: string; hour?: string };
  actorId?: string;
}

export interface LedgerEntry extends LedgerChange {
  seq: number;
  balanceAfterCents: number;
  granted: boolean;
  at: string;
}

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** The items that append `change` after sequence `seq` with resulting balance `balanceAfter`. */
export function ledgerEntryItems(accountId: string, seq: number, balanceAfterCents: number, change: LedgerChange, at: string): TransactItem[] {
  if (!Number.isSafeInteger(change.amountCents)) throw new Error('Ledger amounts are integer cents');
  const entry: LedgerEntry = { ...change, seq, balanceAfterCents, granted: GRANTED.has(change.type), at };
  return [
    {
      Put: {
        TableName: tableName(),
        Item: { ...keys.ledgerEntry(accountId, seq), kind: 'ledger', accountId, ...entry },
        ConditionExpression: 'attribute_not_exists(PK)',
      },
    },
    {
      Put: {
        TableName: tableName(),
        Item: { ...keys.ledgerGuard(change.idempotencyKey), kind: 'ledger-guard', accountId, seq },
        ConditionExpression: 'attribute_not_exists(PK)',
      },
    },
  ];
}

export interface AppendResult {
  applied: boolean;
  balanceCents: number;
  entries: LedgerEntry[];
}

/**
 * Appends changes to an account's ledger in one transaction. Returns `applied: false` (and changes
 * nothing) when any change's idempotency key was already used.
 */
export async function appendLedger(accountId: string, changes: LedgerChange[], now = new Date()): Promise<AppendResult> {
  for (let attempt = 0; attempt < 8; attempt++) {
    const profile = await getItem(keys.account(accountId));
    if (!profile) throw new Error(`Account ${accountId} not found`);
    const seq0 = Number(profile.ledgerSeq ?? 0);
    let balance = Number(profile.balanceCents ?? 0);
    const at = now.toISOString();
    const items: TransactItem[] = [];
    const entries: LedgerEntry[] = [];
    changes.forEach((change, i) => {
      balance += change.amountCents;
      items.push(...ledgerEntryItems(accountId, seq0 + i + 1, balance, change, at));
      entries.push({ ...change, seq: seq0 + i + 1, balanceAfterCents: balance, granted: GRANTED.has(change.type), at });
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
    try {
      await db().send(new TransactWriteCommand({ TransactItems: items }));
      return { applied: true, balanceCents: balance, entries };
    } catch (err) {
      if (!(err instanceof TransactionCanceledException)) throw err;
      const reasons = err.CancellationReasons ?? [];
      // Items 2, 4, ... are the guards: one failing means the change was applied before.
      const guardHit = reasons.some((r, i) => i > 0 && i % 2 === 0 && r.Code === 'ConditionalCheckFailed');
      if (guardHit) return { applied: false, balanceCents: Number(profile.balanceCents ?? 0), entries: [] };
      // Otherwise another change moved the balance first: read again and retry.
    }
  }
  throw new Error('Ledger append kept conflicting; gave up after 8 attempts');
}
