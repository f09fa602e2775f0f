import type { z } from 'zod';
import type { BalanceAlerts } from '../api/schemas/alerts.ts';
import type { AccountItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { writeItem } from '../db/write.ts';
import { profileOf } from '../settings/limits.ts';
import { getSettings } from '../settings/index.ts';

/**
 * The account's balance.low threshold: an override on the profile (`lowBalanceThresholdCents`,
 * set by the account or an admin) or the platform setting. The ledger applies it (lowBalanceStep).
 */
export type BalanceAlertsView = z.infer<typeof BalanceAlerts>;

async function viewOf(profile: AccountItem): Promise<BalanceAlertsView> {
  const platform = (await getSettings()).lowBalanceThresholdCents;
  const override = profile.lowBalanceThresholdCents ?? null;
  return {
    lowBalanceThresholdCents: override ?? platform,
    override,
    platformThresholdCents: platform,
    armed: !profile.balanceLowFired,
    balanceCents: Number(profile.balanceCents ?? 0),
  };
}

export async function getBalanceAlerts(accountId: string): Promise<BalanceAlertsView> {
  return viewOf(await profileOf(accountId));
}

/**
 * Sets (or clears, null) the override. It does not touch the armed state: the next append that
 * lowers the balance below the new threshold fires if armed, one at or above it re-arms.
 */
export async function setLowBalanceThreshold(
  accountId: string,
  thresholdCents: number | null,
): Promise<{ before: number | null; view: BalanceAlertsView }> {
  const profile = await profileOf(accountId);
  await writeItem({
    Update: {
      Key: keys.account(accountId),
      UpdateExpression: thresholdCents === null ? 'REMOVE lowBalanceThresholdCents' : 'SET lowBalanceThresholdCents = :t',
      ConditionExpression: 'attribute_exists(PK)',
      ...(thresholdCents === null ? {} : { ExpressionAttributeValues: { ':t': thresholdCents } }),
    },
  });
  const { lowBalanceThresholdCents: _old, ...rest } = profile;
  const after: AccountItem = thresholdCents === null ? rest : { ...rest, lowBalanceThresholdCents: thresholdCents };
  return { before: profile.lowBalanceThresholdCents ?? null, view: await viewOf(after) };
}
