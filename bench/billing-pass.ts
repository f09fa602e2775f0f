import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { BatchWriteCommand, DeleteCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '../shared/db/client.ts';
import { keys } from '../shared/db/keys.ts';
import { ensureAccountForSubject } from '../shared/accounts/index.ts';
import { runPassInProcess } from '../shared/billing/pass.ts';
import { HOUR_MS, hourStart } from '../shared/pricing/hours.ts';
import { countDynamoCalls, table } from './harness.ts';

/**
 * Billing-pass throughput: server-hours charged per second by one pass, next to the raw rate of
 * the same DynamoDB running the same transaction shape (profile update + ledger entry + guards +
 * spend counter) with the same concurrency; and the pass's reads and writes per server.
 */
export async function benchBillingPass(accounts = 150, serversPerAccount = 4): Promise<string> {
  const createdAt = new Date(hourStart(Date.now()) - 3 * HOUR_MS + 60_000).toISOString();
  const accountIds: string[] = [];
  for (let a = 0; a < accounts; a++) {
    const { accountId } = await ensureAccountForSubject('bench', `bench-${randomUUID()}`, `bench${a}@example.com`);
    accountIds.push(accountId);
  }
  const servers: Record<string, unknown>[] = [];
  for (const accountId of accountIds) {
    for (let s = 0; s < serversPerAccount; s++) {
      const serverId = randomUUID();
      servers.push({
        ...keys.server(accountId, serverId),
        ...keys.billable(accountId, serverId),
        kind: 'server',
        serverId,
        accountId,
        status: 'active',
        priceCentsPerHour: 2,
        createdAt,
        history: [{ at: createdAt, status: 'active', priceCentsPerHour: 2 }],
      });
    }
  }
  for (let i = 0; i < servers.length; i += 25) {
    await db().send(
      new BatchWriteCommand({ RequestItems: { [tableName()]: servers.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) } }),
    );
  }
  await db().send(new DeleteCommand({ TableName: tableName(), Key: keys.billingWatermark() }));

  // One pass billing exactly one hour for every server.
  const at = new Date(hourStart(Date.now()) - 2 * HOUR_MS + 5 * 60_000);
  const counter = countDynamoCalls();
  counter.reset();
  const t0 = performance.now();
  const summary = await runPassInProcess(at, 4);
  const passMs = performance.now() - t0;
  const calls = counter.calls();
  const reads = calls.filter((c) => /Get|Query|Scan/.test(c)).length;
  const writes = calls.filter((c) => /Put|Update|Delete|Transact|Batch/.test(c)).length;

  // The floor: the same transaction shape, one per account, four at a time, nothing else.
  const rawAccounts = accountIds.map(() => randomUUID());
  const queue = [...rawAccounts];
  const t1 = performance.now();
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let id = queue.shift(); id; id = queue.shift()) {
        await db().send(
          new TransactWriteCommand({
            TransactItems: [
              { Put: { TableName: tableName(), Item: { PK: `RAW#${id}`, SK: 'PROFILE', balanceCents: 1000, ledgerSeq: 1 } } },
              {
                Put: {
                  TableName: tableName(),
                  Item: { PK: `RAW#${id}`, SK: 'LEDGER#1', amountCents: -8 },
                  ConditionExpression: 'attribute_not_exists(PK)',
                },
              },
              ...Array.from({ length: serversPerAccount + 1 }, (_, g) => ({
                Put: {
                  TableName: tableName(),
                  Item: { PK: `RAWGUARD#${id}#${g}`, SK: 'TXN' },
                  ConditionExpression: 'attribute_not_exists(PK)',
                },
              })),
              {
                Update: {
                  TableName: tableName(),
                  Key: { PK: `RAW#${id}`, SK: 'SPEND' },
                  UpdateExpression: 'ADD cents :c',
                  ExpressionAttributeValues: { ':c': 8 },
                },
              },
            ],
          }),
        );
      }
    }),
  );
  const rawMs = performance.now() - t1;

  const serverHours = summary.serverHoursCharged;
  const passRate = serverHours / (passMs / 1000);
  const rawTxRate = rawAccounts.length / (rawMs / 1000);
  const rawServerHourRate = (rawAccounts.length * serversPerAccount) / (rawMs / 1000);
  return [
    '## 5. Hourly billing pass',
    '',
    `${accounts} accounts × ${serversPerAccount} servers = ${servers.length} billable servers, one hour each, 16 shards, 4 shard workers in one process.`,
    '',
    table(
      ['measure', 'value', 'ratio'],
      [
        ['billing pass: server-hours charged per second', passRate.toFixed(0), (passRate / rawServerHourRate).toFixed(2)],
        ['floor: raw transactions of the same shape, as server-hours per second', rawServerHourRate.toFixed(0), '1.00'],
        ['floor: raw transactions per second (one per account-hour)', rawTxRate.toFixed(0), ''],
        ['pass wall time', `${passMs.toFixed(0)} ms`, ''],
        ['server-hours charged / cents', `${serverHours} / ${summary.cents}`, ''],
        ['DynamoDB reads per server', (reads / servers.length).toFixed(2), ''],
        ['DynamoDB writes per server', (writes / servers.length).toFixed(2), ''],
      ],
    ),
    '',
    `Per account-hour the pass reads the profile (optimistic lock), writes one transaction (profile, ledger entry, one guard per server-hour, month spend), then reads the profile once more to decide whether anything else is due (suspension, unsuspension, the low-balance warning); only then does it re-read the servers. Calls: ${summarise(calls)}.`,
  ].join('\n');
}

function summarise(calls: string[]): string {
  const counts = new Map<string, number>();
  for (const c of calls) counts.set(c, (counts.get(c) ?? 0) + 1);
  return [...counts].map(([c, n]) => `${c.replace('Command', '')} ${n}`).join(', ');
}
