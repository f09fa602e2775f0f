import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { BatchGetCommand, BatchWriteCommand, GetCommand, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { ensureTable } from '../dev/dynamodb.ts';
import { getConfig, resetConfig } from '../shared/config/env.ts';
import { db, tableName } from '../shared/db/client.ts';
import { keys } from '../shared/db/keys.ts';
import { BILLING_SHARDS } from '../shared/db/table.ts';
import { ACCOUNT_CONCURRENCY, runPassInProcess } from '../shared/billing/pass.ts';
import { listingEntry } from '../shared/accounts/listing.ts';
import { HOUR_MS, hourStart } from '../shared/pricing/hours.ts';
import { countDynamoCalls, type DynamoCall, table } from './harness.ts';

/**
 * Billing-pass throughput: server-hours charged per second by one pass, next to the floor — the
 * minimal DynamoDB work any correct pass must do for the same server-hours, sent straight through
 * the SDK with the same concurrency — and the pass's DynamoDB calls per server-hour by type.
 *
 * Every measurement runs on a table of its own (created in the same DynamoDB Local), so the
 * billable index holds exactly the servers seeded for it.
 */
const SHARD_WORKERS = 4;
/** Exact hourly price of a seeded server: 1.8 ¢ (charged 1 or 2 cents an hour with the carry). */
const PRICE_MILLICENTS = 1800;

export interface Seeded {
  accountIds: string[];
  servers: number;
  serversPerAccount: number;
}

/** Runs `fn` with the service pointed at a fresh table `name` (same DynamoDB Local), then points it back. */
export async function onTable<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const previous = process.env.TABLE_NAME;
  await ensureTable(getConfig().dynamodbEndpoint!, name);
  process.env.TABLE_NAME = name;
  resetConfig();
  try {
    return await fn();
  } finally {
    process.env.TABLE_NAME = previous;
    resetConfig();
  }
}

async function batchWrite(items: Record<string, unknown>[], concurrency = 4): Promise<void> {
  const chunks: Record<string, unknown>[][] = [];
  for (let i = 0; i < items.length; i += 25) chunks.push(items.slice(i, i + 25));
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let chunk = chunks.shift(); chunk; chunk = chunks.shift()) {
        let pending = chunk.map((Item) => ({ PutRequest: { Item } }));
        while (pending.length) {
          const out = await db().send(new BatchWriteCommand({ RequestItems: { [tableName()]: pending } }));
          pending = (out.UnprocessedItems?.[tableName()] ?? []) as typeof pending;
        }
      }
    }),
  );
}

/**
 * Accounts (profile + one grant entry, so balance == sum(ledger)) and active servers on the
 * billable index, created an hour and a bit before the hour the pass bills, written with
 * BatchWriteItem.
 */
