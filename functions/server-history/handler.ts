import { createGroupHandler } from '../../shared/http/handler.ts';
import { sharedAccessOfRoute } from '../../shared/servers/share-access.ts';
import { getOwnedServer } from '../../shared/servers/read.ts';
import { usageHistoryOf } from '../../shared/servers/usage-history.ts';
import { costOfServer } from '../../shared/servers/cost.ts';
import { listServerActivity } from '../../shared/servers/activity.ts';
import { serverHistoryRoutes } from '../../shared/api/routes/server-history.ts';

/** Server-history group: what happened to a server (activity, usage samples, charges this month), read-only. */
export const handler = createGroupHandler(
  'server-history',
  serverHistoryRoutes,
  {
    serverActivity: async ({ principal, params, query }) => listServerActivity(principal.accountId, params.id, query),
    serverUsageHistory: async ({ principal, params, query }) => {
      const server = await getOwnedServer(principal.accountId, params.id);
      return usageHistoryOf(server.serverId, query.window);
    },
    serverCost: async ({ principal, params }) => costOfServer(await getOwnedServer(principal.accountId, params.id)),
  },
  // An invitee reads the history of a server shared with it (shared/api/server-permissions.ts).
  { sharedAccess: sharedAccessOfRoute },
);
