import { expect } from 'vitest';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { queryPartition } from './db.ts';

/**
 * The money invariant, checked over every account of the test table: the balance equals the sum
 * of the ledger, the ledger sequence has no gap, and each entry's balanceAfter is the running sum.
 * (A Scan is fine here: it is a test's audit of the whole table, not a code path of the service.)
 */
export async function expectLedgerInvariant(): Promise<number> {
  const profiles: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await db().send(
      new ScanCommand({
        TableName: tableName(),
        FilterExpression: 'kind = :k',
        ExpressionAttributeValues: { ':k': 'account' },
        ExclusiveStartKey: start,
      }),
    );
    profiles.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start);
  for (const profile of profiles) {
    const entries = (await queryPartition({ PK: profile.PK as string, SKPrefix: keys.ledgerPrefix('').SKPrefix })).sort(
      (a, b) => Number(a.seq) - Number(b.seq),
    );
    let running = 0;
    entries.forEach((e, i) => {
      expect(e.seq, `ledger seq of ${profile.email}`).toBe(i + 1);
      expect(Number.isInteger(e.amountCents)).toBe(true);
      running += Number(e.amountCents);
      expect(e.balanceAfterCents, `balanceAfter of entry ${i + 1} of ${profile.email}`).toBe(running);
    });
    expect(Number(profile.balanceCents), `balance of ${profile.email}`).toBe(running);
    expect(Number(profile.ledgerSeq ?? 0)).toBe(entries.length);
  }
  return profiles.length;
}

export async function ledgerOf(accountId: string) {
  return (await queryPartition(keys.ledgerPrefix(accountId))).sort((a, b) => Number(a.seq) - Number(b.seq));
}
