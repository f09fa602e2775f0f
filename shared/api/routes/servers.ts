import { define, PANEL, CONTROL } from '../route-def.ts';
import { IdParam } from '../schemas/common.ts';
import { Quote } from '../schemas/quote.ts';
import {
  InviteServerUser,
  LeftServer,
  RemovedServerUser,
  ServerUser,
  ServerUserList,
  ShareParams,
  UpdateServerUser,
} from '../schemas/shares.ts';
import {
  CommandResult,
  ConsoleCommand,
  ConsoleCredentials,
  CreateServer,
  DeletedServer,
  LiveUsage,
  PowerResult,
  PowerSignal,
  ReinstallResult,
  UpdateServer,
  Server,
  ServerList,
  ServerListQuery,
  ServerWithLive,
} from '../schemas/servers.ts';
import { SetSubdomain } from '../schemas/subdomains.ts';

/**
 * The servers group: /v1/servers, each server, its power, usage and console.
 * A server's startup settings, files and backups are the server-tools group's (routes/server-tools.ts).
 */
export const serverCoreRoutes = define({
  listServers: {
    method: 'GET',
    path: '/v1/servers',
    group: 'servers',
    tag: 'Servers',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'Your servers, newest first (deleted ones included), optionally filtered',
    query: ServerListQuery,
    response: ServerList,
  },
  createServer: {
    method: 'POST',
    path: '/v1/servers',
    group: 'servers',
    tag: 'Servers',
    auth: 'bearer',
    scope: 'servers:write',
    summary: 'Deploy a server from an egg',
    description:
      'Validates against the platform limits, checks 24 hours of credit runway, fills omitted egg variables with their defaults, places it on a node and creates it on the panel. Returns the server with status active (the panel may still be installing it: see `live.installStatus` on GET).',
    body: CreateServer,
    status: 201,
    response: Server,
    idempotent: true,
    audit: 'servers.create',
    errors: ['insufficient_credit', 'limit_exceeded', 'plan_mismatch', 'conflict', 'no_capacity', ...PANEL],
  },
  quoteServer: {
    method: 'POST',
    path: '/v1/servers/quote',
    group: 'servers',
    tag: 'Servers',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'What a deploy with this body would do and cost, without doing it',
    description:
      'The deploy body, checked as the deploy checks it (400 and 422 as it would answer), priced as it would be charged, with the monthly estimate, whether the 24-hour runway and the budget pass (and the balance to add), and where placement would put it now (or every node and why not). Nothing is created, claimed or charged.',
    body: CreateServer,
    response: Quote,
    errors: ['limit_exceeded', 'plan_mismatch', ...PANEL],
  },
  getServer: {
    method: 'GET',
    path: '/v1/servers/:id',
    group: 'servers',
    tag: 'Servers',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'One server plus its live panel state',
    params: IdParam,
    response: ServerWithLive,
  },
  updateServer: {
    method: 'PATCH',
    path: '/v1/servers/:id',
    group: 'servers',
    tag: 'Servers',
    auth: 'bearer',
    scope: 'servers:write',
    summary: 'Rename, resize and/or relabel: limits applied on the panel at once, hourly price recomputed',
    description:
      'A rename alone (`servers.rename` in the activity log) changes no price. A resize takes all three of ramMb, cpuPercent and diskMb. On a plan, the same resources keep the plan and its price; other resources leave it (no `planId`), priced from the resources and add-ons as a custom size. Labels alone: no panel call.',
    params: IdParam,
    body: UpdateServer,
    response: Server,
    audit: 'servers.resize',
    errors: ['insufficient_credit', 'limit_exceeded', 'conflict', 'operation_in_progress', 'no_capacity', ...PANEL],
  },
});