export async function seedBilling(
  accounts: number,
  serversPerAccount: number,
  createdAt: string,
  /** Accounts as created before the listing entry: the GSI1 keys on the profile (what the pass then moves). */
  legacyListing = false,
): Promise<Seeded> {
  const items: Record<string, unknown>[] = [];
  const accountIds: string[] = [];
  const balance = 100_000;
  for (let a = 0; a < accounts; a++) {
    const accountId = randomUUID();
    accountIds.push(accountId);
    const email = `bench${a}@example.com`;
    if (!legacyListing) items.push(listingEntry(accountId, email, createdAt) as unknown as Record<string, unknown>);
    items.push({
      ...keys.account(accountId),
      ...(legacyListing ? keys.accountsListing(accountId, createdAt) : {}),
      kind: 'account',
      accountId,
      email,
      issuer: 'bench',
      subject: `bench-${accountId}`,
      balanceCents: balance,
      ledgerSeq: 1,
      trialGranted: false,
      serverCount: serversPerAccount,
      burnCentsPerHour: Math.ceil((serversPerAccount * PRICE_MILLICENTS) / 1000),
      burnMillicentsPerHour: serversPerAccount * PRICE_MILLICENTS,
      accruedMillicents: 0,
      createdAt,
    });
    items.push({
      ...keys.ledgerEntry(accountId, 1),
      kind: 'ledger',
      accountId,
      type: 'grant',
      amountCents: balance,
      idempotencyKey: `bench-grant:${accountId}`,
      seq: 1,
      balanceAfterCents: balance,
      granted: true,
      at: createdAt,
    });
    for (let s = 0; s < serversPerAccount; s++) {
      const serverId = randomUUID();
      items.push({
        ...keys.server(accountId, serverId),
        ...keys.billable(accountId, serverId),
        kind: 'server',
        serverId,
        accountId,
        status: 'active',
        priceCentsPerHour: Math.ceil(PRICE_MILLICENTS / 1000),
        priceMillicentsPerHour: PRICE_MILLICENTS,
        createdAt,
        updatedAt: createdAt,
        history: [{ at: createdAt, status: 'active', priceCentsPerHour: 2, priceMillicentsPerHour: PRICE_MILLICENTS }],
      });
    }
  }
  await batchWrite(items);
  return { accountIds, servers: accounts * serversPerAccount, serversPerAccount };
}

/**
 * The hours the seeded servers owe (created 1 min into the first of them) and a pass time that
 * bills exactly them: one hour, or several as after missed passes.
 */
export function benchHours(hoursOwed = 1): { createdAt: string; at: Date; hour: string } {
  const hour = hourStart(Date.now()) - (hoursOwed + 1) * HOUR_MS;
  return {
    createdAt: new Date(hour + 60_000).toISOString(),
    at: new Date(hour + hoursOwed * HOUR_MS + 5 * 60_000),
    hour: new Date(hour).toISOString(),
  };
}

/**
 * The floor: what any correct pass must send for these server-hours, and nothing else — per shard
 * the billable index read (every page), the profiles read consistently 100 at a time (the new
 * balance, sequence and carry depend on them), then per account-hour one transaction of the same
 * items and sizes as the pass's: the profile under its lock condition, the ledger entry with its
 * lines, a guard for the entry and one per server-hour, the month-spend counter with a per-server
 * attribute. Written to RAW# items (the pass's own items stay untouched); same shard workers and
 * account concurrency as the pass.
 */
