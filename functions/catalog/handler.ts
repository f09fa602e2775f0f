import { createGroupHandler } from '../../shared/http/handler.ts';
import { catalogRoutes } from '../../shared/api/routes/catalog.ts';
import { listInstances } from '../../shared/instances/index.ts';
import { getEgg, listEggs, listRegions } from '../../shared/catalog/index.ts';
import { publicPricing } from '../../shared/catalog/pricing.ts';
import { getSettings } from '../../shared/settings/index.ts';
import { createPlan, deletePlan, listPlans, setEggLook, setRegionLook, updatePlan } from '../../shared/plans/index.ts';

/** Catalog group: what can be deployed, and where. */
export const handler = createGroupHandler('catalog', catalogRoutes, {
  listInstances: async () => ({
    data: (await listInstances())
      .filter((i) => i.enabled)
      .map((i) => ({ id: i.id, name: i.name, priority: i.priority, controlAvailable: i.controlAvailable })),
  }),
  listRegions: async () => listRegions(),
  listEggs: async () => listEggs(),
  getEgg: async ({ params }) => getEgg(params.instanceId, params.eggId),
  pricing: async () => publicPricing(),
  getBrand: async () => (await getSettings()).brand,
  listPlans: async () => listPlans({ visibleOnly: true }),
  // Plans and the storefront's looks (shared/plans).
  adminListPlans: async () => listPlans({ visibleOnly: false }),
  adminCreatePlan: async ({ body, audit }) => {
    const plan = await createPlan(body);
    audit.target = `plan:${plan.id}`;
    audit.details = { name: plan.name, visible: plan.visible };
    return plan;
  },
  adminUpdatePlan: async ({ params, body, audit }) => {
    audit.target = `plan:${params.id}`;
    audit.details = { changed: Object.keys(body) };
    return updatePlan(params.id, body);
  },
  adminDeletePlan: async ({ params, audit }) => {
    audit.target = `plan:${params.id}`;
    return deletePlan(params.id);
  },
  adminSetRegionLook: async ({ params, body, audit }) => {
    audit.target = `region:${params.region}`;
    return setRegionLook(params.region, body);
  },
  adminSetEggLook: async ({ params, body, audit }) => {
    audit.target = `egg:${params.instanceId}#${params.eggId}`;
    return setEggLook(params.instanceId, params.eggId, body);
  },
});
