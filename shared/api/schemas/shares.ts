import * as z from 'zod';
import { SERVER_PERMISSIONS, MAX_SHARES_PER_SERVER } from '../server-permissions.ts';
import { Timestamp, Uuid, text } from './common.ts';

/** Shared access: an owner's invitations of other accounts to one server (shared/servers/shares.ts). */

export const ServerPermissionName = z.enum(SERVER_PERMISSIONS).meta({
  id: 'ServerPermission',
  description:
    '`read-only`: see the server, its usage and activity (implied by every other). `console` also lets the console socket send power signals, so it brings `power` with it.',
});

export const Permissions = z.array(ServerPermissionName).min(1).max(SERVER_PERMISSIONS.length);

export const ServerUser = z
  .object({
    id: Uuid,
    email: text(254),
    permissions: z.array(ServerPermissionName).max(SERVER_PERMISSIONS.length),
    joinedAt: Timestamp.nullable().meta({ description: 'When the invited account first used the share; null until then.' }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'ServerUser' });

export const ServerUserList = z.object({ data: z.array(ServerUser).max(MAX_SHARES_PER_SERVER) }).meta({ id: 'ServerUserList' });

export const InviteServerUser = z
  .object({
    email: z.email().max(254),
    permissions: Permissions,
  })
  .strict()
  .meta({ id: 'InviteServerUser' });

export const UpdateServerUser = z.object({ permissions: Permissions }).strict().meta({ id: 'UpdateServerUser' });

export const ShareParams = z.object({ id: Uuid, shareId: Uuid });

export const RemovedServerUser = z.object({ id: Uuid, removed: z.literal(true) }).meta({ id: 'RemovedServerUser' });
export const LeftServer = z.object({ serverId: Uuid, left: z.literal(true) }).meta({ id: 'LeftServer' });
