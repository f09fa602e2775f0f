import type { z } from 'zod';
import type { Backup, BackupList, CreateBackup, LockBackup, RestoreBackup } from '../api/schemas/backups.ts';
import { ApiError } from '../errors.ts';
import { PanelRequestError } from '../panel/errors.ts';
import { featureLimitsOf } from '../pricing/index.ts';
import { getSettings } from '../settings/index.ts';
import type { Envelope, ListEnvelope } from '../panel/types.ts';
import { controllable } from './control.ts';
import type { RouteContext } from './files.ts';
import { assertCustomerMayHold, withServerLease } from './lease.ts';
import { getOwnedServer } from './read.ts';

/**
 * Server backups, through the panel's Client API on the instance's client key (the panel's
 * BackupController): list, create, a signed download address, restore and delete. A backup's id in
 * our routes is the panel's uuid. How many a server may hold is the panel's `feature_limits.backups`,
 * which deploy and resize set from the platform setting `backupsPerServer`; the panel enforces it.
 * Changes run under the server's lease (lease.ts), like power and the file operations. Loaded by
 * the servers function on the first backup call; each function takes the route's context and
 * names its activity entry (backup id, name, truncate; never contents). One panel call each.
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

type BackupRoute<Body = unknown> = RouteContext<Body> & { params: { id: string; backupId?: string } };

/** GET backups (the panel pages them by 50: one call for any limit below that). */
export async function listBackups({ principal, params }: BackupRoute): Promise<z.infer<typeof BackupList>> {
  const { server, client } = await controllable(principal.accountId, params.id);
  const data: PanelBackup[] = [];
  let count = 0;
  for (let page = 1; page <= MAX_PAGES; page++) {
    const list = await onBackups(() =>
      client.serverCall<ListEnvelope<PanelBackup> & { meta?: { backup_count?: number } }>(server.identifier, 'GET', '/backups', {
        query: { page, per_page: 50 },
        idempotent: true,
        expect: 'json',
      }),
    );
    data.push(...list.data.map((d) => d.attributes));
    count = Number(list.meta?.backup_count ?? data.length);
    if (page >= (list.meta?.pagination?.total_pages ?? 1)) break;
  }
  // The limit deploy, resize and add-on changes set on the panel, from the record: no extra panel call.
  return { data: data.map(toBackup), count, limit: featureLimitsOf(server.addons, await getSettings()).backups };
}

/** POST backups; not retried (a second attempt would make a second backup). `ignored` goes as one path per line. */
export async function createBackup({ principal, params, body, audit }: BackupRoute<z.infer<typeof CreateBackup>>) {
  audit.target = `server:${params.id}`;
  audit.details = { name: body.name ?? null, locked: body.locked ?? false, ignored: body.ignored?.length ?? 0 };
  return underLease(principal.accountId, params.id, async () => {
    const { server, client } = await controllable(principal.accountId, params.id);
    const created = await onBackups(() =>
      client.serverCall<Envelope<PanelBackup>>(server.identifier, 'POST', '/backups', {
        json: {
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(body.ignored?.length ? { ignored: body.ignored.join('\n') } : {}),
          ...(body.locked !== undefined ? { is_locked: body.locked } : {}),
        },
        idempotent: false,
        expect: 'json',
      }),
    );
    const backup = toBackup(created.attributes);
    audit.details = { backupId: backup.id, name: backup.name, locked: backup.locked, ignored: backup.ignored.length };
    return backup;
  });
}

/** GET download: a signed Wings address of the archive (15 minutes, single use). */
export async function backupDownloadLink({ principal, params, audit }: BackupRoute) {
  const backupId = params.backupId ?? '';
  audit.target = `server:${params.id}`;
  audit.details = { backupId };
  const { server, client } = await controllable(principal.accountId, params.id);
  const signed = await onBackups(() =>
    client.serverCall<Envelope<{ url: string }>>(server.identifier, 'GET', `/backups/${backupId}/download`, {
      idempotent: true,
      expect: 'json',
    }),
  );
  return { id: backupId, url: signed.attributes.url, expiresAt: new Date(Date.now() + SIGNED_URL_SECONDS * 1000).toISOString() };
}

/** POST restore; not retried (the first attempt may have started it: the server is then `restoring_backup`). */
export async function restoreBackup({ principal, params, body, audit }: BackupRoute<z.infer<typeof RestoreBackup>>) {
  const backupId = params.backupId ?? '';
  const truncate = body.truncate ?? false;
  audit.target = `server:${params.id}`;
  audit.details = { backupId, truncate };
  return underLease(principal.accountId, params.id, async () => {
    const { server, client } = await controllable(principal.accountId, params.id);
    await onBackups(() =>
      client.serverCall(server.identifier, 'POST', `/backups/${backupId}/restore`, { json: { truncate }, idempotent: false }),
    );
    return { id: params.id, backupId, truncate, restoring: true as const };
  });
}

/**
 * POST lock: the panel only toggles (BackupController::toggleLock), so the toggle's answer is
 * checked and, when the backup already was as asked, toggled back: one call for a change, two for
 * a no-op. Under the lease, so no other change of ours toggles it in between.
 */
export async function lockBackup({ principal, params, body, audit }: BackupRoute<z.infer<typeof LockBackup>>) {
  const backupId = params.backupId ?? '';
  audit.target = `server:${params.id}`;
  audit.details = { backupId, locked: body.locked };
  return underLease(principal.accountId, params.id, async () => {
    const { server, client } = await controllable(principal.accountId, params.id);
    const toggle = () =>
      onBackups(() =>
        client.serverCall<Envelope<PanelBackup>>(server.identifier, 'POST', `/backups/${backupId}/lock`, {
          idempotent: false,
          expect: 'json',
        }),
      );
    let backup = (await toggle()).attributes;
    if (backup.is_locked !== body.locked) backup = (await toggle()).attributes;
    return toBackup(backup);
  });
}

export async function deleteBackup({ principal, params, audit }: BackupRoute) {
  const backupId = params.backupId ?? '';
  audit.target = `server:${params.id}`;
  audit.details = { backupId };
  return underLease(principal.accountId, params.id, async () => {
    const { server, client } = await controllable(principal.accountId, params.id);
    await onBackups(() => client.serverCall(server.identifier, 'DELETE', `/backups/${backupId}`, { idempotent: true }));
    return { id: backupId, deleted: true as const };
  });
}

/** A backup as the Client API shows it (pterodactyl/panel:app/Transformers/Api/Client/BackupTransformer.php). */
export interface PanelBackup {
  uuid: string;
  is_successful: boolean;
  is_locked: boolean;
  name: string;
  ignored_files: string[];
  checksum: string | null;
  bytes: number;
  created_at: string;
  completed_at: string | null;
}
