import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { InviteServerUser, ServerUser } from '../api/schemas/shares.ts';
import { MAX_SHARES_PER_SERVER, SERVER_PERMISSIONS, type ServerPermission } from '../api/server-permissions.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { ServerItem, ServerShareItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { isConditionFailed, transact, writeItem } from '../db/write.ts';
import { ApiError, notFound } from '../errors.ts';
import { getInstance, panelClientFor } from '../instances/index.ts';
import type { SharedAccess } from './share-access.ts';
import { withServerLease } from './lease.ts';
import { getOwnedServer } from './read.ts';
import { panelUserOf } from './panel-user.ts';
import { type ServerView, toServerView } from './views.ts';

/**
 * Shared access: an owner gives another account, by e-mail, a set of permissions on one server.
 * The pipeline enforces them (share-access.ts, the table in shared/api/server-permissions.ts); this
 * module manages the shares and the invitee's panel subuser (its SFTP login to the server).
 *
 * An e-mail without an account: the same answer as with one. The share is bound to the e-mail and
 * taken, on first use, by the first account with that verified e-mail (share-access.ts), so nothing
 * here reads accounts by e-mail and no answer tells whether one exists.
 *
 * Panel calls: invite 0; list 0; change of permissions 0, or 1 (the subuser's permissions) when the
 * invitee has SFTP on it; remove and leave 0, or 1 (the subuser deleted) when it has.
 */
export type ServerUserView = z.infer<typeof ServerUser>;

/** What the panel subuser of an invitee may do, per permission (pterodactyl/panel:app/Models/Permission.php). */
export const PANEL_PERMISSIONS: Record<ServerPermission, readonly string[]> = {
  console: ['control.console'],
  power: ['control.start', 'control.stop', 'control.restart'],
  files: ['file.create', 'file.read', 'file.read-content', 'file.update', 'file.delete', 'file.archive', 'file.sftp'],
  backups: ['backup.create', 'backup.read', 'backup.delete', 'backup.download', 'backup.restore'],
  schedules: ['schedule.create', 'schedule.read', 'schedule.update', 'schedule.delete'],
  databases: ['database.create', 'database.read', 'database.update', 'database.delete', 'database.view_password'],
  startup: ['startup.read', 'startup.update', 'startup.docker-image'],
  'read-only': [],
};

export const panelPermissionsOf = (permissions: readonly ServerPermission[]): string[] => [
  ...new Set(permissions.flatMap((p) => PANEL_PERMISSIONS[p])),
];

/**
 * The stored set: `read-only` always (every grant implies it), `console` brings `power` (the
 * console socket the API hands out can send power signals), in the table's order.
 */
export function normalizePermissions(asked: readonly ServerPermission[]): ServerPermission[] {
  const held = new Set<ServerPermission>([...asked, 'read-only']);
  if (held.has('console')) held.add('power');
  return SERVER_PERMISSIONS.filter((p) => held.has(p));
}

const toView = (s: ServerShareItem): ServerUserView => ({
  id: s.shareId,
  email: s.email,
  permissions: s.permissions,
  joinedAt: s.joinedAt ?? null,
  createdAt: s.createdAt,
  updatedAt: s.updatedAt,
});

async function ownedLive(ownerAccountId: string, serverId: string): Promise<ServerItem> {
  const server = await getOwnedServer(ownerAccountId, serverId);
  if (server.status === 'deleted') throw new ApiError('conflict', 'The server is deleted');
  return server;
}

export async function listServerUsers(ownerAccountId: string, serverId: string): Promise<{ data: ServerUserView[] }> {
  await getOwnedServer(ownerAccountId, serverId);
  const shares = await accessPatterns.sharesOfServer(serverId);
  return { data: shares.sort((a, b) => a.createdAt.localeCompare(b.createdAt)).map(toView) };
}

