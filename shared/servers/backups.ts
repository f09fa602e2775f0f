import type { z } from 'zod';
import type { Backup, BackupList, CreateBackup } from '../api/schemas/backups.ts';
import { ApiError } from '../errors.ts';
import type { PanelBackup } from '../panel/client.ts';
import { PanelRequestError } from '../panel/errors.ts';
import { controllable } from './control.ts';
import { assertCustomerMayHold, withServerLease } from './lease.ts';
import { getOwnedServer } from './read.ts';

/**
 * Server backups, through the panel's Client API on the instance's client key (the panel's
 * BackupController): list, create, a signed download address, restore and delete. A backup's id in
 * our routes is the panel's uuid. How many a server may hold is the panel's `feature_limits.backups`,
 * which deploy and resize set from the platform setting `backupsPerServer`; the panel enforces it.
 * Changes run under the server's lease (lease.ts), like power and the file operations.
 *
 * The panel's refusals become ours: its limit (400 TooManyBackupsException) is 422
 * `limit_exceeded`; its backup throttle (429, 2 backups per 10 minutes per server by default) is
 * 429 `rate_limited` with Retry-After; a locked backup, a restore the server's state or the
 * backup's does not allow (400) are 409 `conflict`; an unknown backup is 404.
 */
const SIGNED_URL_SECONDS = 15 * 60;
/** The panel pages backups by 50; more pages than this are not read (the limit is far below). */
const MAX_PAGES = 4;

const iso = (panelTime: string): string => new Date(panelTime).toISOString();

export function toBackup(b: PanelBackup): z.infer<typeof Backup> {
  return {
    id: b.uuid,
    name: b.name,
    status: b.completed_at === null ? 'in_progress' : b.is_successful ? 'completed' : 'failed',
    locked: b.is_locked,
    ignored: b.ignored_files ?? [],
    sizeBytes: b.bytes ?? 0,
    checksum: b.checksum,
    createdAt: iso(b.created_at),
    completedAt: b.completed_at === null ? null : iso(b.completed_at),
  };
}

/** The panel's backup refusals in our terms; anything else passes through. */
async function onBackups<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (!(err instanceof PanelRequestError)) throw err;
    const entry = err.panelErrors[0];
    const detail = entry?.detail ?? '';
    if (err.panelStatus === 404) throw new ApiError('not_found', 'No such backup on this server');
    if (err.panelStatus === 400 && entry?.code === 'TooManyBackupsException') {
      const limit = Number(/limit of (\d+) backups/.exec(detail)?.[1] ?? 0);
      throw new ApiError(
        'limit_exceeded',
        limit > 0
          ? `This server holds its limit of ${limit} backups; delete one first`
          : 'Backups are not available on this server (its backup limit is 0)',
        { limit },
      );
    }
    if (err.panelStatus === 429) {
      const retryAfterSeconds = Number(err.details && (err.details as { retryAfterSeconds?: number }).retryAfterSeconds) || 60;
      throw new ApiError(
        'rate_limited',
        `The panel allows only a few backups per server in a short time: ${detail || 'too many backups'} Retry in ${retryAfterSeconds} s.`,
        { retryAfterSeconds },
        { 'Retry-After': String(retryAfterSeconds) },
      );
    }
    if (err.panelStatus === 400 && entry?.code === 'BackupLockedException') {
      throw new ApiError('conflict', 'The backup is locked; a locked backup cannot be deleted');
    }
    if (err.panelStatus === 400) throw new ApiError('conflict', detail || 'The panel refused this backup operation');
    throw err;
  }
}

async function underLease<T>(accountId: string, serverId: string, fn: () => Promise<T>): Promise<T> {
  await assertCustomerMayHold(await getOwnedServer(accountId, serverId));
  return withServerLease(serverId, 'backups', fn);
}

export async function listBackups(accountId: string, serverId: string): Promise<z.infer<typeof BackupList>> {
  const { server, client } = await controllable(accountId, serverId);
  const data: PanelBackup[] = [];
  let count = 0;
  for (let page = 1; page <= MAX_PAGES; page++) {
    const result = await onBackups(() => client.listBackups(server.identifier, page));
    data.push(...result.data);
    count = result.backupCount;
    if (page >= result.totalPages) break;
  }
  return { data: data.map(toBackup), count };
}

export async function createBackup(accountId: string, serverId: string, input: z.infer<typeof CreateBackup>) {
  return underLease(accountId, serverId, async () => {
    const { server, client } = await controllable(accountId, serverId);
    const created = await onBackups(() =>
      client.createBackup(server.identifier, {
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.ignored?.length ? { ignored: input.ignored.join('\n') } : {}),
        ...(input.locked !== undefined ? { is_locked: input.locked } : {}),
      }),
    );
    return toBackup(created);
  });
}

export async function backupDownloadLink(accountId: string, serverId: string, backupId: string) {
  const { server, client } = await controllable(accountId, serverId);
  const url = await onBackups(() => client.backupDownloadUrl(server.identifier, backupId));
  return { id: backupId, url, expiresAt: new Date(Date.now() + SIGNED_URL_SECONDS * 1000).toISOString() };
}

export async function restoreBackup(accountId: string, serverId: string, backupId: string, truncate: boolean) {
  return underLease(accountId, serverId, async () => {
    const { server, client } = await controllable(accountId, serverId);
    await onBackups(() => client.restoreBackup(server.identifier, backupId, truncate));
    return { id: serverId, backupId, truncate, restoring: true as const };
  });
}

export async function deleteBackup(accountId: string, serverId: string, backupId: string) {
  return underLease(accountId, serverId, async () => {
    const { server, client } = await controllable(accountId, serverId);
    await onBackups(() => client.deleteBackup(server.identifier, backupId));
    return { id: backupId, deleted: true as const };
  });
}
