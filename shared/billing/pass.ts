import { createHash } from 'node:crypto';
import { keys } from '../db/keys.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import { BATCH_GET_MAX, BILLING_SHARDS } from '../db/table.ts';
import type { AccountItem, ServerItem } from '../db/items.ts';
import { writeIfFirst, writeItem } from '../db/write.ts';
import { appendLedger } from '../ledger/index.ts';
import { reconcileAccount } from '../servers/suspension.ts';
import { deleteServer } from '../servers/delete.ts';
import { recordFullyBilled } from '../servers/records.ts';
import { getSettings } from '../settings/index.ts';
import type { SettingsValue } from '../api/schemas.ts';
import { recordSystemActivity } from '../audit/index.ts';
import { RUNWAY_HOURS } from '../pricing/index.ts';
import { logger, errorFields } from '../observability/logger.ts';
import { putMetric } from '../observability/metrics.ts';
import {
  cappedMillicents,
  chargeableHours,
  firstOwedHour,
  GRACE_MS,
  hourLabel,
  hourStart,
  HOUR_MS,
  lastBillableHour,
  monthOf,
} from '../pricing/hours.ts';
import { runwayOf } from '../accounts/index.ts';
import { moveListingOffProfile } from '../accounts/listing.ts';
import { type RunwayWarningSettings, warnRunway } from './runway-warnings.ts';
import { centsUp } from '../pricing/index.ts';

/**
 * The hourly billing pass, split for fan-out: `planPass` (the scheduler) names the work — one unit
 * per shard of the sparse billable-servers index — and `chargeShard` (a worker) charges one unit.
 * Locally both run in one process; in AWS the scheduler sends the units to a queue and workers
 * take them, so the same code serves 100 or 1,000,000 servers.
 *
 * Exactly once: every server-hour has a guard key (`srvhour:<server>:<hour>`) written in the same
 * transaction as the ledger entry that charges it, so re-running a pass, two passes at once or a
 * retried worker never charge twice — a charge whose guard exists is dropped and the rest retried.
 * Missed passes are caught up: a server is charged from its creation, or from the watermark (the
 * last hour every shard completed), up to the last hour that ended at least GRACE_MS ago.
 */
export { GRACE_MS };
/** Guards per transaction: DynamoDB allows 100 items, the profile, the entry and the spend counter take three. */
const MAX_LINES_PER_CHARGE = 90;
/** Accounts of one shard charged at once (their writes touch disjoint items: no conflicts). */
export const ACCOUNT_CONCURRENCY = 8;
/** Profiles per BatchGetItem (DynamoDB's limit). */
const PROFILES_PER_BATCH = BATCH_GET_MAX;

export interface PassPlan {
  at: string;
  /** Start of the last hour to bill; null when no hour has ended yet since the watermark. */
  throughHour: number;
  /** The watermark when the pass started (null on the first pass ever). */
  fromWatermark: number | null;
  shards: number[];
}

export interface ShardSummary {
  serverHoursCharged: number;
  servers: number;
  accounts: number;
  cents: number;
  suspended: number;
  unsuspended: number;
  deletedByRetention: number;
  lowBalanceWarnings: number;
  /** `balance.runway_warning` events recorded. */
  runwayWarnings: number;
  /** Accounts whose charging failed (retried by the next pass; the watermark waits for them). */
  errors: number;
  /** Panel calls (suspend, unsuspend, retention delete) that failed; retried by the next pass. */
  panelErrors: number;
}

export const emptySummary = (): ShardSummary => ({
  serverHoursCharged: 0,
  servers: 0,
  accounts: 0,
  cents: 0,
  suspended: 0,
  unsuspended: 0,
  deletedByRetention: 0,
  lowBalanceWarnings: 0,
  runwayWarnings: 0,
  errors: 0,
  panelErrors: 0,
});

export function addSummaries(a: ShardSummary, b: ShardSummary): ShardSummary {
  const out = { ...a };
  for (const k of Object.keys(out) as (keyof ShardSummary)[]) out[k] += b[k];
  return out;
}

export async function readWatermark(): Promise<number | null> {
  const item = await accessPatterns.billingWatermark();
  return item?.lastCompletedHour ? Date.parse(item.lastCompletedHour) : null;
}