/** One transaction: the share, the invitee's pointer and the server's count (bounded by MAX_SHARES_PER_SERVER). */
export async function inviteServerUser(
  owner: { accountId: string; email: string },
  serverId: string,
  input: z.infer<typeof InviteServerUser>,
): Promise<ServerUserView> {
  await ownedLive(owner.accountId, serverId);
  const email = input.email.trim().toLowerCase();
  if (email === owner.email.toLowerCase()) {
    const message = 'This is your own address: you own the server';
    throw new ApiError('validation_failed', `Invalid request: body.email ${message}`, { issues: [{ field: 'body.email', message }] });
  }
  const now = new Date().toISOString();
  const share: ServerShareItem = {
    ...keys.serverShare(serverId, email),
    kind: 'server-share',
    shareId: randomUUID(),
    serverId,
    ownerAccountId: owner.accountId,
    ownerEmail: owner.email,
    email,
    permissions: normalizePermissions(input.permissions),
    createdAt: now,
    updatedAt: now,
  };
  try {
    await transact([
      {
        name: 'count',
        Update: {
          Key: keys.serverShareCount(serverId),
          UpdateExpression: 'SET #n = if_not_exists(#n, :zero) + :one',
          ConditionExpression: 'attribute_not_exists(#n) OR #n < :max',
          ExpressionAttributeNames: { '#n': 'count' },
          ExpressionAttributeValues: { ':zero': 0, ':one': 1, ':max': MAX_SHARES_PER_SERVER },
        },
      },
      { name: 'share', Put: { Item: share, ConditionExpression: 'attribute_not_exists(PK)' } },
      {
        name: 'pointer',
        Put: { Item: { ...keys.sharedWith(email, serverId), kind: 'shared-with', serverId, ownerAccountId: owner.accountId } },
      },
    ]);
  } catch (err) {
    if (isConditionFailed(err, 'share'))
      throw new ApiError('conflict', 'The server is already shared with this e-mail; change its permissions');
    if (isConditionFailed(err, 'count'))
      throw new ApiError('limit_exceeded', `A server is shared with at most ${MAX_SHARES_PER_SERVER} accounts`, {
        limit: MAX_SHARES_PER_SERVER,
      });
    throw err;
  }
  return toView(share);
}

async function shareById(serverId: string, shareId: string): Promise<ServerShareItem> {
  const share = (await accessPatterns.sharesOfServer(serverId)).find((s) => s.shareId === shareId);
  if (!share) throw notFound('Share');
  return share;
}

/** New permissions; the invitee's subuser (if it has SFTP there) follows in the same request. */
export async function updateServerUser(
  ownerAccountId: string,
  serverId: string,
  shareId: string,
  asked: ServerPermission[],
): Promise<ServerUserView> {
  const server = await ownedLive(ownerAccountId, serverId);
  return withServerLease(serverId, 'users', async () => {
    const share = await shareById(serverId, shareId);
    const permissions = normalizePermissions(asked);
    const updatedAt = new Date().toISOString();
    const panelPermissions = panelPermissionsOf(permissions);
    let subuser = share.subuser;
    if (subuser) {
      const client = await panelClientFor(await getInstance(subuser.instanceId));
      // A subuser left with nothing file- or control-like is removed rather than kept with websocket.connect alone.
      if (panelPermissions.length === 0) {
        await client.deleteSubuser(server.identifier, subuser.uuid);
        subuser = undefined;
      } else await client.updateSubuser(server.identifier, subuser.uuid, panelPermissions);
    }
    try {
      await writeItem({
        Update: {
          Key: keys.serverShare(serverId, share.email),
          UpdateExpression: subuser ? 'SET #p = :p, updatedAt = :u' : 'SET #p = :p, updatedAt = :u REMOVE subuser',
          ConditionExpression: 'shareId = :id',
          ExpressionAttributeNames: { '#p': 'permissions' },
          ExpressionAttributeValues: { ':p': permissions, ':u': updatedAt, ':id': shareId },
        },
      });
    } catch (err) {
      if (isConditionFailed(err)) throw notFound('Share');
      throw err;
    }
    return toView({ ...share, permissions, updatedAt, ...(subuser ? { subuser } : {}) });
  });
}

/**
 * Removes the share: from the next request on the pipeline finds none (404 to the former invitee),
 * and its panel subuser is deleted first, so SFTP is refused at once. Under the server's lease.
 */
export async function removeServerUser(ownerAccountId: string, serverId: string, shareId: string): Promise<{ id: string; removed: true }> {
  const server = await getOwnedServer(ownerAccountId, serverId);
  await withServerLease(serverId, 'users', async () => removeShare(server, await shareById(serverId, shareId)));
  return { id: shareId, removed: true };
}

/** The invitee gives up its share (`sharedAccess` from the pipeline); the owner has none to give up. */
export async function leaveServer(
  principal: { accountId: string; email: string },
  serverId: string,
  sharedAccess: SharedAccess | undefined,
): Promise<{ serverId: string; left: true }> {
  if (!sharedAccess) {
    // The owner (or a stranger: 404 exactly as for any other route on another account's server).
    await getOwnedServer(principal.accountId, serverId);
    throw new ApiError('conflict', 'You own this server: delete it, or remove its users, instead');
  }
  const server = await getOwnedServer(sharedAccess.ownerAccountId, serverId);
  await withServerLease(serverId, 'users', async () => removeShare(server, await shareById(serverId, sharedAccess.shareId)));
  return { serverId, left: true };
}

