import { createGroupHandler } from '../../shared/http/handler.ts';
import { adminPanelRoutes } from '../../shared/api/routes/admin-panels.ts';
import { createInstance, deleteInstance, listInstancesWithCallBudget, updateInstance } from '../../shared/instances/index.ts';
import { testInstance } from '../../shared/instances/test.ts';
import { clearCatalogCache } from '../../shared/catalog/index.ts';
import { confirmOrphan, listHeldOrphans } from '../../shared/servers/orphans.ts';

/** Admin-panels group: registering, changing, testing and removing panels (their keys), and the held orphans. */
export const handler = createGroupHandler('admin-panels', adminPanelRoutes, {
  adminListInstances: async () => ({ data: await listInstancesWithCallBudget() }),

  adminCreateInstance: async ({ body, audit }) => {
    const instance = await createInstance(body);
    clearCatalogCache();
    audit.target = `instance:${instance.id}`;
    audit.details = { name: instance.name, baseUrl: instance.baseUrl, priority: instance.priority, hasClientKey: instance.hasClientKey };
    return instance;
  },

  adminUpdateInstance: async ({ params, body, audit }) => {
    audit.target = `instance:${params.id}`;
    const { view, changed } = await updateInstance(params.id, body);
    clearCatalogCache();
    // Names of changed fields only: key values never reach the log.
    audit.details = { changed };
    return view;
  },

  adminDeleteInstance: async ({ params, audit }) => {
    audit.target = `instance:${params.id}`;
    await deleteInstance(params.id);
    clearCatalogCache();
    return { id: params.id, deleted: true as const };
  },

  adminListHeldOrphans: async () => ({ data: await listHeldOrphans() }),

  adminConfirmOrphan: async ({ params, principal, audit }) => {
    audit.target = `server:${params.id}`;
    const result = await confirmOrphan(params.id, principal.accountId);
    audit.details = { removed: result.removed };
    return result;
  },

  adminTestInstance: async ({ params, audit }) => {
    audit.target = `instance:${params.id}`;
    const report = await testInstance(params.id);
    audit.details = {
      ok: report.ok,
      nodes: report.nodes.length,
      serviceUserId: report.serviceUser?.id ?? null,
      clientKey: report.lastTest?.clientKey ?? null,
    };
    return report;
  },
});