/** What is done to a server: delete, reinstall, power, usage, console. The whole table (routes.ts) lists them after its startup settings. */
export const serverActionRoutes = define({
  deleteServer: {
    method: 'DELETE',
    path: '/v1/servers/:id',
    group: 'servers',
    tag: 'Servers',
    auth: 'bearer',
    scope: 'servers:write',
    summary: 'Delete: removed from the panel; billed for the hour of deletion, never after',
    description:
      "When the server's node (Wings) is down the panel keeps the server: 503 `panel_unavailable` with `Retry-After`, nothing changed, the server stays active and billed until a delete succeeds.",
    params: IdParam,
    response: DeletedServer,
    audit: 'servers.delete',
    errors: ['conflict', 'operation_in_progress', ...PANEL],
  },
  reinstallServer: {
    method: 'POST',
    path: '/v1/servers/:id/reinstall',
    group: 'servers',
    tag: 'Servers',
    auth: 'bearer',
    scope: 'servers:write',
    summary: "Reinstall: the egg's install script runs again",
    description:
      'Files are kept, not wiped. The server installs again (`live.installStatus` `installing`); `server.reinstalled` or `server.install_failed` tells when it ends. 409 while an install is still running.',
    params: IdParam,
    status: 202,
    response: ReinstallResult,
    audit: 'servers.reinstall',
    errors: ['insufficient_credit', 'conflict', 'operation_in_progress', ...PANEL],
  },
  powerServer: {
    method: 'POST',
    path: '/v1/servers/:id/power',
    group: 'servers',
    tag: 'Server control',
    auth: 'bearer',
    scope: 'servers:write',
    summary: 'Send a power signal (start, stop, restart, kill)',
    params: IdParam,
    body: PowerSignal,
    response: PowerResult,
    audit: 'servers.power',
    // An account at or below zero sends no signal (its servers are being suspended).
    errors: [...CONTROL, 'insufficient_credit', 'operation_in_progress'],
  },
  serverResources: {
    method: 'GET',
    path: '/v1/servers/:id/resources',
    group: 'servers',
    tag: 'Server control',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'Live usage: CPU, memory, disk, network and the power state',
    params: IdParam,
    response: LiveUsage,
    errors: CONTROL,
  },
  serverCommand: {
    method: 'POST',
    path: '/v1/servers/:id/command',
    group: 'servers',
    tag: 'Server control',
    auth: 'bearer',
    scope: 'servers:write',
    summary: 'Write one line to the server console (the server must be running)',
    params: IdParam,
    body: ConsoleCommand,
    response: CommandResult,
    audit: 'servers.command',
    errors: CONTROL,
  },
  serverConsole: {
    method: 'GET',
    path: '/v1/servers/:id/console',
    group: 'servers',
    tag: 'Server control',
    auth: 'bearer',
    scope: 'servers:write',
    summary: 'Console websocket credentials (token, socket)',
    description:
      'Open the socket and send `{"event":"auth","args":[token]}` first. Tokens live about 10 minutes; fetch fresh ones when the socket says `token expiring` or closes.',
    params: IdParam,
    response: ConsoleCredentials,
    errors: CONTROL,
  },
});

/**
 * Shared access (shared/servers/shares.ts): the owner invites accounts by e-mail with permissions,
 * lists, changes and removes them; an invitee may leave. Who may call what on a server is
 * shared/api/server-permissions.ts.
 */