export async function floorPass(hour: string): Promise<{ ms: number; serverHours: number }> {
  const table = tableName();
  const shards = Array.from({ length: BILLING_SHARDS }, (_, i) => i);
  const run = randomUUID().slice(0, 8);
  let serverHours = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: SHARD_WORKERS }, async () => {
      for (let shard = shards.shift(); shard !== undefined; shard = shards.shift()) {
        const servers: Record<string, unknown>[] = [];
        let start: Record<string, unknown> | undefined;
        do {
          const out = await db().send(
            new QueryCommand({
              TableName: table,
              IndexName: 'GSI2',
              KeyConditionExpression: 'GSI2PK = :pk',
              ExpressionAttributeValues: { ':pk': keys.billableShard(shard) },
              ExclusiveStartKey: start,
            }),
          );
          servers.push(...(out.Items ?? []));
          start = out.LastEvaluatedKey;
        } while (start);
        const byAccount = new Map<string, string[]>();
        for (const s of servers) byAccount.set(String(s.accountId), [...(byAccount.get(String(s.accountId)) ?? []), String(s.serverId)]);
        const ids = [...byAccount.keys()];
        const profiles = new Map<string, Record<string, unknown>>();
        for (let i = 0; i < ids.length; i += 100) {
          const out = await db().send(
            new BatchGetCommand({
              RequestItems: { [table]: { Keys: ids.slice(i, i + 100).map((id) => ({ ...keys.account(id) })), ConsistentRead: true } },
            }),
          );
          for (const p of out.Responses?.[table] ?? []) profiles.set(String(p.accountId), p);
        }
        let next = 0;
        await Promise.all(
          Array.from({ length: ACCOUNT_CONCURRENCY }, async () => {
            for (let i = next++; i < ids.length; i = next++) {
              const id = ids[i]!;
              const serverIds = byAccount.get(id)!;
              const p = profiles.get(id)!;
              const seq = Number(p.ledgerSeq);
              const lines = serverIds.map((serverId) => ({ serverId, millicents: PRICE_MILLICENTS }));
              const total = Number(p.accruedMillicents ?? 0) + lines.length * PRICE_MILLICENTS;
              const cents = Math.floor(total / 1000);
              // One RAW profile per account, kept from run to run, so each timed run updates an
              // existing profile as the pass does (like a real one, on no index: its listing entry is apart).
              const pk = `RAW#${id}`;
              await db().send(
                new TransactWriteCommand({
                  TransactItems: [
                    {
                      Update: {
                        TableName: table,
                        Key: { PK: pk, SK: 'PROFILE' },
                        UpdateExpression: 'SET balanceCents = :b, ledgerSeq = :s, accruedMillicents = :a',
                        ConditionExpression: 'attribute_not_exists(ledgerSeq) OR ledgerSeq >= :s0',
                        ExpressionAttributeValues: {
                          ':b': Number(p.balanceCents) - cents,
                          ':s': seq + 1,
                          ':s0': seq,
                          ':a': total % 1000,
                        },
                      },
                    },
                    {
                      Put: {
                        TableName: table,
                        Item: {
                          PK: pk,
                          SK: `LEDGER#${run}#${String(seq + 1).padStart(12, '0')}`,
                          kind: 'ledger',
                          accountId: id,
                          type: 'charge',
                          amountCents: -cents,
                          idempotencyKey: `charge:${id}:${hour}:0123456789abcdef`,
                          reference: { hour, lines, accruedBeforeMillicents: 0, accruedAfterMillicents: total % 1000 },
                          seq: seq + 1,
                          balanceAfterCents: Number(p.balanceCents) - cents,
                          granted: false,
                          at: hour,
                        },
                        ConditionExpression: 'attribute_not_exists(PK)',
                      },
                    },
                    ...[`charge:${id}:${hour}`, ...serverIds.map((s) => `srvhour:${s}:${hour}`)].map((guard) => ({
                      Put: {
                        TableName: table,
                        Item: { PK: `RAWTXN#${run}#${guard}`, SK: 'TXN', kind: 'ledger-guard', accountId: id, seq: seq + 1 },
                        ConditionExpression: 'attribute_not_exists(PK)',
                      },
                    })),
                    {
                      Update: {
                        TableName: table,
                        Key: { PK: pk, SK: `SPEND#${hour.slice(0, 7)}` },
                        UpdateExpression: `ADD cents :c, ${serverIds.map((_, k) => `#s${k} :s${k}`).join(', ')} SET kind = :kind`,
                        ExpressionAttributeNames: Object.fromEntries(serverIds.map((s, k) => [`#s${k}`, `srv#${s}`])),
                        ExpressionAttributeValues: {
                          ':c': cents,
                          ':kind': 'month-spend',
                          ...Object.fromEntries(serverIds.map((_, k) => [`:s${k}`, PRICE_MILLICENTS])),
                        },
                      },
                    },
                  ],
                }),
              );
              serverHours += serverIds.length;
            }
          }),
        );
      }
    }),
  );
  return { ms: performance.now() - t0, serverHours };
}

