import { define } from '../route-def.ts';
import { IdParam } from '../schemas/common.ts';
import { ServerActivityList, ServerActivityQuery } from '../schemas/activity.ts';
import { ServerCost, UsageHistory, UsageHistoryQuery } from '../schemas/usage.ts';

/**
 * The server-history group: what happened to a server, read-only: its activity (ours and the
 * panel's), its usage samples and its charges this month. A function of its own, so that the tools
 * a player changes a server with (server-tools) keep their cold start.
 */

/** A server's activity: ours and the panel's, merged (shared/servers/activity.ts). */
export const serverActivityRoutes = define({
  serverActivity: {
    method: 'GET',
    path: '/v1/servers/:id/activity',
    group: 'server-history',
    tag: 'Servers',
    auth: 'bearer',
    scope: 'servers:read',
    summary: "The server's activity: calls to this API and the panel's events, newest first",
    description:
      "Our entries about the server (who: the account's e-mail and the credential, API key id and name or session; also invitees and admins acting on it) and the panel's activity log for it (SFTP, schedules, reads), merged newest first. The cursor holds both positions: no entry twice, none skipped when new ones arrive between pages; a page may be shorter than `limit` and still carry a cursor. The panel's copy of our own calls (made with our API key) is left out: our entry names the real actor. At most one panel call per page (none when the server cannot be read there). A panel that does not answer does not fail the page: `panel.status` is `unavailable` with the reason, and its events follow on later pages.",
    params: IdParam,
    query: ServerActivityQuery,
    response: ServerActivityList,
  },
});

/** A server's usage history and cost this month: read from the table, no panel call (shared/servers/usage-history.ts, cost.ts). */
export const serverUsageRoutes = define({
  serverUsageHistory: {
    method: 'GET',
    path: '/v1/servers/:id/usage/history',
    group: 'server-history',
    tag: 'Server control',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'CPU, memory, disk and network over the last hour, day or week',
    description:
      'Samples the live-state refresh kept while the server was read (at most one per 5 minutes), averaged per point: 5 minutes for `hour`, 15 for `day`, an hour for `week`. No panel call.',
    params: IdParam,
    query: UsageHistoryQuery,
    response: UsageHistory,
  },
  serverCost: {
    method: 'GET',
    path: '/v1/servers/:id/cost',
    group: 'server-history',
    tag: 'Servers',
    auth: 'bearer',
    scope: 'servers:read',
    summary: "The server's charges this month and the projection to the month's end",
    description:
      "So far: the ledger's hourly charges of this server in the current month (UTC). Projection: so far plus every hour still to charge at the exact price billing would charge, the monthly cap applied. Both in cents rounded down, as the ledger charges. No panel call.",
    params: IdParam,
    response: ServerCost,
  },
});

/** Every route of the server-history function. */
export const serverHistoryRoutes = {
  ...serverActivityRoutes,
  ...serverUsageRoutes,
};
