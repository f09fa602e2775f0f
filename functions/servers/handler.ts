import { createGroupHandler } from '../../shared/http/handler.ts';
import { sharedAccessOfRoute } from '../../shared/servers/share-access.ts';
import { serverRoutes } from '../../shared/api/routes/servers.ts';
import { getServerWithLive } from '../../shared/servers/live.ts';
import { listServers } from '../../shared/servers/read.ts';

import * as control from '../../shared/servers/control.ts';
import { deployServer } from '../../shared/servers/deploy.ts';
import { quoteDeploy } from '../../shared/servers/quote.ts';
import { resizeOf, updateServer } from '../../shared/servers/update.ts';
import { deleteServer } from '../../shared/servers/delete.ts';
import { reinstallServer } from '../../shared/servers/reinstall.ts';
import * as shares from '../../shared/servers/shares.ts';
import { clearSubdomain, setSubdomain } from '../../shared/servers/subdomain.ts';

/** Servers group: /v1/servers, and a server's own routes (its startup, files and backups: functions/server-tools). */
export const handler = createGroupHandler(
  'servers',
  serverRoutes,
  {
    listServers: async ({ principal, query }) => {
      const boundTo = `servers:${principal.accountId}`;
      const { cursor, limit, ...filters } = query;
      // Servers shared with the caller come on the first page of the unfiltered list, after its own (shared/servers/shares.ts).
      if (cursor !== undefined || Object.values(filters).some((v) => v !== undefined))
        return listServers(principal.accountId, { ...query, boundTo });
      const shared = await shares.sharedServersOf(principal);
      const own = await listServers(principal.accountId, { ...query, limit: Math.max(1, limit - shared.length), boundTo });
      return { data: [...own.data, ...shared], nextCursor: own.nextCursor };
    },

    createServer: async ({ principal, body, audit }) => {
      const server = await deployServer(principal, body);
      audit.target = `server:${server.id}`;
      audit.details = {
        name: server.name,
        instanceId: server.instanceId,
        eggId: server.eggId,
        region: server.region,
        resources: server.resources,
        priceCentsPerHour: server.priceCentsPerHour,
      };
      return server;
    },

    quoteServer: async ({ principal, body }) => quoteDeploy(principal.accountId, body),

    getServer: async ({ principal, params, sharedAccess }) => {
      const server = await getServerWithLive(principal.accountId, params.id);
      return sharedAccess ? shares.asShared(server, sharedAccess) : server;
    },

    updateServer: async ({ principal, params, body, audit }) => {
      audit.target = `server:${params.id}`;
      const resize = resizeOf(body);
      if (!resize) audit.action = body.name === undefined ? 'servers.labels' : 'servers.rename';
      const { server, renamed, labels } = await updateServer(principal.accountId, params.id, body);
      audit.details = {
        ...(resize ? { resources: server.resources, priceCentsPerHour: server.priceCentsPerHour } : {}),
        ...(renamed ? { name: renamed } : {}),
        ...(labels ? { labels } : {}),
      };
      return server;
    },

    deleteServer: async ({ principal, params, audit }) => {
      audit.target = `server:${params.id}`;
      return deleteServer(principal.accountId, params.id);
    },

    setServerSubdomain: async ({ principal, params, body, audit }) => {
      audit.target = `server:${params.id}`;
      const server = await setSubdomain(principal.accountId, params.id, body.name);
      audit.details = { fqdn: server.subdomain?.fqdn ?? null };
      return server;
    },

    clearServerSubdomain: async ({ principal, params, audit }) => {
      audit.target = `server:${params.id}`;
      return clearSubdomain(principal.accountId, params.id);
    },

    reinstallServer: async ({ principal, params, audit }) => {
      audit.target = `server:${params.id}`;
      const result = await reinstallServer(principal.accountId, params.id);
      audit.details = { installStatus: result.installStatus, watchedUntil: result.watchedUntil };
      return result;
    },

    powerServer: async ({ principal, params, body, audit }) => {
      audit.target = `server:${params.id}`;
      audit.details = { signal: body.signal };
      return control.sendPower(principal.accountId, params.id, body.signal);
    },

    serverResources: async ({ principal, params }) => control.liveUsage(principal.accountId, params.id),

    serverCommand: async ({ principal, params, body, audit }) => {
      audit.target = `server:${params.id}`;
      // The command itself may hold secrets (passwords typed at a console): only its length is logged.
      audit.details = { length: body.command.length };
      return control.sendCommand(principal.accountId, params.id, body.command);
    },

    serverConsole: async ({ principal, params }) => control.consoleCredentials(principal.accountId, params.id),

    // Shared access: the pipeline has let only the owner reach the first four (shared/api/server-permissions.ts).
    listServerUsers: async ({ principal, params }) => shares.listServerUsers(principal.accountId, params.id),

    createServerUser: async ({ principal, params, body, audit }) => {
      audit.target = `server:${params.id}`;
      const share = await shares.inviteServerUser(principal, params.id, body);
      audit.details = { shareId: share.id, email: share.email, permissions: share.permissions };
      return share;
    },

    updateServerUser: async ({ principal, params, body, audit }) => {
      audit.target = `server:${params.id}`;
      const share = await shares.updateServerUser(principal.accountId, params.id, params.shareId, body.permissions);
      audit.details = { shareId: share.id, email: share.email, permissions: share.permissions };
      return share;
    },

    deleteServerUser: async ({ principal, params, audit }) => {
      audit.target = `server:${params.id}`;
      audit.details = { shareId: params.shareId };
      return shares.removeServerUser(principal.accountId, params.id, params.shareId);
    },

    leaveServer: async ({ principal, params, audit, sharedAccess }) => {
      audit.target = `server:${params.id}`;
      return shares.leaveServer(principal, params.id, sharedAccess);
    },
  },
  { sharedAccess: sharedAccessOfRoute },
);