/** Calls by command: how many, how many items they carried (batch keys, transaction items), per server-hour. */
export function callsByType(records: DynamoCall[], serverHours: number): { rows: string[][]; reads: number; writes: number } {
  const by = new Map<string, { calls: number; items: number }>();
  for (const r of records) {
    const name = r.name.replace(/Command$/, '');
    const input = r.input as { TransactItems?: unknown[]; RequestItems?: Record<string, { Keys?: unknown[] } | unknown[]> };
    let items = 1;
    if (input.TransactItems) items = input.TransactItems.length;
    else if (input.RequestItems) {
      items = Object.values(input.RequestItems).reduce<number>(
        (n, v) => n + (Array.isArray(v) ? v.length : ((v as { Keys?: unknown[] }).Keys?.length ?? 0)),
        0,
      );
    }
    const row = by.get(name) ?? { calls: 0, items: 0 };
    row.calls++;
    row.items += items;
    by.set(name, row);
  }
  const isRead = (name: string) => /^(Get|BatchGet|Query|Scan)/.test(name);
  let reads = 0;
  let writes = 0;
  const rows = [...by].map(([name, { calls, items }]) => {
    if (isRead(name)) reads += calls;
    else writes += calls;
    const query = name === 'Query'; // items returned are not in the input: pages only
    return [
      name,
      isRead(name) ? 'read' : 'write',
      String(calls),
      (calls / serverHours).toFixed(4),
      query ? '—' : String(items),
      query ? '—' : (items / serverHours).toFixed(3),
    ];
  });
  return { rows, reads, writes };
}

export interface PassRun {
  seeded: Seeded;
  passMs: number;
  serverHours: number;
  cents: number;
  errors: number;
  records: DynamoCall[];
}

/** Write capacity the table reported for the transactions (ReturnConsumedCapacity INDEXES), by table and index. */
export interface WriteCapacity {
  transactions: number;
  table: number;
  GSI1: number;
  GSI2: number;
}

let capacity: WriteCapacity | undefined;
let capacityInstalled = false;
/** Asks every TransactWriteItems for its consumed capacity while `measure` runs (DynamoDB Local reports it per index, as DynamoDB does). */
async function measuringCapacity<T>(
  fn: () => Promise<T>,
  skip: (input: { TransactItems?: unknown[] }) => boolean,
): Promise<{ result: T; capacity: WriteCapacity }> {
  if (!capacityInstalled) {
    db().middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { TransactItems?: unknown[]; ReturnConsumedCapacity?: string };
        if (!capacity || !/^TransactWrite(Items)?Command$/.test(String(context.commandName)) || skipping(input)) return next(args);
        input.ReturnConsumedCapacity = 'INDEXES';
        const out = await next(args);
        const consumed = (
          out.output as {
            ConsumedCapacity?: {
              Table?: { CapacityUnits?: number };
              GlobalSecondaryIndexes?: Record<string, { CapacityUnits?: number }>;
            }[];
          }
        ).ConsumedCapacity;
        if (capacity) {
          capacity.transactions++;
          for (const c of consumed ?? []) {
            capacity.table += c.Table?.CapacityUnits ?? 0;
            capacity.GSI1 += c.GlobalSecondaryIndexes?.GSI1?.CapacityUnits ?? 0;
            capacity.GSI2 += c.GlobalSecondaryIndexes?.GSI2?.CapacityUnits ?? 0;
          }
        }
        return out;
      },
      { step: 'initialize', name: 'benchCapacityMeter' },
    );
    capacityInstalled = true;
  }
  skipping = skip;
  capacity = { transactions: 0, table: 0, GSI1: 0, GSI2: 0 };
  try {
    const result = await fn();
    return { result, capacity };
  } finally {
    capacity = undefined;
  }
}
let skipping: (input: { TransactItems?: unknown[] }) => boolean = () => false;

/** The pass's one-time move of a legacy profile's GSI1 keys to a listing entry: not a charge, counted apart. */
const isListingMove = (input: { TransactItems?: unknown[] }) =>
  (input.TransactItems ?? []).some((t) => (t as { Put?: { Item?: { kind?: string } } }).Put?.Item?.kind === 'account-listing');

