import { keys } from '../db/keys.ts';
import type { AccountItem } from '../db/items.ts';
import { isConditionFailed, transact, writeIfFirst } from '../db/write.ts';
import { suspendAtMs } from '../accounts/index.ts';
import { exactBurnOf } from '../budgets/index.ts';
import { HOUR_MS } from '../pricing/hours.ts';
import { eventWrite } from '../webhooks/events.ts';
import type { SettingsValue } from '../api/schemas/settings.ts';
import { logger } from '../observability/logger.ts';

/**
 * Runway warnings (`balance.runway_warning`, setting `runwayWarningHours`): the billing pass, after
 * charging an account, compares the time left before its servers would be suspended (the credit
 * running out at the current burn, plus the operator's grace: `suspendAtMs`) with each horizon.
 * When the time left has fallen to a horizon, one event says so. The profile keeps the smallest
 * horizon sent (`runwayWarnedHours`), written in the event's transaction under a condition, so
 * replays and concurrent passes send each horizon once. Several horizons reached at once (missed
 * passes, a sudden burn) send only the nearest: a 24-hour warning with one hour left would mislead.
 * When credit (or a lower burn) lifts the time left above a sent horizon, that horizon re-arms.
 */
export type RunwayWarningSettings = Pick<SettingsValue, 'suspensionGraceMinutes' | 'runwayWarningHours'>;

/** The nearest horizon the time left has reached (the smallest at or above it), or undefined. */
export function reachedHorizon(horizons: readonly number[], hoursLeft: number): number | undefined {
  const reached = horizons.filter((h) => hoursLeft <= h);
  return reached.length ? Math.min(...reached) : undefined;
}

/**
 * Warns (or re-arms) one account as the pass left it; returns 1 when a warning was recorded.
 * `profile` carries the grace's start when one runs (the pass's reconciliation returns it).
 */
export async function warnRunway(accountId: string, profile: AccountItem, settings: RunwayWarningSettings, now: number): Promise<number> {
  const warned = profile.runwayWarnedHours;
  const suspendAt = suspendAtMs(profile, settings.suspensionGraceMinutes, now);
  const hoursLeft = suspendAt === null ? null : (suspendAt - now) / HOUR_MS;
  const due = hoursLeft === null ? undefined : reachedHorizon(settings.runwayWarningHours, hoursLeft);
  if (due === undefined || (warned !== undefined && due > warned)) {
    // Above the horizons sent (or nothing running): re-arm those now above the time left.
    if (warned !== undefined) await rearm(accountId, warned, due);
    return 0;
  }
  // Due now: suspension is the pass's own work, and a warning after it would be late.
  if (hoursLeft === null || hoursLeft <= 0 || (warned !== undefined && due >= warned)) return 0;
  const balanceCents = Number(profile.balanceCents ?? 0);
  const data = {
    horizonHours: due,
    hoursLeft: Math.floor(hoursLeft * 10) / 10,
    suspendAt: new Date(suspendAt!).toISOString(),
    balanceCents,
    burnMillicentsPerHour: exactBurnOf(profile),
    graceMinutes: settings.suspensionGraceMinutes,
  };
  try {
    await transact([
      {
        name: 'profile',
        Update: {
          Key: keys.account(accountId),
          UpdateExpression: 'SET runwayWarnedHours = :due',
          ConditionExpression: 'attribute_exists(PK) AND (attribute_not_exists(runwayWarnedHours) OR runwayWarnedHours > :due)',
          ExpressionAttributeValues: { ':due': due },
        },
      },
      eventWrite(accountId, 'balance.runway_warning', data, new Date(now)),
    ]);
  } catch (err) {
    // Another pass sent it (or a nearer one) first.
    if (isConditionFailed(err, 'profile')) return 0;
    throw err;
  }
  logger.warn('runway warning', { accountId, ...data });
  return 1;
}

/** The horizons above the time left are armed again: the mark moves up to the nearest still reached, or goes. */
async function rearm(accountId: string, warned: number, due: number | undefined): Promise<void> {
  await writeIfFirst({
    Update: {
      Key: keys.account(accountId),
      UpdateExpression: due === undefined ? 'REMOVE runwayWarnedHours' : 'SET runwayWarnedHours = :due',
      ConditionExpression: 'runwayWarnedHours = :warned',
      ExpressionAttributeValues: { ':warned': warned, ...(due === undefined ? {} : { ':due': due }) },
    },
  });
}
