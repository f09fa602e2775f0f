import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { ensureTable } from '../../dev/dynamodb.ts';
import { getConfig, resetConfig } from '../../shared/config/env.ts';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { runPassInProcess } from '../../shared/billing/pass.ts';
import { HOUR_MS, hourLabel, hourStart } from '../../shared/pricing/hours.ts';
import { countDynamoCalls } from '../../bench/harness.ts';
import { getRaw, queryPartition } from '../helpers/db.ts';
import { expectLedgerInvariant } from '../helpers/money.ts';

/**
 * Catch-up hours (passes that did not run) charged in one transaction per account, against
 * DynamoDB Local: the same cents as hour-by-hour charging (the carry below a cent chained from
 * entry to entry), one ledger entry per hour, each server-hour charged exactly once — also when a
 * pass finds some of the hours already charged, and when two passes race over the same hours.
 * No API and no panel: accounts and servers are written as the service stores them, and the
 * balances stay well above zero, so no suspension (panel work) is due.
 */
// Each test on a table of its own: a pass bills every billable server of the table.
const base = process.env.TABLE_NAME;
let H0 = 0;
beforeEach(async () => {
  process.env.TABLE_NAME = `${base}-${randomUUID().slice(0, 6)}`;
  resetConfig();
  await ensureTable(getConfig().dynamodbEndpoint!, tableName());
  H0 = hourStart(Date.now()) - 8 * HOUR_MS;
});
const t = (hours: number, minutes = 0) => H0 + hours * HOUR_MS + minutes * 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

const BALANCE = 100_000;

/** An account with a grant entry (balance == ledger), a carry below a cent, and active servers at these exact prices from `createdMs`. */
async function account(pricesMillicents: number[], createdMs: number, carriedMillicents: number) {
  const accountId = randomUUID();
  const at = iso(createdMs);
  const burn = pricesMillicents.reduce((a, b) => a + b, 0);
  const put = (Item: Record<string, unknown>) => db().send(new PutCommand({ TableName: tableName(), Item }));
  await put({
    ...keys.account(accountId),
    kind: 'account',
    accountId,
    email: `catchup-${accountId}@example.com`,
    issuer: 'test',
    subject: accountId,
    balanceCents: BALANCE,
    ledgerSeq: 1,
    serverCount: pricesMillicents.length,
    burnCentsPerHour: Math.ceil(burn / 1000),
    burnMillicentsPerHour: burn,
    accruedMillicents: carriedMillicents,
    createdAt: at,
  });
  await put({
    ...keys.ledgerEntry(accountId, 1),
    kind: 'ledger',
    accountId,
    type: 'grant',
    amountCents: BALANCE,
    idempotencyKey: `grant:${accountId}`,
    seq: 1,
    balanceAfterCents: BALANCE,
    granted: true,
    at,
  });
  const serverIds: string[] = [];
  for (const price of pricesMillicents) {
    const serverId = randomUUID();
    serverIds.push(serverId);
    await put({
      ...keys.server(accountId, serverId),
      ...keys.billable(accountId, serverId),
      kind: 'server',
      serverId,
      accountId,
      status: 'active',
      priceCentsPerHour: Math.ceil(price / 1000),
      priceMillicentsPerHour: price,
      createdAt: at,
      updatedAt: at,
      history: [{ at, status: 'active', priceCentsPerHour: Math.ceil(price / 1000), priceMillicentsPerHour: price }],
    });
  }
  return { accountId, serverIds, burn };
}

/** What hour-by-hour charging takes: each hour floor((carried + exact) / 1000) cents, the rest carried on. */
function sequentialCents(hourlyMillicents: number, hours: number, carried: number): { cents: number[]; carried: number } {
  const cents: number[] = [];
  let carry = carried;
  for (let h = 0; h < hours; h++) {
    cents.push(Math.floor((carry + hourlyMillicents) / 1000));
    carry = (carry + hourlyMillicents) % 1000;
  }
  return { cents, carried: carry };
}

const chargesOf = async (accountId: string) =>
  (await queryPartition(keys.ledgerPrefix(accountId)))
    .filter((e) => e.type === 'charge')
    .sort((a, b) => Number(a.seq) - Number(b.seq)) as unknown as {
    amountCents: number;
    reference: {
      hour: string;
      lines: { serverId: string; millicents: number }[];
      accruedBeforeMillicents: number;
      accruedAfterMillicents: number;
    };
  }[];

/** Every server-hour of the account's charges, counted: each must be there exactly once. */
async function serverHours(accountId: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const c of await chargesOf(accountId)) {
    for (const l of c.reference.lines)
      counts.set(`${l.serverId}@${c.reference.hour}`, (counts.get(`${l.serverId}@${c.reference.hour}`) ?? 0) + 1);
  }
  return counts;
}

