import { createGroupHandler } from '../../shared/http/handler.ts';
import { adminStorefrontRoutes } from '../../shared/api/routes/admin-storefront.ts';
import { createPlan, deletePlan, listPlans, setEggLook, setRegionLook, updatePlan } from '../../shared/plans/index.ts';

/** Admin-storefront group: the plans on sale and how regions and eggs are shown (shared/plans). */
export const handler = createGroupHandler('admin-storefront', adminStorefrontRoutes, {
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