/** DynamoDB's size of an item (attribute names and values, UTF-8), for the bytes an index copy writes. */
export function itemBytes(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (typeof value === 'number') return Math.ceil(String(Math.abs(value)).replace(/^0\./, '').replace('.', '').length / 2) + 1;
  if (typeof value === 'boolean' || value === null || value === undefined) return 1;
  if (Array.isArray(value)) return 3 + value.reduce<number>((n, v) => n + 1 + itemBytes(v), 0);
  return 3 + Object.entries(value as Record<string, unknown>).reduce((n, [k, v]) => n + Buffer.byteLength(k) + 1 + itemBytes(v), 0);
}

/** Seeds a fresh table and runs one pass over it (4 shard workers, as in one process), counting calls and write capacity. */
export async function measurePass(
  accounts: number,
  serversPerAccount: number,
  withFloor: boolean,
  options: { hoursOwed?: number; legacyListing?: boolean } = {},
) {
  return onTable(`bench-billing-${accounts * serversPerAccount}-${randomUUID().slice(0, 6)}`, async () => {
    const hours = benchHours(options.hoursOwed);
    const t0 = performance.now();
    const seeded = await seedBilling(accounts, serversPerAccount, hours.createdAt, options.legacyListing);
    const seedMs = performance.now() - t0;
    // Floor before and after the pass (the machine is shared: the mean of the two is compared),
    // after one untimed floor run: DynamoDB Local's first transactions on a fresh table are slower,
    // and without it they would fall on the first floor run only.
    if (withFloor) await floorPass(hours.hour);
    const floorBefore = withFloor ? await floorPass(hours.hour) : undefined;
    const counter = countDynamoCalls();
    counter.reset();
    const cpu0 = process.cpuUsage();
    const t1 = performance.now();
    const { result: summary, capacity: writeCapacity } = await measuringCapacity(
      () => runPassInProcess(hours.at, SHARD_WORKERS),
      isListingMove,
    );
    const passMs = performance.now() - t1;
    const cpu = process.cpuUsage(cpu0);
    // This process's CPU (our code and the SDK; DynamoDB Local is another process).
    const cpuMs = (cpu.user + cpu.system) / 1000;
    const records = counter.records();
    const floorAfter = withFloor ? await floorPass(hours.hour) : undefined;
    // What one index copy of the profile weighs (the bytes a GSI1 write per account-hour would carry).
    const profile = (
      await db().send(new GetCommand({ TableName: tableName(), Key: keys.account(seeded.accountIds[0]!), ConsistentRead: true }))
    ).Item;
    const profileBytes = itemBytes(profile);
    return {
      profileBytes,
      seeded,
      seedMs,
      passMs,
      cpuMs,
      summary,
      records,
      floorBefore,
      floorAfter,
      writeCapacity,
      hoursOwed: options.hoursOwed ?? 1,
    };
  });
}

