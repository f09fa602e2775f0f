import type { RouteAccess, ServerPermission } from '../api/server-permissions.ts';
import { accessOfRoute, allows, isServerRoute } from '../api/server-permissions.ts';
import type { Principal } from '../auth/principal.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import { keys } from '../db/keys.ts';
import { writeIfFirst } from '../db/write.ts';
import { ApiError } from '../errors.ts';

/**
 * The request pipeline's shared-access check (shared/http/handler.ts), kept apart from the share
 * management (shares.ts, loaded with its routes) so every function's start stays small: two reads
 * at most, no panel.
 */
export interface SharedAccess {
  /** The server's owner: the call acts on the owner's server, and the owner pays. */
  ownerAccountId: string;
  shareId: string;
  permissions: ServerPermission[];
  /** The real caller, for the activity log and leaving. */
  actorAccountId: string;
  /** What the caller's view of the server names: who shares it, and whether its SFTP subuser is set up. */
  ownerEmail: string;
  sftpGranted: boolean;
}

/**
 * Who `principal` is to server `serverId` for a route needing `needed`: undefined when the caller
 * holds no share of it (the owner, or a stranger: the route then answers as it always has, 404 for
 * another account's server); the share when it allows the route; 403 `forbidden` when the caller
 * holds a share without the permission (the invitee knows the server exists). A share of a deleted
 * server, or one another account with the same e-mail already holds, is no share.
 *
 * Reads: one consistent read of the share by (server, caller's e-mail): a removal is refused from
 * the next request on. An invitee's call adds one read of the server (its status).
 */
export async function resolveSharedAccess(principal: Principal, serverId: string, needed: RouteAccess): Promise<SharedAccess | undefined> {
  const share = await accessPatterns.shareOfServer(serverId, principal.email);
  if (!share || share.ownerAccountId === principal.accountId) return undefined;
  if (share.accountId !== undefined && share.accountId !== principal.accountId) return undefined;
  const server = await accessPatterns.serverOfAccount(share.ownerAccountId, serverId);
  if (!server || server.status === 'deleted') return undefined;
  if (share.accountId === undefined && !(await bind(serverId, principal))) return undefined;
  if (!allows(share.permissions, needed)) {
    throw new ApiError('forbidden', 'Your access to this server does not include this', { required: needed });
  }
  return {
    ownerAccountId: share.ownerAccountId,
    shareId: share.shareId,
    permissions: share.permissions,
    actorAccountId: principal.accountId,
    ownerEmail: share.ownerEmail,
    sftpGranted: share.subuser !== undefined,
  };
}

/**
 * The first account with the invited (verified) e-mail to use the share takes it, once: the
 * condition makes a second account with the same address (another sign-in provider) lose the race.
 */
async function bind(serverId: string, principal: Principal): Promise<boolean> {
  return writeIfFirst({
    Update: {
      Key: keys.serverShare(serverId, principal.email),
      UpdateExpression: 'SET accountId = :a, joinedAt = if_not_exists(joinedAt, :at)',
      ConditionExpression: 'attribute_exists(PK) AND (attribute_not_exists(accountId) OR accountId = :a)',
      ExpressionAttributeValues: { ':a': principal.accountId, ':at': new Date().toISOString() },
    },
  });
}

/**
 * The request pipeline's shared-access stage (shared/http/handler.ts, step 5b) for the groups that
 * serve routes of one server: on `/v1/servers/:id…` what the route needs of an invitee
 * (shared/api/server-permissions.ts), then the caller's share of that server.
 */
export async function sharedAccessOfRoute(
  principal: Principal,
  route: { id: string; path: string },
  serverId: unknown,
): Promise<SharedAccess | undefined> {
  if (!isServerRoute(route.path) || typeof serverId !== 'string') return undefined;
  return resolveSharedAccess(principal, serverId, accessOfRoute(route.id));
}
export type SharedAccessOfRoute = typeof sharedAccessOfRoute;
