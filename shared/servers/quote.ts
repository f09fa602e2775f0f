import type { z } from 'zod';
import type { CreateServer } from '../api/schemas/servers.ts';
import type { Quote } from '../api/schemas/quote.ts';
import { assertWithinBudget } from '../budgets/index.ts';
import { isApiError } from '../errors.ts';
import { HOURS_PER_MONTH } from '../catalog/pricing.ts';
import { addonsMillicents, centsUp, extrasBeyond } from '../pricing/index.ts';
import { admitDeploy, placementFor } from './deploy.ts';

/**
 * The deploy's dry run: the same admission (caps, server limit: thrown as the deploy throws them),
 * the same egg, variable, image and region checks (400 as the deploy), the same price, and the
 * placement it would choose now, from the same shared copies. Nothing is written, claimed or sent
 * to a panel beyond the copies' own refresh (cached reads every caller shares). The money checks
 * and capacity are reported, not thrown, so one call says what to fix: the balance to add, the
 * budget, or a region with room.
 */
export async function quoteDeploy(accountId: string, input: z.infer<typeof CreateServer>): Promise<z.infer<typeof Quote>> {
  const { resources, addons, settings, planId, planAddons, priceMillicents, price, snap, required, burnAfter } = await admitDeploy(
    accountId,
    input,
  );
  const placement = await placementFor(input, {
    ramMb: resources.ramMb,
    diskMb: resources.diskMb,
    cpuPercent: resources.cpuPercent,
    region: input.region ?? null,
    ...(input.instanceId ? { instanceId: input.instanceId } : {}),
  });
  const { fitting, rejected } = placement.ranked();
  const best = fitting[0];

  let budgetMessage: string | null = null;
  if (snap.budgetCapCents !== null) {
    try {
      await assertWithinBudget(accountId, burnAfter);
    } catch (err) {
      if (!isApiError(err) || err.code !== 'limit_exceeded') throw err;
      budgetMessage = err.message;
    }
  }
  const runwayPasses = snap.balanceCents >= required;
  const hours = Math.min(HOURS_PER_MONTH, settings.monthlyCapHours ?? HOURS_PER_MONTH);
  return {
    deployable: runwayPasses && budgetMessage === null && best !== undefined,
    resources,
    addons,
    // On a plan, the resources line is the plan with its included add-ons; only extras are itemised.
    lines: quoteLines(planId ? extrasBeyond(addons, planAddons!) : addons, settings.addons, priceMillicents),
    ...(planId ? { planId } : {}),
    priceMillicentsPerHour: priceMillicents,
    priceCentsPerHour: price,
    monthly: { hours, estimateCents: centsUp(priceMillicents * hours), capHours: settings.monthlyCapHours },
    runway: {
      passes: runwayPasses,
      balanceCents: snap.balanceCents,
      requiredCents: required,
      shortfallCents: Math.max(0, required - snap.balanceCents),
      hourlyMillicentsAfter: burnAfter,
    },
    budget: { passes: budgetMessage === null, message: budgetMessage },
    placement: {
      instanceId: best?.instanceId ?? null,
      region: best?.region ?? null,
      rejected: best ? [] : rejected.map((r) => ({ instanceId: r.instanceId, nodeName: r.nodeName, region: r.region, reason: r.reason })),
      unansweredInstances: placement.unanswered.map((u) => u.instanceId),
    },
  };
}

/** The price itemised: the resources line is the total less the add-ons (whole millicents), so the lines add up exactly. */
function quoteLines(
  addons: z.infer<typeof Quote>['addons'],
  prices: Awaited<ReturnType<typeof admitDeploy>>['settings']['addons'],
  totalMillicents: number,
): z.infer<typeof Quote>['lines'] {
  const unit = {
    backups: prices.backupMillicentsPerHour,
    databases: prices.databaseMillicentsPerHour,
    ports: prices.portMillicentsPerHour,
  };
  const extras = (['backups', 'databases', 'ports'] as const)
    .filter((k) => addons[k] > 0)
    .map((k) => ({ item: k, quantity: addons[k], unitMillicentsPerHour: unit[k], millicentsPerHour: addons[k] * unit[k] }));
  const resources = totalMillicents - addonsMillicents(addons, prices);
  return [{ item: 'resources', quantity: 1, unitMillicentsPerHour: resources, millicentsPerHour: resources }, ...extras];
}