/** The scheduler's half: which hours and which work units. */
export async function planPass(at: Date): Promise<PassPlan> {
  const throughHour = lastBillableHour(at.getTime());
  return {
    at: at.toISOString(),
    throughHour,
    fromWatermark: await readWatermark(),
    shards: Array.from({ length: BILLING_SHARDS }, (_, i) => i),
  };
}

/** Moves the watermark forward (never back), once every unit of a pass has succeeded. */
export async function advanceWatermark(throughHour: number): Promise<void> {
  const label = new Date(throughHour).toISOString();
  // A later pass may have moved it further already: then this write is a no-op.
  await writeIfFirst({
    Update: {
      Key: keys.billingWatermark(),
      UpdateExpression: 'SET lastCompletedHour = :h, updatedAt = :now',
      ConditionExpression: 'attribute_not_exists(lastCompletedHour) OR lastCompletedHour < :h',
      ExpressionAttributeValues: { ':h': label, ':now': new Date().toISOString() },
    },
  });
}

/**
 * The worker's half: charges every account of one shard, then suspends, unsuspends and tidies.
 * The shard's profiles are read in batches of 100 (one BatchGetItem, consistent, the next batch
 * read ahead), and up to `concurrency` accounts are charged at once: per account-hour the pass
 * then makes one call, its transaction.
 */
export async function chargeShard(
  plan: Pick<PassPlan, 'at' | 'throughHour' | 'fromWatermark'>,
  shard: number,
  concurrency = ACCOUNT_CONCURRENCY,
): Promise<ShardSummary> {
  const summary = emptySummary();
  // Read once per shard: every account of it then uses the same settings, and concurrent
  // accounts do not each read them while the process's settings cache is empty.
  const [servers, settings] = await Promise.all([accessPatterns.billableServersOfShard(shard), getSettings()]);
  const byAccount = new Map<string, ServerItem[]>();
  for (const s of servers) {
    const list = byAccount.get(s.accountId);
    if (list) list.push(s);
    else byAccount.set(s.accountId, [s]);
  }
  const accountIds = [...byAccount.keys()];
  const batches = new Map<number, Promise<Map<string, AccountItem>>>();
  const batch = (b: number): Promise<Map<string, AccountItem>> => {
    let read = batches.get(b);
    if (!read) {
      read = accessPatterns.accountsByIds(accountIds.slice(b * PROFILES_PER_BATCH, (b + 1) * PROFILES_PER_BATCH));
      read.catch(() => undefined); // awaited (and reported) by each account of the batch
      batches.set(b, read);
    }
    return read;
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, accountIds.length) }, async () => {
      for (let i = next++; i < accountIds.length; i = next++) {
        const accountId = accountIds[i]!;
        const b = Math.floor(i / PROFILES_PER_BATCH);
        if ((b + 1) * PROFILES_PER_BATCH < accountIds.length) void batch(b + 1); // read ahead
        try {
          const profile = (await batch(b)).get(accountId);
          // Await first, then add: the summary is shared by the concurrent accounts.
          const part = await chargeAccount(accountId, byAccount.get(accountId)!, plan, settings, profile);
          addInto(summary, part);
          // An account from before the listing entry: move its GSI1 keys off the profile, once, so its
          // charges stop writing an index copy. A failure only leaves it for the next pass.
          if (profile?.GSI1PK)
            await moveListingOffProfile(profile).catch((err) =>
              logger.warn('billing: listing entry not moved', { accountId, ...errorFields(err) }),
            );
        } catch (err) {
          summary.errors++;
          logger.error('billing: account failed; the next pass retries it', { accountId, shard, ...errorFields(err) });
        }
      }
    }),
  );
  // One line per shard, 0 included: what this run charged (a retried shard counts only what its
  // guards let through, so the lines of a pass add up to the server-hours its ledger entries hold).
  putMetric('ServerHoursCharged', summary.serverHoursCharged);
  return summary;
}

function addInto(target: ShardSummary, add: ShardSummary): void {
  for (const k of Object.keys(target) as (keyof ShardSummary)[]) target[k] += add[k];
}

