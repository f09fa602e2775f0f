import * as z from 'zod';
import { Count, SafeText, Timestamp, Uuid, int64, text } from './common.ts';
import { FilePath } from './servers.ts';

/** Server backups through the panel (shared/servers/backups.ts); a backup's id is the panel's uuid. */

export const BackupParams = z.object({ id: Uuid, backupId: Uuid }).strict();

export const Backup = z
  .object({
    id: Uuid.meta({ description: "The panel's backup uuid." }),
    name: text(191),
    status: z.enum(['in_progress', 'completed', 'failed']).meta({
      description: 'in_progress until Wings has written the archive (`completedAt` null); failed backups do not count against the limit.',
    }),
    locked: z.boolean().meta({ description: 'A locked, completed backup cannot be deleted.' }),
    ignored: z.array(text(4096)).max(1000),
    sizeBytes: int64(0, Number.MAX_SAFE_INTEGER),
    checksum: text(255).nullable(),
    createdAt: Timestamp,
    completedAt: Timestamp.nullable(),
  })
  .meta({ id: 'Backup' });

export const BackupList = z
  .object({
    data: z.array(Backup).max(1000),
    count: Count.meta({ description: "Backups that count against the server's limit (in progress or completed)." }),
  })
  .meta({ id: 'BackupList' });

export const CreateBackup = z
  .object({
    name: SafeText.trim().min(1).max(191).optional().meta({ description: 'Default: "Backup at <time>".' }),
    ignored: z.array(FilePath).max(100).optional().meta({ description: 'Paths left out of the archive.' }),
    locked: z.boolean().optional().meta({ description: 'Locked backups cannot be deleted (default false).' }),
  })
  .strict()
  .meta({ id: 'CreateBackup' });

export const RestoreBackup = z
  .object({ truncate: z.boolean().optional().meta({ description: "Delete the server's files first (default false)." }) })
  .strict()
  .meta({ id: 'RestoreBackup' });
export const RestoreResult = z.object({ id: Uuid, backupId: Uuid, truncate: z.boolean(), restoring: z.literal(true) }).meta({
  id: 'RestoreResult',
  description: 'Wings is restoring; until it is done the server refuses power, console and file calls (409 `conflict`).',
});

export const BackupLink = z
  .object({
    id: Uuid,
    url: z.url().max(8192).meta({ description: 'Signed, single-use address of the tar.gz on the node, valid 15 minutes; no key needed.' }),
    expiresAt: Timestamp,
  })
  .meta({ id: 'BackupLink' });

export const DeletedBackup = z.object({ id: Uuid, deleted: z.literal(true) }).meta({ id: 'DeletedBackup' });
