import { randomBytes } from 'node:crypto';
import type { z } from 'zod';
import type { SftpPassword } from '../api/schemas/sftp.ts';
import * as accessPatterns from '../db/access-patterns.ts';
import type { ServerItem } from '../db/items.ts';
import { keys } from '../db/keys.ts';
import { transact } from '../db/write.ts';
import { ApiError, notFound } from '../errors.ts';
import { getInstance, panelClientFor } from '../instances/index.ts';
import { logger } from '../observability/logger.ts';
import type { PanelClient } from '../panel/client.ts';
import { PanelRequestError } from '../panel/errors.ts';
import { panelUserOf } from './panel-user.ts';
import { recordSftpGranted } from './records.ts';
import { sftpOfServer } from './views.ts';
import { withServerLease } from './lease.ts';
import { panelPermissionsOf, recordSubuser, sftpSharesOf } from './shares.ts';
import { eventWrite } from '../webhooks/events.ts';

/**
 * SFTP without breaking isolation. Wings asks the panel whether `<panel username>.<server identifier>`
 * with a password may open a server, and the panel says yes to the owner, a root admin, or a
 * subuser holding `file.sftp` (pterodactyl/panel:app/Http/Controllers/Api/Remote/SftpAuthenticationController.php).
 * Our servers belong to the service user, so each account gets its own panel user on each panel
 * (panel-user.ts: not a root admin, owner of nothing) and becomes a subuser of that account's
 * servers only, with the file permissions below: the panel itself refuses it every other server,
 * and refuses SFTP to a suspended or installing server (`validateCurrentState`).
 */
export type SftpPasswordView = z.infer<typeof SftpPassword>;

/** What the subuser may do: SFTP and the file manager, nothing else (no power, console, settings, users). */
export const SFTP_PERMISSIONS = [
  'file.sftp',
  'file.read',
  'file.read-content',
  'file.create',
  'file.update',
  'file.delete',
  'file.archive',
] as const;

/** 24 random bytes: 192 bits, 32 characters of base64url, safe to type into any SFTP client. */
const newPassword = (): string => randomBytes(24).toString('base64url');

/**
 * Sets a new SFTP password for the account on every panel where it has a server not deleted, and
 * makes its panel user a subuser of each of those servers not yet granted. The password is made
 * here, sent to the panel (which keeps only its hash) and returned once: never stored or logged.
 *
 * Panel calls per panel: the first time 1 lookup + 1 create of the user + 1 subuser add per server;
 * after that 1 (the password, to the user id kept on the profile) + 1 per server not yet granted.
 * A server installing or suspended cannot take a subuser (the panel's 409): it stays `enabled: false`
 * until the next set. Any other failure fails the whole request; the password it may have set on
 * some panels is never shown, and a retry sets a new one everywhere.
 */
export async function setSftpPassword(accountId: string): Promise<SftpPasswordView> {
  const profile = await accessPatterns.accountById(accountId);
  if (!profile) throw notFound('Account');
  const servers = (await accessPatterns.allServersOfAccount(accountId)).filter((s) => s.status !== 'deleted');
  // Servers shared with the account (shares.ts): its panel user becomes their subuser with the share's permissions.
  const shares = await sftpSharesOf({ accountId, email: profile.email });
  if (servers.length === 0 && shares.length === 0)
    throw new ApiError('conflict', 'The account has no server: SFTP opens servers, so deploy one first');

  const password = newPassword();
  const known = profile.sftpUsers ?? {};
  const users: Record<string, number> = {};
  const granted = new Set<string>();
  const byInstance = new Map<string, ServerItem[]>();
  for (const s of servers) byInstance.set(s.instanceId, [...(byInstance.get(s.instanceId) ?? []), s]);
  for (const { server } of shares) byInstance.set(server.instanceId, byInstance.get(server.instanceId) ?? []);
  const sharedGranted = new Set<string>();
  // Panels one after another: few accounts span several, and a failure then stops before the next.
  for (const [instanceId, onPanel] of byInstance) {
    const client = await panelClientFor(await getInstance(instanceId));
    // Subusers are a Client API operation; without a client key the servers belong to the account's
    // panel user itself, and a password would give it the panel's full owner rights: no SFTP there.
    if (!client.hasClientKey) continue;
    const { userId, uuid, isNew } = await passwordOnPanel(client, accountId, known[instanceId], password);
    users[instanceId] = userId;
    for (const server of onPanel) {
      if (server.sftpGrantedAt && !isNew) granted.add(server.serverId);
      else if (await addSubuser(client, accountId, server)) granted.add(server.serverId);
    }
    for (const { server } of shares.filter((x) => x.server.instanceId === instanceId)) {
      if (await grantShared(client, { accountId, email: profile.email }, server, { instanceId, uuid })) sharedGranted.add(server.serverId);
    }
  }

  await rememberUsers(accountId, { ...known, ...users }, [...granted]);
  const at = new Date().toISOString();
  await Promise.all(
    servers.filter((s) => granted.has(s.serverId) && !s.sftpGrantedAt).map((s) => recordSftpGranted(accountId, s.serverId, at)),
  );
  return {
    password,
    servers: [
      ...servers.map((s) => ({
        serverId: s.serverId,
        ...sftpOfServer({ ...s, ...(granted.has(s.serverId) ? { sftpGrantedAt: s.sftpGrantedAt ?? at } : {}) }),
      })),
      // A shared server: the login is this account's panel user, not the owner's.
      ...shares.map(({ server }) => ({
        serverId: server.serverId,
        ...sftpOfServer({ ...server, accountId, sftpGrantedAt: sharedGranted.has(server.serverId) ? at : undefined }),
      })),
    ],
  };
}

