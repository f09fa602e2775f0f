import type { z } from 'zod';
import * as accessPatterns from '../db/access-patterns.ts';
import type { Item } from '../db/access-patterns.ts';
import { keys } from '../db/keys.ts';
import { LISTING_SHARDS, REPAIR_SHARDS, WEBHOOK_SHARDS } from '../db/table.ts';
import { listInstancesWithCallBudget } from '../instances/index.ts';
import type { AdminHome } from '../api/schemas/admin-home.ts';

/**
 * Items one listing's read may cover on a request (each bounded count's `complete` says whether it
 * reached the end): 5,000 servers of ~1–2 KB read as one status attribute cost ≈ 1,000–2,500
 * eventually consistent read units, a fraction of a cent, and stay within the API's 29 s.
 */
export const HOME_READ_BOUND = 5_000;

type Home = z.infer<typeof AdminHome>;
type Money = Home['money']['today'];

const shards = (n: number) => Array.from({ length: n }, (_, shard) => shard);

/**
 * The admin home (GET /v1/admin/home). Each figure is read from the store its list reads, so they
 * agree: money from the daily counters the ledger books with each top-up, refund and dispute (one
 * query of ≤ 31 × 8 rows); servers and accounts from the admin listings (GSI1, one status
 * attribute or a count per item, bounded); repairs and the webhook queues from their GSI2 queues
 * (a handful of items); panels from the instance records and their call budgets, as the admin list.
 */
export async function platformHome(now = new Date()): Promise<Home> {
  const at = now.toISOString();
  const [moneyRows, servers, accounts, repairs, outbox, deliveries, panels] = await Promise.all([
    accessPatterns.moneyReceivedOfMonth(at.slice(0, 7)),
    tallyShards(keys.serversShard, LISTING_SHARDS, 'status'),
    tallyShards(keys.accountsShard, LISTING_SHARDS),
    tallyShards(keys.repairDueShard, REPAIR_SHARDS, undefined, 'GSI2'),
    tallyShards(keys.outboxShard, WEBHOOK_SHARDS, undefined, 'GSI2'),
    tallyShards(keys.deliveryDueShard, WEBHOOK_SHARDS, undefined, 'GSI2'),
    listInstancesWithCallBudget(),
  ]);
  const today = `DAY#${at.slice(8, 10)}#`;
  return {
    at,
    money: {
      today: moneyOf(moneyRows.filter((row) => String(row.SK).startsWith(today))),
      month: moneyOf(moneyRows),
    },
    servers: { active: servers.counts.get('active') ?? 0, suspended: servers.counts.get('suspended') ?? 0, complete: servers.complete },
    accounts: { count: accounts.read, complete: accounts.complete },
    pendingRepairs: { count: repairs.read, complete: repairs.complete },
    webhookBacklog: { undispatched: outbox.read, deliveriesDue: deliveries.read, complete: outbox.complete && deliveries.complete },
    panels: panels.map((p) => ({
      id: p.id,
      name: p.name,
      enabled: p.enabled,
      health: p.lastTest === null ? 'untested' : p.lastTest.ok ? 'ok' : 'failing',
      lastTestAt: p.lastTest?.at ?? null,
      serverCount: p.serverCount,
      callBudget: p.callBudget!,
    })),
  };
}

function moneyOf(rows: Item[]): Money {
  const sum = (attribute: string) => rows.reduce((total, row) => total + Number(row[attribute] ?? 0), 0);
  const topUpCents = sum('topUpCents');
  const returnedCents = sum('returnedCents');
  return { topUpCents, topUps: sum('topUps'), returnedCents, revenueCents: topUpCents - returnedCents };
}

/** Every shard of one listing, tallied in parallel within one shared bound (split evenly). */
async function tallyShards(shardKey: (shard: number) => string, count: number, tallyBy?: string, index: 'GSI1' | 'GSI2' = 'GSI1') {
  const results = await Promise.all(
    shards(count).map((shard) => accessPatterns.tallyIndexPartition(index, shardKey(shard), Math.ceil(HOME_READ_BOUND / count), tallyBy)),
  );
  const counts = new Map<string, number>();
  for (const r of results) for (const [k, n] of r.counts) counts.set(k, (counts.get(k) ?? 0) + n);
  return { counts, read: results.reduce((n, r) => n + r.read, 0), complete: results.every((r) => r.complete) };
}
