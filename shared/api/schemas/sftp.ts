import * as z from 'zod';
import { Uuid, int32, text } from './common.ts';

/** SFTP to a server's files: the account's own panel login, a subuser of its servers only. */

export const SftpAccess = z
  .object({
    host: text(255).nullable().meta({ description: "The node's FQDN; null on old servers." }),
    port: int32(1, 65_535).nullable().meta({ description: "Wings' SFTP port; null on old servers." }),
    username: text(120).meta({ description: '`<panel user>.<identifier>`, known before any password is set.' }),
    enabled: z.boolean().meta({
      description: 'The login may open this server: granted by POST /v1/account/sftp-password, and the server is active.',
    }),
  })
  .meta({ id: 'SftpAccess' });

/** The service makes the password; a caller's own (`password`) is refused, as is any other field. */
export const SftpPasswordRequest = z.strictObject({}).meta({ id: 'SftpPasswordRequest' });

export const SftpPassword = z
  .object({
    password: text(64).meta({ description: 'Shown once: stored nowhere, never logged. A new set replaces it.' }),
    servers: z.array(SftpAccess.extend({ serverId: Uuid })).max(1000),
  })
  .meta({ id: 'SftpPassword' });
