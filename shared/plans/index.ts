import type { z } from 'zod';
import type { CreatePlan, Plan, RegionLook, UpdatePlan } from '../api/schemas/plans.ts';
import type { SettingsValue } from '../api/schemas/settings.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import { asKind, type EggLookItem, type PlanItem, type RegionLookItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { isConditionFailed, writeItem } from '../db/write.ts';
import { notFound } from '../errors.ts';
import { newId } from '../ids.ts';
import { centsUp } from '../pricing/index.ts';
import { planPriceMillicents } from './admit.ts';
import { getSettings } from '../settings/index.ts';

/**
 * Plans: the storefront's offers, defined by an admin. A plan fixes a server's resources, the
 * add-ons it includes, the eggs it suits and its hourly price: set by the admin, or derived from
 * its resources and add-ons at the settings' prices (shared/pricing) when not set. A deploy names
 * a plan with `planId` BESIDE its resources (the spec's body is unchanged): they must be the plan's,
 * or the deploy is refused (422 `plan_mismatch`), so a plan never silently replaces what was asked.
 * The price a deploy records on the server is what billing charges (ServerItem.history).
 */

export type PlanView = z.infer<typeof Plan>;
const HOURS_PER_MONTH = 730;

export function toPlanView(plan: PlanItem, settings: Pick<SettingsValue, 'prices' | 'addons'>): PlanView {
  const price = planPriceMillicents(plan, plan.addons, settings);
  return {
    id: plan.planId,
    name: plan.name,
    description: plan.description,
    pictureUrl: plan.pictureUrl,
    category: plan.category,
    resources: plan.resources,
    addons: plan.addons,
    eggIds: plan.eggIds,
    setPriceMillicentsPerHour: plan.setPriceMillicentsPerHour,
    visible: plan.visible,
    priceMillicentsPerHour: price,
    priceCentsPerHour: Math.max(1, centsUp(price)),
    monthlyEstimateCents: centsUp(price * HOURS_PER_MONTH),
    createdAt: plan.createdAt,
    updatedAt: plan.updatedAt,
  };
}

/** Every plan (admin), or the visible ones (customers), by category then name. */
export async function listPlans(options: { visibleOnly: boolean }): Promise<{ data: PlanView[]; customSizesAllowed: boolean }> {
  const settings = await getSettings();
  const plans = (await storefrontItems()).plans.filter((p) => p.visible || !options.visibleOnly);
  plans.sort((a, b) => a.category.localeCompare(b.category) || a.name.localeCompare(b.name) || a.planId.localeCompare(b.planId));
  return { data: plans.map((p) => toPlanView(p, settings)), customSizesAllowed: settings.customSizesAllowed };
}

export async function getPlan(planId: string): Promise<PlanView> {
  const plan = await accessPatterns.planById(planId);
  if (!plan) throw notFound('Plan');
  return toPlanView(plan, await getSettings());
}

export async function createPlan(input: z.infer<typeof CreatePlan>): Promise<PlanView> {
  const now = new Date().toISOString();
  const planId = newId();
  const item: PlanItem = {
    ...keys.plan(planId),
    kind: 'plan',
    planId,
    ...input,
    eggIds: unique(input.eggIds),
    createdAt: now,
    updatedAt: now,
  };
  await writeItem({ Put: { Item: item, ConditionExpression: 'attribute_not_exists(PK)' } });
  return toPlanView(item, await getSettings());
}

export async function updatePlan(planId: string, patch: z.infer<typeof UpdatePlan>): Promise<PlanView> {
  const plan = await accessPatterns.planById(planId);
  if (!plan) throw notFound('Plan');
  const item: PlanItem = { ...plan, ...patch, eggIds: unique(patch.eggIds ?? plan.eggIds), updatedAt: new Date().toISOString() };
  // Last writer wins, as settings do; the plan must still exist (a concurrent delete stays deleted).
  await writeItem({ Put: { Item: item, ConditionExpression: 'attribute_exists(PK)' } }).catch((err) => {
    throw isConditionFailed(err) ? notFound('Plan') : err;
  });
  return toPlanView(item, await getSettings());
}

/** Servers deployed on it keep their recorded price and resources: nothing else reads a plan after the deploy. */
export async function deletePlan(planId: string): Promise<{ id: string; deleted: true }> {
  const plan = await accessPatterns.planById(planId);
  if (!plan) throw notFound('Plan');
  await writeItem({ Delete: { Key: keys.plan(planId) } });
  return { id: planId, deleted: true };
}

const unique = (ids: number[]): number[] => [...new Set(ids)].sort((a, b) => a - b);

/** The whole storefront partition, by kind. */
export async function storefrontItems(): Promise<{
  plans: PlanItem[];
  regions: Map<string, RegionLookItem>;
  eggs: Map<string, EggLookItem>;
}> {
  const items = await accessPatterns.storefront();
  const plans: PlanItem[] = [];
  const regions = new Map<string, RegionLookItem>();
  const eggs = new Map<string, EggLookItem>();
  for (const item of items) {
    if (item.kind === 'plan') plans.push(asKind(item, 'plan'));
    else if (item.kind === 'region-look') {
      const look = asKind(item, 'region-look');
      regions.set(look.region, look);
    } else if (item.kind === 'egg-look') {
      const look = asKind(item, 'egg-look');
      eggs.set(eggLookId(look.instanceId, look.eggId), look);
    }
  }
  return { plans, regions, eggs };
}

export const eggLookId = (instanceId: string, eggId: number): string => `${instanceId}#${eggId}`;

/** How the storefront names a region: all null clears it (the panel location's description is shown then). */
export async function setRegionLook(
  region: string,
  look: z.infer<typeof RegionLook>,
): Promise<z.infer<typeof RegionLook> & { region: string }> {
  const item: RegionLookItem = { ...keys.regionLook(region), kind: 'region-look', region, ...look };
  await writeItem({ Put: { Item: item } });
  return { region, displayName: look.displayName, city: look.city, country: look.country };
}

/** An egg's picture and category on the storefront; a null category falls back to the egg's nest name. */
export async function setEggLook(
  instanceId: string,
  eggId: number,
  look: { pictureUrl: string | null; category: string | null },
): Promise<{ instanceId: string; eggId: number; pictureUrl: string | null; category: string | null }> {
  // A look for an egg that is not on sale would sit unseen: the panel must be registered, and the egg
  // in its stored copy when there is one (no panel call from here).
  if (!(await accessPatterns.instanceById(instanceId))) throw notFound('Instance');
  const copy = await accessPatterns.panelEggs(instanceId);
  if (copy && !copy.eggs.some((e) => e.id === eggId)) throw notFound('Egg');
  const item: EggLookItem = { ...keys.eggLook(instanceId, eggId), kind: 'egg-look', instanceId, eggId, ...look };
  await writeItem({ Put: { Item: item } });
  return { instanceId, eggId, ...look };
}