async function chargeAccount(
  accountId: string,
  servers: ServerItem[],
  plan: Pick<PassPlan, 'at' | 'throughHour' | 'fromWatermark'>,
  settings: Pick<SettingsValue, 'monthlyCapHours' | 'suspendedRetentionDays'> & RunwayWarningSettings,
  /** The profile as the shard's batch read it (undefined: read it when needed). */
  read?: AccountItem,
): Promise<ShardSummary> {
  const summary = emptySummary();
  summary.accounts = 1;
  summary.servers = servers.length;

  // Hour → lines (server, exact millicents) still owed.
  const owed = new Map<number, ChargeLine[]>();
  for (const s of servers) {
    const history = s.history ?? [];
    const from = firstOwedHour(Date.parse(s.createdAt), plan.fromWatermark);
    for (const { hour, millicents } of chargeableHours(history, from, plan.throughHour)) {
      owed.set(hour, [...(owed.get(hour) ?? []), { serverId: s.serverId, millicents }]);
    }
  }
  const cap = await monthlyCap(accountId, owed, settings.monthlyCapHours);

  // Each charge starts from the profile the last one left (its write is conditional on it).
  let profile = read;
  const hours = [...owed.keys()].sort((a, b) => a - b);
  if (cap.exact) {
    // No monthly cap: every hour's lines are final, so the hours owed (one, or several after
    // missed passes) go in as few transactions as hold them, one ledger entry per hour as before.
    const charges = hours.flatMap((hour) => chunked(hour, owed.get(hour)!));
    for (const group of packCharges(charges)) {
      const charged = await chargeLines(accountId, group, profile);
      summary.serverHoursCharged += charged.count;
      summary.cents += charged.cents;
      profile = charged.profile ?? profile;
    }
  } else {
    // Under a cap an hour's lines depend on what the hours before it were charged: one at a time.
    for (const hour of hours) {
      let dropped = 0;
      for (const charge of chunked(hour, cap.lines(hour, owed.get(hour)!))) {
        const charged = await chargeLines(accountId, [charge], profile);
        summary.serverHoursCharged += charged.count;
        summary.cents += charged.cents;
        dropped += charge.lines.length - charged.count;
        profile = charged.profile ?? profile;
      }
      // Lines charged before (a re-run hour) were counted against the cap here but not charged:
      // count again from the spend item, which their charge updated, so no hour counts twice.
      if (dropped > 0) await cap.recount(hour);
    }
  }

  // After charging, the profile as the last transaction left it (no read: the ledger returns it)
  // tells whether anything else is due. Most accounts are healthy, and then the pass is done with
  // them. Suspension itself decides from fresh reads (reconcileAccount).
  profile ??= await accessPatterns.accountById(accountId);
  if (!profile) return summary;
  const balance = Number(profile.balanceCents ?? 0);
  const anyActive = servers.some((s) => s.status === 'active');
  const anySuspended = servers.some((s) => s.status === 'suspended');
  const budgetMaySuspend = profile.budgetCapCents !== undefined && profile.budgetCapCents !== null && profile.budgetAction === 'suspend';
  const now = Date.parse(plan.at);
  let suspendedNow = false;
  if ((balance <= 0 && anyActive) || (balance > 0 && anySuspended) || budgetMaySuspend) {
    // Suspend at or below zero once the grace (if any) is over, or at a suspending budget cap; unsuspend once paid.
    const fresh = (await Promise.all(servers.map((s) => accessPatterns.serverOfAccount(accountId, s.serverId)))).filter(
      (s): s is ServerItem => Boolean(s),
    );
    const reconciled = await reconcileAccount(accountId, fresh, now);
    summary.suspended += reconciled.suspended;
    summary.unsuspended += reconciled.unsuspended;
    summary.panelErrors += reconciled.errors;
    suspendedNow = reconciled.suspended > 0;
    if (reconciled.graceStartedAt) profile = { ...profile, graceStartedAt: reconciled.graceStartedAt };
  }
  // The profile's burn is as charged: after a suspension it is stale, and no warning is due then anyway.
  if (!suspendedNow) summary.runwayWarnings += await warnRunway(accountId, profile, settings, now);
  summary.lowBalanceWarnings += await warnLowBalance(accountId, profile);
  if (anySuspended) summary.deletedByRetention += await applyRetention(accountId, servers, settings.suspendedRetentionDays);
  await dropFullyBilled(servers, plan.throughHour);
  return summary;
}

