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
  const monthStart = Date.parse(`${month}-01T00:00:00.000Z`);
  const nextMonth = new Date(monthStart);
  nextMonth.setUTCMonth(nextMonth.getUTCMonth() + 1);
  const lastHour = nextMonth.getTime() - HOUR_MS;
  const [spend, watermark, settings] = await Promise.all([
    accessPatterns.monthSpendOfAccount(server.accountId, month),
    accessPatterns.billingWatermark(),
    getSettings(),
  ]);
  const soFarMillicents = Number((spend as Record<string, unknown> | undefined)?.[`srv#${server.serverId}`] ?? 0);
  const watermarkMs = watermark?.lastCompletedHour ? Date.parse(watermark.lastCompletedHour) : null;
  const from = Math.max(monthStart, firstOwedHour(Date.parse(server.createdAt), watermarkMs));
  const toCome = await withoutCharged(server.serverId, chargeableHours(server.history ?? [], from, lastHour), hourStart(now));
  let projected = soFarMillicents;
  for (const { millicents } of toCome) {
    projected += settings.monthlyCapHours === null ? millicents : cappedMillicents(millicents, settings.monthlyCapHours, projected);
  }
  const active = server.status === 'active';
  return {
    month,
    soFarCents: Math.floor(soFarMillicents / 1000),
    soFarMillicents,
    projectedCents: Math.floor(projected / 1000),
    projectedMillicents: projected,
    hoursToCome: toCome.length,
    priceMillicentsPerHour: active ? exactPriceOf(server) : 0,
    asOf: new Date(now).toISOString(),
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