export async function benchBillingPass(accounts = 300, serversPerAccount = 4, rounds = 3): Promise<string> {
  // Rounds on fresh tables, each floor → pass → floor: each round's ratio compares the pass with the
  // floor measured just around it (a shared machine's load moves), and the median round is the figure.
  // First a small round that is not counted: the pass's and the floor's code paths warm (JIT).
  await measurePass(40, serversPerAccount, true);
  const runs = [];
  for (let r = 0; r < rounds; r++) runs.push(await measurePass(accounts, serversPerAccount, true));
  const m = runs.at(-1)!;
  const serverHours = runs.reduce((n, x) => n + x.summary.serverHoursCharged, 0);
  const passRate = serverHours / (runs.reduce((n, x) => n + x.passMs, 0) / 1000);
  const floors = runs.flatMap((x) => [x.floorBefore!, x.floorAfter!]);
  const floorRate = floors.reduce((n, f) => n + f.serverHours, 0) / (floors.reduce((n, f) => n + f.ms, 0) / 1000);
  const floorRates = floors.map((f) => f.serverHours / (f.ms / 1000));
  const passRates = runs.map((x) => x.summary.serverHoursCharged / (x.passMs / 1000));
  const roundRatios = passRates.map((rate, i) => rate / ((floorRates[2 * i]! + floorRates[2 * i + 1]!) / 2));
  const medianRatio = [...roundRatios].sort((a, b) => a - b)[Math.floor(roundRatios.length / 2)]!;
  const { rows, reads, writes } = callsByType(m.records, m.summary.serverHoursCharged);
  return [
    '## 5. Hourly billing pass',
    '',
    `${accounts} accounts × ${serversPerAccount} servers = ${m.seeded.servers} billable servers (exact price ${PRICE_MILLICENTS} millicents an hour), one hour each, on a table of their own; 16 shards, ${SHARD_WORKERS} shard workers in one process, ${ACCOUNT_CONCURRENCY} accounts at once per shard (the pass and the floor alike). The floor is the minimal DynamoDB work any correct pass must do for the same server-hours, sent straight through the SDK: per shard the billable index (every page), the profiles read consistently in BatchGetItem calls of 100, then per account-hour one transaction with the same items and sizes (a profile under its lock, kept from run to run and, like a real one, on no index: the admin listing's row is an item apart; the ledger entry with its lines; one guard for the entry and one per server-hour; the month-spend counter); after a warm-up round that is not counted, ${rounds} rounds, each on a fresh table: floor (untimed: the table's first transactions are slower in DynamoDB Local), floor, pass, floor. Rates are over all rounds together (total server-hours / total time); the median round's ratio is the steadier figure on a shared machine.`,
    '',
    table(
      ['measure', 'value', 'ratio'],
      [
        [
          `billing pass: server-hours charged per second (rounds: ${passRates.map((r) => r.toFixed(0)).join(', ')})`,
          passRate.toFixed(0),
          (passRate / floorRate).toFixed(2),
        ],
        [
          `floor: the same server-hours, minimal calls, server-hours per second (runs: ${floorRates.map((r) => r.toFixed(0)).join(', ')})`,
          floorRate.toFixed(0),
          '1.00',
        ],
        [
          `pass ÷ floor, each round against the floor around it (rounds: ${roundRatios.map((r) => r.toFixed(2)).join(', ')}): median`,
          '',
          medianRatio.toFixed(2),
        ],
        ['pass wall time (last round)', `${m.passMs.toFixed(0)} ms`, ''],
        [
          'server-hours charged / cents / errors (last round)',
          `${m.summary.serverHoursCharged} / ${m.summary.cents} / ${m.summary.errors}`,
          '',
        ],
        ['DynamoDB reads per server-hour (calls, last round)', (reads / m.summary.serverHoursCharged).toFixed(3), ''],
        ['DynamoDB writes per server-hour (calls, last round)', (writes / m.summary.serverHoursCharged).toFixed(3), ''],
      ],
    ),
    '',
    'The pass (last round), call by call (every command its DynamoDB client sent, counted by a middleware; items = keys of a BatchGetItem, items of a TransactWriteItems):',
    '',
    table(['command', 'kind', 'calls', 'calls / server-hour', 'items', 'items / server-hour'], rows),
    '',
    "Per account-hour the pass sends one call, its transaction: the profile comes from the shard's BatchGetItem (read ahead, 100 accounts a call), a lost race on the profile's lock returns the current profile with the failed condition (ReturnValuesOnConditionCheckFailure: ALL_OLD) instead of a read, and the ledger returns the profile as the transaction left it, which decides whether suspension, unsuspension or the low-balance warning is due (they read fresh state themselves when they are). Before this change the pass read the profile, wrote, and read the profile again, one account at a time per shard: GetItem 302, Query 16, TransactWriteItems 150, UpdateItem 1 for 600 servers (0.53 reads and 0.25 writes per server-hour), 515 server-hours/s against 755 for the transactions alone (0.68×) in the last full run; that code measured by this bench (a worktree of the previous commit, its floor at its own concurrency of one account per shard), minutes before this run: 300 against 390 (0.77×), 363 server-hours/s and 2.75 ms per server at 2,000 servers.",
  ].join('\n');
}