interface ChargeLine {
  serverId: string;
  millicents: number;
}

/** One ledger entry's worth: an account-hour, or a part of one with more than MAX_LINES_PER_CHARGE servers. */
interface HourCharge {
  hour: number;
  lines: ChargeLine[];
}

const chunked = (hour: number, lines: ChargeLine[]): HourCharge[] =>
  Array.from({ length: Math.ceil(lines.length / MAX_LINES_PER_CHARGE) }, (_, i) => ({
    hour,
    lines: lines.slice(i * MAX_LINES_PER_CHARGE, (i + 1) * MAX_LINES_PER_CHARGE),
  }));

/** DynamoDB's limit on the items of one transaction. */
const MAX_TRANSACTION_ITEMS = 100;

/** A transaction's items besides the charges': the profile, and the `balance.low` and `account.debt` events when they fire. */
const FIXED_ITEMS = 3;

/**
 * Consecutive charges packed into transactions: each charge takes its entry, the entry's guard and
 * one guard per line; each month the group touches, its spend counter (one item per month, so a
 * transaction never names an item twice).
 */
export function packCharges(charges: HourCharge[]): HourCharge[][] {
  const groups: HourCharge[][] = [];
  let group: HourCharge[] = [];
  let items = FIXED_ITEMS;
  let months = new Set<string>();
  for (const charge of charges) {
    const month = monthOf(charge.hour);
    const add = 2 + charge.lines.length + (months.has(month) ? 0 : 1);
    if (group.length && items + add > MAX_TRANSACTION_ITEMS) {
      groups.push(group);
      group = [];
      items = FIXED_ITEMS;
      months = new Set();
    }
    group.push(charge);
    items += 2 + charge.lines.length + (months.has(month) ? 0 : 1);
    months.add(month);
  }
  if (group.length) groups.push(group);
  return groups;
}

/** The month-spend item's per-server attribute: what the server has been charged this month, in millicents. */
const serverSpendAttr = (serverId: string): string => `srv#${serverId}`;

/**
 * The operator's optional monthly cap (`monthlyCapHours`): a server never pays more in a calendar
 * month (UTC) than its hourly price times that many hours. Each hour's line is cut to what is
 * left of that month's cap, counted from what the month's spend item says the server has paid.
 * An hour already charged (a re-run pass, a catch-up from before the watermark) is dropped by its
 * guard; `recount` then reads the spend item again, since it already holds that hour, so the hour
 * is counted once. Without a cap, lines pass unchanged and nothing is read.
 */
async function monthlyCap(
  accountId: string,
  owed: Map<number, ChargeLine[]>,
  monthlyCapHours: SettingsValue['monthlyCapHours'],
): Promise<{
  /** No cap: every line is its exact price, whatever else is charged. */
  exact: boolean;
  lines: (hour: number, lines: ChargeLine[]) => ChargeLine[];
  recount: (hour: number) => Promise<void>;
}> {
  if (monthlyCapHours === null) return { exact: true, lines: (_hour, lines) => lines, recount: async () => {} };
  const paid = new Map<string, number>();
  const read = async (month: string): Promise<void> => {
    const spend = (await accessPatterns.monthSpendOfAccount(accountId, month)) as Record<string, unknown> | undefined;
    for (const key of [...paid.keys()]) if (key.startsWith(`${month}|`)) paid.delete(key);
    for (const [attr, value] of Object.entries(spend ?? {})) {
      if (attr.startsWith('srv#')) paid.set(`${month}|${attr.slice(4)}`, Number(value));
    }
  };
  for (const month of new Set([...owed.keys()].map(monthOf))) await read(month);
  return {
    exact: false,
    lines: (hour, lines) =>
      lines.map((line) => {
        const key = `${monthOf(hour)}|${line.serverId}`;
        const already = paid.get(key) ?? 0;
        const millicents = cappedMillicents(line.millicents, monthlyCapHours, already);
        paid.set(key, already + millicents);
        return { ...line, millicents };
      }),
    recount: (hour) => read(monthOf(hour)),
  };
}

