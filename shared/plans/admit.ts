import type { SettingsValue } from '../api/schemas/settings.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { PlanItem } from '../db/items.ts';
import { ApiError } from '../errors.ts';
import { type Addons, type PlanPrice, priceWithAddons, type Resources } from '../pricing/index.ts';

/**
 * What a deploy naming a plan needs (shared/servers/deploy.ts), apart from the plans' CRUD
 * (index.ts) so the servers function's cold start carries only this.
 */

/** What a server on the plan is charged an hour, with the add-ons bought (at least the plan's). */
export function planPriceMillicents(plan: PlanItem, bought: Addons, settings: Pick<SettingsValue, 'prices' | 'addons'>): number {
  // A set price covers the plan's own add-ons; extras beyond them are priced as on any server.
  return priceWithAddons({ resources: plan.resources, planPrice: planPriceOf(plan) }, bought, settings);
}

/** What a server deployed on the plan keeps of its price (ServerItem.planPrice): nothing when derived from resources. */
export const planPriceOf = (plan: PlanItem): PlanPrice | undefined =>
  plan.setPriceMillicentsPerHour === null ? undefined : { setMillicentsPerHour: plan.setPriceMillicentsPerHour, addons: plan.addons };

/** The deploy's fields a plan constrains. */
export interface PlanDeploy {
  planId?: string | undefined;
  eggId: number;
  resources: Resources;
  addons: Addons;
}

/**
 * The plan a deploy names, checked against the body (422 `plan_mismatch` listing every field that
 * differs), with the hourly price to record; undefined for a custom size, refused when the operator
 * sells plans only. A hidden or unknown plan is refused alike: customers cannot tell them apart.
 */
export async function admitPlan(
  input: PlanDeploy,
  settings: SettingsValue,
): Promise<{ plan: PlanItem; priceMillicents: number } | undefined> {
  if (input.planId === undefined) {
    if (settings.customSizesAllowed) return undefined;
    throw mismatch([{ field: 'body.planId', message: 'is required: plans only (GET /v1/plans)' }]);
  }
  const plan = await accessPatterns.planById(input.planId);
  if (!plan?.visible) throw mismatch([{ field: 'body.planId', message: 'is not a plan on sale' }]);
  const issues: { field: string; message: string }[] = [];
  for (const k of ['ramMb', 'cpuPercent', 'diskMb'] as const) {
    if (input.resources[k] !== plan.resources[k]) issues.push({ field: `body.${k}`, message: `must be ${plan.resources[k]}` });
  }
  if (plan.eggIds.length > 0 && !plan.eggIds.includes(input.eggId))
    issues.push({ field: 'body.eggId', message: `must be one of ${plan.eggIds.join(', ')}` });
  for (const k of ['backups', 'databases', 'ports'] as const) {
    if (input.addons[k] < plan.addons[k]) issues.push({ field: `body.addons.${k}`, message: `must be at least ${plan.addons[k]}` });
  }
  if (issues.length) throw mismatch(issues);
  return { plan, priceMillicents: planPriceMillicents(plan, input.addons, settings) };
}

const mismatch = (issues: { field: string; message: string }[]): ApiError =>
  new ApiError('plan_mismatch', `Not as the plan: ${issues.map((i) => `${i.field} ${i.message}`).join('; ')}`, {
    issues,
  });