export const serverShareRoutes = define({
  listServerUsers: {
    method: 'GET',
    path: '/v1/servers/:id/users',
    group: 'servers',
    tag: 'Shared access',
    auth: 'bearer',
    scope: 'servers:read',
    summary: 'The accounts this server is shared with (owner only)',
    description:
      'Each share: the invited e-mail, its permissions and when the invited account first used it (null until then). An invitee gets 403.',
    params: IdParam,
    response: ServerUserList,
  },
  createServerUser: {
    method: 'POST',
    path: '/v1/servers/:id/users',
    group: 'servers',
    tag: 'Shared access',
    auth: 'bearer',
    scope: 'servers:write',
    summary: 'Share the server with an e-mail address, with permissions (owner only)',
    description:
      'The answer is the same whether or not an account has that e-mail: the share takes effect for the first account with that verified e-mail that uses it, and only for that account after. At most 10 per server (422 `limit_exceeded`); an e-mail already invited is 409 `conflict` (change its permissions instead). The owner pays for everything done on the server.',
    params: IdParam,
    body: InviteServerUser,
    status: 201,
    response: ServerUser,
    audit: 'servers.users.invite',
    errors: ['conflict', 'limit_exceeded'],
  },
  updateServerUser: {
    method: 'PATCH',
    path: '/v1/servers/:id/users/:shareId',
    group: 'servers',
    tag: 'Shared access',
    auth: 'bearer',
    scope: 'servers:write',
    summary: "Change a share's permissions (owner only); its SFTP access follows at once",
    description:
      "Replaces the permissions. The invitee's panel subuser, if it set an SFTP password, gets the new ones in the same request (one panel call).",
    params: ShareParams,
    body: UpdateServerUser,
    response: ServerUser,
    audit: 'servers.users.update',
    errors: ['conflict', 'operation_in_progress', ...PANEL],
  },
  deleteServerUser: {
    method: 'DELETE',
    path: '/v1/servers/:id/users/:shareId',
    group: 'servers',
    tag: 'Shared access',
    auth: 'bearer',
    scope: 'servers:write',
    summary: 'Remove a share (owner only): refused at once, SFTP included',
    description:
      "The invitee's panel subuser is deleted first (one panel call), then the share: its next request is 404 as for any other account's server.",
    params: ShareParams,
    response: RemovedServerUser,
    audit: 'servers.users.remove',
    errors: ['conflict', 'operation_in_progress', ...PANEL],
  },
  leaveServer: {
    method: 'POST',
    path: '/v1/servers/:id/leave',
    group: 'servers',
    tag: 'Shared access',
    auth: 'bearer',
    scope: 'servers:write',
    summary: 'Give up your access to a server shared with you (the owner cannot leave: 409)',
    description: 'As the owner removing the share: the panel subuser goes with it. A server not shared with you is 404.',
    params: IdParam,
    response: LeftServer,
    audit: 'servers.users.leave',
    errors: ['conflict', 'operation_in_progress', ...PANEL],
  },
});

/** A server's name under the platform's DNS zone (shared/servers/subdomain.ts). Owner-only under shared access. */
export const serverSubdomainRoutes = define({
  setServerSubdomain: {
    method: 'PUT',
    path: '/v1/servers/:id/subdomain',
    group: 'servers',
    tag: 'Servers',
    auth: 'bearer',
    scope: 'servers:write',
    summary: "Give the server a name under the platform's DNS zone (replacing its current one)",
    description:
      "Publishes an A (AAAA) record to the server's address and, for a game whose client reads SRV (Minecraft Java: `_minecraft._tcp`), an SRV record with its port. 409 `conflict` when another server holds the name; 400 when the platform has no zone. A DNS failure does not fail the request: `subdomain.status` is `failed` and it is retried within minutes. No panel call.",
    params: IdParam,
    body: SetSubdomain,
    response: Server,
    audit: 'servers.subdomain_set',
    errors: ['conflict', 'operation_in_progress', ...PANEL],
  },
  clearServerSubdomain: {
    method: 'DELETE',
    path: '/v1/servers/:id/subdomain',
    group: 'servers',
    tag: 'Servers',
    auth: 'bearer',
    scope: 'servers:write',
    summary: "Remove the server's subdomain and its records (idempotent)",
    params: IdParam,
    response: Server,
    audit: 'servers.subdomain_clear',
    errors: ['operation_in_progress'],
  },
});

/** Every route of the servers function. */
export const serverRoutes = {
  ...serverCoreRoutes,
  ...serverActionRoutes,
  ...serverShareRoutes,
  ...serverSubdomainRoutes,
};
