import type { z } from 'zod';
import type { ServerCost } from '../api/schemas/usage.ts';
import { currentTime } from '../clock.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { ServerItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { cappedMillicents, chargeableHours, firstOwedHour, HOUR_MS, hourLabel, hourStart, monthOf } from '../pricing/hours.ts';
import { exactPriceOf } from '../pricing/index.ts';
import { getSettings } from '../settings/index.ts';

/**
 * A server's cost this month (UTC) and where it is heading, from what the billing pass booked.
 *
 * So far: the server's millicents in the account's month-spend item, which the pass adds to in the
 * same transaction as the ledger entries that charge them (shared/billing/pass.ts), so it equals the
 * server's ledger lines of the month without reading the ledger. To come: every hour of the month
 * not charged yet (an ended hour the pass has not reached, the current one, the rest) at the price
 * billing would charge for it (the very rule, pricing/hours.ts), the operator's monthly cap applied.
 * Cents are rounded down, as the ledger does: it charges whole cents and carries what is below a
 * cent to the next charge, never rounding a charge up against the customer.
 */
export async function costOfServer(server: ServerItem): Promise<z.infer<typeof ServerCost>> {
  const now = currentTime();
  const month = monthOf(now);
  const [spend, watermark, settings] = await Promise.all([
    accessPatterns.monthSpendOfAccount(server.accountId, month),
    accessPatterns.billingWatermark(),
    getSettings(),
  ]);
  const soFarMillicents = Number((spend as Record<string, unknown> | undefined)?.[`srv#${server.serverId}`] ?? 0);
  const watermarkMs = watermark?.lastCompletedHour ? Date.parse(watermark.lastCompletedHour) : null;
  const owed = hoursOwedThisMonth(server, watermarkMs, now);
  const toCome = await withoutCharged(server.serverId, owed, hourStart(now));
  return {
    month,
    ...projectMonth(soFarMillicents, toCome, settings.monthlyCapHours),
    priceMillicentsPerHour: server.status === 'active' ? exactPriceOf(server) : 0,
    asOf: new Date(now).toISOString(),
  };
}

/** The month's first and last hour (UTC) of the instant `ms`. */
export function monthHours(ms: number): { first: number; last: number } {
  const first = Date.parse(`${monthOf(ms)}-01T00:00:00.000Z`);
  const next = new Date(first);
  next.setUTCMonth(next.getUTCMonth() + 1);
  return { first, last: next.getTime() - HOUR_MS };
}

/**
 * Every hour of `now`'s month the server may still be charged for, with its price: from its
 * creation or the watermark (as the pass starts), to the month's last hour, by billing's own rule.
 */
export function hoursOwedThisMonth(
  server: Pick<ServerItem, 'createdAt' | 'history'>,
  watermarkMs: number | null,
  now: number,
): { hour: number; millicents: number }[] {
  const { first, last } = monthHours(now);
  const from = Math.max(first, firstOwedHour(Date.parse(server.createdAt), watermarkMs));
  return chargeableHours(server.history ?? [], from, last);
}

/** So far plus the hours to come, each cut by the monthly cap as the pass would; cents rounded down as the ledger does. */
export function projectMonth(
  soFarMillicents: number,
  toCome: readonly { millicents: number }[],
  monthlyCapHours: number | null,
): { soFarCents: number; soFarMillicents: number; projectedCents: number; projectedMillicents: number; hoursToCome: number } {
  let projected = soFarMillicents;
  for (const { millicents } of toCome) {
    projected += monthlyCapHours === null ? millicents : cappedMillicents(millicents, monthlyCapHours, projected);
  }
  return {
    soFarCents: Math.floor(soFarMillicents / 1000),
    soFarMillicents,
    projectedCents: Math.floor(projected / 1000),
    projectedMillicents: projected,
    hoursToCome: toCome.length,
  };
}

/** Ended hours after the watermark may be charged already (a pass that did this shard but not all): their guards tell. */
async function withoutCharged<T extends { hour: number }>(serverId: string, hours: T[], currentHour: number): Promise<T[]> {
  const ended = hours.filter((h) => h.hour < currentHour);
  const charged = new Set<number>();
  await Promise.all(
    ended.map(async ({ hour }) => {
      if (await accessPatterns.getItem(keys.ledgerGuard(`srvhour:${serverId}:${hourLabel(hour)}`), false)) charged.add(hour);
    }),
  );
  return hours.filter((h) => !charged.has(h.hour));
}