/** The ledger, balance, carry and guards of an account billed for `hours` hours from t(0): exactly the hour-by-hour result. */
async function expectBilledExactly(a: { accountId: string; serverIds: string[]; burn: number }, hours: number, carried: number) {
  const expected = sequentialCents(a.burn, hours, carried);
  const charges = await chargesOf(a.accountId);
  // One entry per account-hour, in hour order, with its own lines: the documented shape.
  expect(charges.map((c) => c.reference.hour)).toEqual(Array.from({ length: hours }, (_, h) => iso(t(h))));
  expect(charges.map((c) => -c.amountCents)).toEqual(expected.cents);
  for (const c of charges) expect(c.reference.lines.map((l) => l.millicents).reduce((x, y) => x + y, 0)).toBe(a.burn);
  // The carry chained from entry to entry, and left on the profile.
  charges.forEach((c, i) => {
    if (i > 0) expect(c.reference.accruedBeforeMillicents).toBe(charges[i - 1]!.reference.accruedAfterMillicents);
  });
  const profile = await getRaw(keys.account(a.accountId));
  expect(profile!.accruedMillicents).toBe(expected.carried);
  expect(profile!.balanceCents).toBe(BALANCE - expected.cents.reduce((x, y) => x + y, 0));
  // Every server-hour once: no double charge, no lost hour.
  const counted = await serverHours(a.accountId);
  expect(counted.size).toBe(a.serverIds.length * hours);
  expect([...counted.values()].every((n) => n === 1)).toBe(true);
  for (const serverId of a.serverIds) {
    for (let h = 0; h < hours; h++) expect(await getRaw(keys.ledgerGuard(`srvhour:${serverId}:${hourLabel(t(h))}`))).toBeDefined();
  }
  // The month-spend counters hold the same cents as the entries.
  const months = new Set(Array.from({ length: hours }, (_, h) => iso(t(h)).slice(0, 7)));
  let spent = 0;
  for (const month of months) spent += Number((await getRaw(keys.monthSpend(a.accountId, month)))?.cents ?? 0);
  expect(spent).toBe(expected.cents.reduce((x, y) => x + y, 0));
}

describe('catch-up hours in one transaction per account', () => {
  it('five missed hours: one transaction, five entries, the same cents as hour by hour', async () => {
    const a = await account([1800, 1800, 333], t(0, 10), 700);
    const counter = countDynamoCalls();
    counter.reset();
    const summary = await runPassInProcess(new Date(t(5, 5)));
    const transactions = counter.records().filter((r) => r.name === 'TransactWriteItemsCommand');
    expect(summary.errors).toBe(0);
    expect(summary.serverHoursCharged).toBe(15);
    expect(transactions).toHaveLength(1);
    await expectBilledExactly(a, 5, 700);
    await expectLedgerInvariant();
  });

  it('hours already charged are dropped by their guards and the rest charged in one retry', async () => {
    const a = await account([1800, 2500], t(0, 10), 0);
    // A pass bills hours 0 and 1; then the watermark is lost, so the next pass owes hours 0–4 again.
    await runPassInProcess(new Date(t(2, 5)));
    await db().send(new DeleteCommand({ TableName: tableName(), Key: keys.billingWatermark() }));
    const summary = await runPassInProcess(new Date(t(5, 5)));
    expect(summary.errors).toBe(0);
    expect(summary.serverHoursCharged).toBe(6); // hours 2, 3 and 4 of both servers
    await expectBilledExactly(a, 5, 0);
  });

  it('two passes racing over the same missed hours charge each server-hour once', async () => {
    const accounts = await Promise.all(
      Array.from({ length: 6 }, (_, i) => account(i % 2 ? [1800] : [1800, 1234, 999], t(0, 20), (i * 137) % 1000)),
    );
    // Two passes for the same hours, and one for fewer of them, at once.
    const results = await Promise.all([
      runPassInProcess(new Date(t(6, 5))),
      runPassInProcess(new Date(t(6, 5))),
      runPassInProcess(new Date(t(3, 5))),
    ]);
    expect(results.reduce((n, r) => n + r.errors, 0)).toBe(0);
    const servers = accounts.reduce((n, a) => n + a.serverIds.length, 0);
    expect(results.reduce((n, r) => n + r.serverHoursCharged, 0)).toBe(servers * 6);
    for (const [i, a] of accounts.entries()) {
      // Which pass won which hour differs from run to run; the carry then rounds at other hours, but
      // every hour and the sum are exact: the balance after all six hours is the sequential result.
      const expected = sequentialCents(a.burn, 6, (i * 137) % 1000);
      const profile = await getRaw(keys.account(a.accountId));
      expect(profile!.balanceCents).toBe(BALANCE - expected.cents.reduce((x, y) => x + y, 0));
      expect(profile!.accruedMillicents).toBe(expected.carried);
      const counted = await serverHours(a.accountId);
      expect(counted.size).toBe(a.serverIds.length * 6);
      expect([...counted.values()].every((n) => n === 1)).toBe(true);
    }
    await expectLedgerInvariant();
  });
});
