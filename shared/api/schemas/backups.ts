import * as z from 'zod';
import { Count, SafeText, Timestamp, Uuid, int64, text } from './common.ts';
import { FilePath } from './servers.ts';

/** Server backups through the panel (shared/servers/backups.ts); a backup's id is the panel's uuid. */

export const BackupParams = z.object({ id: Uuid, backupId: Uuid }).strict();

export const Backup = z
  .object({
    id: Uuid,
    name: text(191),
    status: z.enum(['in_progress', 'completed', 'failed']),
    locked: z.boolean(),
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
    count: Count.meta({ description: 'Backups counted against the limit.' }),
    limit: Count.optional().meta({
      description:
        "How many backups the server may hold (the panel's `feature_limits.backups`): what every server includes plus the backup add-ons bought. A changed platform setting reaches a server at its next resize or add-on change.",
    }),
  })
  .meta({ id: 'BackupList' });

export const CreateBackup = z
  .object({
    name: SafeText.trim().min(1).max(191).optional(),
    ignored: z.array(FilePath).max(100).optional().meta({ description: 'Paths left out.' }),
    locked: z.boolean().optional(),
  })
  .strict()
  .meta({ id: 'CreateBackup' });

export const RestoreBackup = z
  .object({ truncate: z.boolean().optional().meta({ description: 'Delete the files first.' }) })
  .strict()
  .meta({ id: 'RestoreBackup' });
export const RestoreResult = z
  .object({ id: Uuid, backupId: Uuid, truncate: z.boolean(), restoring: z.literal(true) })
  .meta({ id: 'RestoreResult' });

export const LockBackup = z.object({ locked: z.boolean() }).strict().meta({ id: 'LockBackup' });

export const BackupLink = z
  .object({
    id: Uuid,
    url: z.url().max(8192).meta({ description: 'Single use, 15 minutes.' }),
    expiresAt: Timestamp,
  })
  .meta({ id: 'BackupLink' });

export const DeletedBackup = z.object({ id: Uuid, deleted: z.literal(true) }).meta({ id: 'DeletedBackup' });
