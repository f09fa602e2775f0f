import { createGroupHandler } from '../../shared/http/handler.ts';
import { catalogRoutes } from '../../shared/api/routes/catalog.ts';
import { listInstances } from '../../shared/instances/index.ts';
import { getEgg, listEggs, listRegions } from '../../shared/catalog/index.ts';
import { publicPricing } from '../../shared/catalog/pricing.ts';
import { getSettings } from '../../shared/settings/index.ts';
import { listPlans } from '../../shared/plans/index.ts';

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
});