/**
 * Ledger entries for account-hours in one transaction, one entry per charge, guarded per
 * server-hour: the exact prices of its lines, charged in whole cents with what is below a cent
 * carried on the account (ledger `accrueMillicents`, each entry from what the one before carried).
 * Lines already charged (a re-run, a concurrent pass) are dropped and the rest retried.
 */
async function chargeLines(
  accountId: string,
  charges: HourCharge[],
  read?: AccountItem,
): Promise<{ count: number; cents: number; profile?: AccountItem }> {
  const guardOf = (hour: number, line: ChargeLine) => `srvhour:${line.serverId}:${hourLabel(hour)}`;
  let remaining = charges;
  let profile = read;
  while (remaining.length) {
    const built = remaining.map((c) => {
      const guards = c.lines.map((l) => guardOf(c.hour, l));
      const digest = createHash('sha256').update(guards.join(',')).digest('hex').slice(0, 16);
      return { ...c, guards, entryKey: `charge:${accountId}:${hourLabel(c.hour)}:${digest}` };
    });
    const result = await appendLedger(
      accountId,
      built.map((c) => ({
        type: 'charge' as const,
        amountCents: 0, // set from the exact amount and what was carried (accrueMillicents)
        idempotencyKey: c.entryKey,
        extraGuards: c.guards,
        reference: {
          hour: new Date(c.hour).toISOString(),
          lines: c.lines,
          ...(c.lines.length === 1 ? { serverId: c.lines[0]!.serverId } : {}),
        },
      })),
      {
        accrueMillicents: built.map((c) => c.lines.reduce((sum, l) => sum + l.millicents, 0)),
        ...(profile ? { profile } : {}),
        extraItems: (entries) => monthSpendWrites(accountId, built, entries),
      },
    );
    if (result.applied) {
      const count = remaining.reduce((sum, c) => sum + c.lines.length, 0);
      return { count, cents: -result.entries.reduce((sum, e) => sum + e.amountCents, 0), profile: result.profile };
    }
    profile = result.profile;
    const done = new Set(result.alreadyApplied);
    remaining = built
      .filter((c) => !done.has(c.entryKey))
      .map((c) => ({ hour: c.hour, lines: c.lines.filter((l) => !done.has(guardOf(c.hour, l))) }))
      .filter((c) => c.lines.length > 0);
  }
  return { count: 0, cents: 0, profile };
}

/** The month-spend counters of a transaction's charges: one update per month, cents and each server's millicents added up. */
function monthSpendWrites(accountId: string, charges: HourCharge[], entries: { amountCents: number }[]) {
  const months = new Map<string, { cents: number; perServer: Map<string, number> }>();
  charges.forEach((c, i) => {
    const month = monthOf(c.hour);
    const m = months.get(month) ?? { cents: 0, perServer: new Map<string, number>() };
    months.set(month, m);
    m.cents += -(entries[i]?.amountCents ?? 0);
    for (const l of c.lines) m.perServer.set(l.serverId, (m.perServer.get(l.serverId) ?? 0) + l.millicents);
  });
  return [...months].map(([month, m]) => {
    const perServer = [...m.perServer].map(([serverId, millicents], i) => ({
      name: `#s${i}`,
      attr: serverSpendAttr(serverId),
      value: `:s${i}`,
      millicents,
    }));
    return {
      name: `month-spend:${month}`,
      Update: {
        Key: keys.monthSpend(accountId, month),
        UpdateExpression: `ADD cents :c, ${perServer.map((p) => `${p.name} ${p.value}`).join(', ')} SET kind = :kind`,
        ExpressionAttributeNames: Object.fromEntries(perServer.map((p) => [p.name, p.attr])),
        ExpressionAttributeValues: {
          ':c': m.cents,
          ':kind': 'month-spend',
          ...Object.fromEntries(perServer.map((p) => [p.value, p.millicents])),
        },
      },
    };
  });
}