async function removeShare(server: ServerItem, share: ServerShareItem): Promise<void> {
  // The panel first: if it fails, the share stays (and says so), never a share gone with SFTP still open.
  if (share.subuser && server.status !== 'deleted') {
    const client = await panelClientFor(await getInstance(share.subuser.instanceId));
    await client.deleteSubuser(server.identifier, share.subuser.uuid);
  }
  try {
    await transact([
      {
        name: 'share',
        Delete: {
          Key: keys.serverShare(server.serverId, share.email),
          ConditionExpression: 'shareId = :id',
          ExpressionAttributeValues: { ':id': share.shareId },
        },
      },
      { name: 'pointer', Delete: { Key: keys.sharedWith(share.email, server.serverId) } },
      {
        name: 'count',
        Update: {
          Key: keys.serverShareCount(server.serverId),
          UpdateExpression: 'SET #n = #n - :one',
          ConditionExpression: '#n > :zero',
          ExpressionAttributeNames: { '#n': 'count' },
          ExpressionAttributeValues: { ':zero': 0, ':one': 1 },
        },
      },
    ]);
  } catch (err) {
    if (isConditionFailed(err, 'share')) throw notFound('Share');
    throw err;
  }
}

/** How many shared servers the invitee's list shows (on its first page). */
export const MAX_SHARED_LISTED = 50;

/**
 * The servers shared with the caller that it may use: not deleted, not taken by another account
 * with the same e-mail. The owner's labels are the owner's: not shown. SFTP names the caller's login.
 */
export async function sharedServersOf(principal: { accountId: string; email: string }): Promise<ServerView[]> {
  const pointers = await accessPatterns.sharedWithEmail(principal.email, MAX_SHARED_LISTED);
  const found = await Promise.all(
    pointers.map(async (p) => {
      const [share, server] = await Promise.all([
        accessPatterns.shareOfServer(p.serverId, principal.email),
        accessPatterns.serverOfAccount(p.ownerAccountId, p.serverId),
      ]);
      if (!share || !server || server.status === 'deleted') return undefined;
      if (share.accountId !== undefined && share.accountId !== principal.accountId) return undefined;
      if (share.ownerAccountId === principal.accountId) return undefined;
      return sharedView(server, share, principal.accountId);
    }),
  );
  return found.filter((v): v is ServerView => v !== undefined).sort((a, b) => b.createdAt.localeCompare(a.createdAt));
}

function sharedView(server: ServerItem, share: ServerShareItem, accountId: string): ServerView {
  return asShared(toServerView(server), {
    actorAccountId: accountId,
    ownerEmail: share.ownerEmail,
    permissions: share.permissions,
    sftpGranted: share.subuser !== undefined,
  });
}

/**
 * A server as an invitee sees it: marked shared, the owner's e-mail and the permissions held; not
 * the owner's labels; the SFTP login the invitee's own.
 */
export function asShared<V extends ServerView>(
  view: V,
  access: Pick<SharedAccess, 'actorAccountId' | 'ownerEmail' | 'permissions' | 'sftpGranted'>,
): V {
  return {
    ...view,
    labels: {},
    sftp: {
      ...view.sftp,
      username: `${panelUserOf(access.actorAccountId).username}.${view.identifier}`,
      enabled: access.sftpGranted && view.status === 'active',
    },
    shared: true,
    sharedBy: access.ownerEmail,
    permissions: access.permissions,
  };
}

/** The shares an account holds that its SFTP password set makes subusers of (shared/servers/sftp.ts). */
export async function sftpSharesOf(principal: { accountId: string; email: string }) {
  const pointers = await accessPatterns.sharedWithEmail(principal.email, MAX_SHARED_LISTED);
  const found = await Promise.all(
    pointers.map(async (p) => {
      const [share, server] = await Promise.all([
        accessPatterns.shareOfServer(p.serverId, principal.email),
        accessPatterns.serverOfAccount(p.ownerAccountId, p.serverId),
      ]);
      if (!share || !server || server.status !== 'active') return undefined;
      if (share.accountId !== principal.accountId) return undefined;
      if (panelPermissionsOf(share.permissions).length === 0) return undefined;
      return { share, server };
    }),
  );
  return found.filter((v) => v !== undefined);
}

/** Records the invitee's subuser on its share (the next change or removal reaches it); under the server's lease (sftp.ts). */
export async function recordSubuser(share: ServerShareItem, subuser: { instanceId: string; uuid: string }): Promise<void> {
  await writeItem({
    Update: {
      Key: keys.serverShare(share.serverId, share.email),
      UpdateExpression: 'SET subuser = :s',
      ConditionExpression: 'shareId = :id',
      ExpressionAttributeValues: { ':s': subuser, ':id': share.shareId },
    },
  }).catch((err: unknown) => {
    if (!isConditionFailed(err)) throw err;
  });
}
