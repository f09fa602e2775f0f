import type { z } from 'zod';
import * as accessPatterns from '../db/access-patterns.ts';
import { ApiError, notFound } from '../errors.ts';
import { HOUR_MS, monthOf } from '../pricing/hours.ts';
import { centsUp } from '../pricing/index.ts';
import type { AccountItem } from '../db/items.ts';
import type { Budget, BudgetUpdate } from '../api/schemas.ts';
import { keys } from '../db/keys.ts';
import { writeItem } from '../db/write.ts';

/**
 * Monthly budgets: an optional cap on the hourly charges of a UTC month. Spend is counted in a
 * `SPEND#<month>` item that every hourly charge moves in its own transaction, so the figure is
 * exact. At the cap, deploys and upsizes are refused (`limit_exceeded` 422); with the `suspend`
 * action the billing pass also suspends the running servers until the month ends or the cap rises.
 */
export type BudgetView = z.infer<typeof Budget>;

/** The exact burn of an account (accounts from before exact prices: their whole cents). */
export const exactBurnOf = (profile: Pick<AccountItem, 'burnMillicentsPerHour' | 'burnCentsPerHour'>): number =>
  profile.burnMillicentsPerHour ?? (profile.burnCentsPerHour ?? 0) * 1000;

export function hoursLeftInMonth(now: number): number {
  const d = new Date(now);
  const next = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return Math.ceil((next - now) / HOUR_MS);
}

/** What the month still costs at this exact burn, in cents rounded up: the projection budgets compare with the cap. */
export const restOfMonthCents = (burnMillicents: number, now: number): number => centsUp(burnMillicents * hoursLeftInMonth(now));

export async function monthSpend(accountId: string, month: string): Promise<number> {
  return Number((await accessPatterns.monthSpendOfAccount(accountId, month))?.cents ?? 0);
}

export async function getBudget(accountId: string, now = Date.now()): Promise<BudgetView> {
  const month = monthOf(now);
  const [profile, spentCents] = await Promise.all([accessPatterns.accountById(accountId), monthSpend(accountId, month)]);
  if (!profile) throw notFound('Account');
  const cap = profile.budgetCapCents ?? null;
  const burn = exactBurnOf(profile);
  return {
    monthlyCapCents: cap,
    action: profile.budgetAction ?? 'refuse',
    month,
    spentCents,
    burnCentsPerHour: centsUp(burn),
    burnMillicentsPerHour: burn,
    projectedCents: spentCents + restOfMonthCents(burn, now),
    remainingCents: cap === null ? null : cap - spentCents,
    capReached: cap !== null && spentCents >= cap,
  };
}

/**
 * Deploys and upsizes: refused when the cap is reached, or when the month would end above the
 * cap at the burn the change leads to.
 */
export async function assertWithinBudget(accountId: string, burnAfterMillicents: number, now = Date.now()): Promise<void> {
  const budget = await getBudget(accountId, now);
  if (budget.monthlyCapCents === null) return;
  const projected = budget.spentCents + restOfMonthCents(burnAfterMillicents, now);
  if (budget.capReached || projected > budget.monthlyCapCents) {
    throw new ApiError(
      'limit_exceeded',
      budget.capReached
        ? `The monthly budget of ${budget.monthlyCapCents} cents is reached (${budget.spentCents} spent)`
        : `This change would take the month to about ${projected} cents, above the budget of ${budget.monthlyCapCents}`,
      { monthlyCapCents: budget.monthlyCapCents, spentCents: budget.spentCents, projectedCents: projected },
    );
  }
}

/**
 * Sets the monthly budget (PUT /v1/account/budget) and returns it. Lifting a budget suspension is
 * the caller's next step (shared/servers/suspension.ts imports this module, not the other way).
 */
export async function setBudget(accountId: string, input: z.infer<typeof BudgetUpdate>): Promise<BudgetView> {
  await writeItem({
    Update: {
      Key: keys.account(accountId),
      UpdateExpression: 'SET budgetCapCents = :cap, budgetAction = :action',
      ConditionExpression: 'attribute_exists(PK)',
      ExpressionAttributeValues: { ':cap': input.monthlyCapCents, ':action': input.action },
    },
  });
  return getBudget(accountId);
}