/**
 * Sets the password on the account's panel user, creating the user with it when the panel has none.
 * With the user's id kept from last time this is one call; a user gone from the panel (an admin
 * deleted it) is made again, and `isNew` says its subuser places went with it.
 */
async function passwordOnPanel(
  client: PanelClient,
  accountId: string,
  knownId: number | undefined,
  password: string,
): Promise<{ userId: number; uuid: string; isNew: boolean }> {
  const { externalId, ...fields } = panelUserOf(accountId);
  if (knownId !== undefined) {
    try {
      const user = await client.setUserPassword(knownId, { ...fields, password });
      return { userId: user.id, uuid: user.uuid, isNew: false };
    } catch (err) {
      if (!(err instanceof PanelRequestError && err.panelStatus === 404)) throw err;
    }
  }
  const existing = await client.getUserByExternalId(externalId);
  if (existing?.root_admin) {
    // Its password would open every server of the panel: never hand one out.
    logger.error('sftp: the account panel user is a root admin on this panel; refused', { accountId, panelUserId: existing.id });
    throw new ApiError('conflict', "SFTP is not available: the account's panel user has admin rights on a panel; an operator must fix it");
  }
  if (existing) {
    await client.setUserPassword(existing.id, { ...fields, email: existing.email, username: existing.username, password });
    return { userId: existing.id, uuid: existing.uuid, isNew: knownId !== undefined };
  }
  const created = await client.createUser({ external_id: externalId, ...fields, password });
  return { userId: created.id, uuid: created.uuid, isNew: true };
}

/**
 * Adds the account's panel user as a subuser of the server with file permissions. True when it is
 * one (also when it already was, or owns the server: a server deployed on this panel before it had a
 * client key); false while the panel refuses any subuser change (installing, suspended: 409).
 */
async function addSubuser(client: PanelClient, accountId: string, server: ServerItem): Promise<boolean> {
  try {
    await client.addSubuser(server.identifier, panelUserOf(accountId).email, [...SFTP_PERMISSIONS]);
    return true;
  } catch (err) {
    if (!(err instanceof PanelRequestError)) throw err;
    const code = err.panelErrors[0]?.code;
    if (err.panelStatus === 400 && (code === 'ServerSubuserExistsException' || code === 'UserIsServerOwnerException')) return true;
    if (err.panelStatus === 409) return false;
    throw err;
  }
}

/**
 * Makes the account's panel user a subuser of a server shared with it, with the share's permissions
 * mapped to the panel's (shares.ts), under the server's lease so a removal of the share in the same
 * moment cannot leave a subuser behind: the share is read again inside it. One panel call (two
 * when the subuser already exists: its permissions are set again). False while the panel refuses (409).
 */
async function grantShared(
  client: PanelClient,
  invitee: { accountId: string; email: string },
  server: ServerItem,
  panelUser: { instanceId: string; uuid: string },
): Promise<boolean> {
  return withServerLease(server.serverId, 'users', async () => {
    const share = await accessPatterns.shareOfServer(server.serverId, invitee.email);
    if (!share || share.accountId !== invitee.accountId) return false;
    const permissions = panelPermissionsOf(share.permissions);
    if (permissions.length === 0) return false;
    try {
      await client.addSubuser(server.identifier, panelUserOf(invitee.accountId).email, permissions);
    } catch (err) {
      if (!(err instanceof PanelRequestError)) throw err;
      if (err.panelStatus === 409) return false;
      if (!(err.panelStatus === 400 && err.panelErrors[0]?.code === 'ServerSubuserExistsException')) throw err;
      await client.updateSubuser(server.identifier, panelUser.uuid, permissions);
    }
    await recordSubuser(share, panelUser);
    return true;
  });
}

/**
 * The panel user's id per instance on the profile: the next set is one call per panel, and a deploy
 * knows SFTP is set up. With it the security notice that a password was set (never the password).
 */
async function rememberUsers(accountId: string, users: Record<string, number>, serverIds: string[]): Promise<void> {
  await transact([
    {
      name: 'profile',
      Update: {
        Key: keys.account(accountId),
        UpdateExpression: 'SET sftpUsers = :users',
        ConditionExpression: 'attribute_exists(PK)',
        ExpressionAttributeValues: { ':users': users },
      },
    },
    eventWrite(accountId, 'account.sftp_password_set', { serverIds }),
  ]);
}

/**
 * The pending-repair pass's part (repairs.ts, reason `sftp`, queued by a deploy on a panel where the
 * account has SFTP set up): makes the account's user a subuser of the new server, one Client call
 * an attempt. While the install runs the panel refuses (409) and the pass tries again with its
 * backoff (15 s, 30 s, 1 min, … each pass is a minute apart); a suspended server waits for the next
 * password set instead.
 */
export async function grantSftp(server: ServerItem): Promise<void> {
  if (server.sftpGrantedAt || server.status !== 'active') return;
  const client = await panelClientFor(await getInstance(server.instanceId));
  if (!client.hasClientKey) return;
  if (!(await addSubuser(client, server.accountId, server)))
    throw Object.assign(new Error('The panel refuses subusers while the server installs'), { code: 'sftp_pending' });
  await recordSftpGranted(server.accountId, server.serverId, new Date().toISOString());
}