/** A warning in the account's activity log once the runway drops under 24 hours (at most once a day). */
async function warnLowBalance(accountId: string, profile: AccountItem): Promise<number> {
  const balance = Number(profile.balanceCents ?? 0);
  const runway = runwayOf(profile);
  if (runway.hours === null || runway.hours >= RUNWAY_HOURS) return 0;
  const last = profile.lowBalanceWarnedAt ? Date.parse(profile.lowBalanceWarnedAt) : 0;
  if (Date.now() - last < 24 * HOUR_MS) return 0;
  const now = new Date().toISOString();
  await writeItem({
    Update: { Key: keys.account(accountId), UpdateExpression: 'SET lowBalanceWarnedAt = :now', ExpressionAttributeValues: { ':now': now } },
  });
  const runwayHours = Math.floor(runway.hours);
  const burn = runway.burnMillicentsPerHour;
  logger.warn('low balance', { accountId, balanceCents: balance, burnMillicentsPerHour: burn, runwayHours });
  await recordSystemActivity({
    accountId,
    actor: 'billing',
    action: 'billing.low_balance',
    target: `account:${accountId}`,
    details: {
      balanceCents: balance,
      burnCentsPerHour: centsUp(burn),
      burnMillicentsPerHour: burn,
      runwayHours,
      fundedUntil: runway.fundedUntil,
    },
  });
  return 1;
}

/** Suspended servers are deleted only when the operator set a retention period. */
async function applyRetention(
  accountId: string,
  servers: ServerItem[],
  suspendedRetentionDays: SettingsValue['suspendedRetentionDays'],
): Promise<number> {
  if (suspendedRetentionDays === null) return 0;
  let deleted = 0;
  for (const s of servers) {
    // An operator's suspension is the operator's to end: retention is for unpaid servers only.
    if (s.status !== 'suspended' || !s.suspendedAt || s.suspendedReason === 'admin') continue;
    if (Date.now() - Date.parse(s.suspendedAt) < suspendedRetentionDays * 24 * HOUR_MS) continue;
    try {
      await deleteServer(accountId, s.serverId);
      deleted++;
      logger.info('server deleted after the retention period', { accountId, serverId: s.serverId, suspendedAt: s.suspendedAt });
    } catch (err) {
      logger.warn('retention delete failed; the next pass retries', { accountId, serverId: s.serverId, ...errorFields(err) });
    }
  }
  return deleted;
}

/** A deleted server leaves the billable index once the hour of its deletion has been billed. */
async function dropFullyBilled(servers: ServerItem[], throughHour: number): Promise<void> {
  for (const s of servers) {
    if (s.status !== 'deleted' || !s.deletedAt) continue;
    if (hourStart(Date.parse(s.deletedAt)) > throughHour) continue;
    await recordFullyBilled(s.accountId, s.serverId, throughHour);
  }
}

/**
 * The whole pass in one process (local stack, tests, and small deployments). `BillingPassDuration`
 * is the wall time from before the plan to the watermark moved, for a pass that completed (one that
 * did not leaves the watermark, and no line: the next pass covers its hours).
 */
export async function runPassInProcess(
  at: Date,
  concurrency = 4,
): Promise<ShardSummary & { at: string; throughHour: string | null; shards: number }> {
  const started = Date.now();
  const plan = await planPass(at);
  const queue = [...plan.shards];
  let total = emptySummary();
  let failedShards = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, queue.length) }, async () => {
      for (let shard = queue.shift(); shard !== undefined; shard = queue.shift()) {
        try {
          // Await first, then add: `total` must be read after the await, or concurrent workers lose counts.
          const part = await chargeShard(plan, shard);
          total = addSummaries(total, part);
        } catch (err) {
          failedShards++;
          logger.error('billing: shard failed', { shard, ...errorFields(err) });
        }
      }
    }),
  );
  total.errors += failedShards;
  // Only a pass that charged everything moves the watermark; otherwise the next one covers the hours again.
  if (total.errors === 0) {
    await advanceWatermark(plan.throughHour);
    putMetric('BillingPassDuration', Date.now() - started);
  }
  return { ...total, at: plan.at, throughHour: new Date(plan.throughHour).toISOString(), shards: plan.shards.length };
}
