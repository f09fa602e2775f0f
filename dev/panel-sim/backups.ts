// Server backups (Client API `/api/client/servers/{server}/backups`, pterodactyl/panel:routes/api-client.php)
// and the Wings side they drive, on the local ("wings") adapter:
// - BackupController + InitiateBackupService: the throttle (config/backups.php: 2 per 600 s per
//   server, deleted backups included) answers 429 TooManyRequestsHttpException; then the server's
//   `backup_limit` (feature_limits.backups; 0 = none) counted over non-failed backups answers 400
//   TooManyBackupsException. The backup is created with `completed_at` null and Wings finishes it
//   in the background (here after `backupMs`, or when a test ends a held one).
// - DeleteBackupService: a locked, completed, successful backup is 400 BackupLockedException.
// - restore: 400 unless the server's status is null and the backup completed; the status is
//   `restoring_backup` (the state gate's 409 for every other call) until Wings is done; Wings stops
//   the process, truncates first when asked, writes the archive back and tells the panel.
// - download: a signed `{node}/download/backup?token=` link, 15 minutes, single use (Wings).
// The archive a backup holds is a real tar.gz of the server's files (archives.ts).
import { createHash, randomUUID } from 'node:crypto';
import { snapshotArchive, extract, readArchive } from './archives.ts';
import { PanelError, ValidationError, atom, item, list, notFound, paginate } from './http.ts';
import type { Ctx, Reply, RouteDef, SimContext } from './http.ts';
import { validate } from './rules.ts';
import type { Server } from './state.ts';
import { newRequestId, nodeConnectionAddress } from './wings.ts';
import type { Wings } from './wings.ts';

export interface SimBackup {
  uuid: string;
  serverId: number;
  name: string;
  ignored: string[];
  locked: boolean;
  successful: boolean;
  checksum: string | null;
  bytes: number;
  createdAt: Date;
  completedAt: Date | null;
  deletedAt: Date | null;
  archive: Buffer | null;
}

export interface BackupOptions {
  /** Time Wings takes to finish a backup or a restore; 'held': only when a test calls end(). Default 500. */
  backupMs: number | 'held';
  /** config/backups.php throttles: `limit` backups per `periodSeconds` per server (0 turns it off). */
  throttle: { limit: number; periodSeconds: number };
}

/** The backups of one simulator (kept beside its Wings). */
export class SimBackups {
  options: BackupOptions = { backupMs: 500, throttle: { limit: 2, periodSeconds: 600 } };
  all: SimBackup[] = [];
  /** Unfinished work (backups being made, restores running) per server id, ended by end(). */
  private pending = new Map<number, Array<() => void>>();
  /** `unique_id`s of backup download tokens already used. */
  usedTokens = new Set<string>();

  of(server: Server): SimBackup[] {
    return this.all.filter((b) => b.serverId === server.id && b.deletedAt === null);
  }

  later(server: Server, fn: () => void): void {
    const queue = this.pending.get(server.id) ?? [];
    let done = false;
    const run = () => {
      if (done) return;
      done = true;
      this.pending.set(
        server.id,
        (this.pending.get(server.id) ?? []).filter((f) => f !== run),
      );
      fn();
    };
    queue.push(run);
    this.pending.set(server.id, queue);
    if (this.options.backupMs !== 'held') setTimeout(run, this.options.backupMs).unref();
  }

  /** Test control: finishes the server's running backups and restores now; answers how many there were. */
  end(server: Server): number {
    const queue = [...(this.pending.get(server.id) ?? [])];
    for (const run of queue) run();
    return queue.length;
  }
}

const stores = new WeakMap<Wings, SimBackups>();

/** The backups of the simulator this Wings belongs to. */
export function backupsOf(wings: Wings): SimBackups {
  let store = stores.get(wings);
  if (!store) {
    store = new SimBackups();
    stores.set(wings, store);
  }
  return store;
}

/** BackupTransformer. */
function transform(b: SimBackup): ReturnType<typeof item> {
  return item('backup', {
    uuid: b.uuid,
    is_successful: b.successful,
    is_locked: b.locked,
    name: b.name,
    ignored_files: b.ignored,
    checksum: b.checksum,
    bytes: b.bytes,
    created_at: atom(b.createdAt),
    completed_at: b.completedAt ? atom(b.completedAt) : null,
  });
}

const bool = (v: unknown): boolean => v === true || v === 1 || v === '1' || v === 'true';

/**
 * InitiateBackupService::handle: the throttle (429), then the limit over non-failed backups (400
 * TooManyBackupsException); with `override` (a scheduled backup) a server at its limit loses its
 * oldest unlocked backup instead. The backup starts in Wings and completes in the background.
 */
export function initiateBackup(
  sim: SimContext,
  s: Server,
  input: { name: string | null; ignored: string[]; locked: boolean },
  override = false,
): SimBackup {
  const { state, wings } = sim;
  const store = backupsOf(wings);
  const { limit, periodSeconds } = store.options.throttle;
  if (periodSeconds > 0) {
    const since = Date.now() - periodSeconds * 1000;
    const recent = store.all.filter((b) => b.serverId === s.id && b.createdAt.getTime() >= since);
    if (recent.length >= limit) {
      const last = recent[recent.length - 1]!;
      const retry = Math.max(0, Math.ceil((last.createdAt.getTime() + periodSeconds * 1000 - Date.now()) / 1000));
      throw new PanelError(
        429,
        'TooManyRequestsHttpException',
        `Only ${limit} backups may be generated within a ${periodSeconds} second span of time.`,
        { 'retry-after': String(retry) },
      );
    }
  }
  const nonFailed = store.of(s).filter((b) => b.completedAt === null || b.successful);
  const max = s.backup_limit ?? 0;
  if (!max || nonFailed.length >= max) {
    const oldest =
      override && max > 0 ? nonFailed.filter((b) => !b.locked).sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())[0] : undefined;
    if (!oldest) {
      throw new PanelError(
        400,
        'TooManyBackupsException',
        `Cannot create a new backup, this server has reached its limit of ${max} backups.`,
        {},
        'back',
      );
    }
    oldest.deletedAt = new Date();
    oldest.archive = null;
  }
  const now = new Date();
  const name = input.name?.trim() ?? '';
  const b: SimBackup = {
    uuid: randomUUID(),
    serverId: s.id,
    name: name || `Backup at ${now.toISOString().slice(0, 19).replace('T', ' ')}`,
    ignored: input.ignored,
    locked: input.locked,
    successful: false,
    checksum: null,
    bytes: 0,
    createdAt: now,
    completedAt: null,
    deletedAt: null,
    archive: null,
  };
  store.all.push(b);
  store.later(s, () => {
    const current = state.servers.get(s.id);
    if (current && b.deletedAt === null) {
      const archive = snapshotArchive(wings, current, b.ignored);
      b.archive = archive;
      b.successful = true;
      b.bytes = archive.length;
      b.checksum = `sha1:${createHash('sha1').update(archive).digest('hex')}`;
      b.completedAt = new Date();
    }
  });
  return b;
}

export function backupRoutes(sim: SimContext, bind: (ctx: Ctx) => Server): RouteDef[] {
  const { state, wings } = sim;
  const store = backupsOf(wings);
  const B = '/api/client/servers/{server}/backups';

  const check = (ctx: Ctx, rules: Record<string, string>) => {
    const failures = validate(ctx.input, rules);
    if (failures.length > 0) throw new ValidationError(failures);
  };
  /** SubstituteClientBindings: the backup by uuid, and only one of this server (else 404). */
  const backupOf = (ctx: Ctx, s: Server): SimBackup => {
    const b = store.of(s).find((x) => x.uuid === ctx.params.backup);
    if (!b) throw notFound();
    return b;
  };

  return [
    {
      method: 'GET',
      path: B,
      name: 'api:client:server.backups',
      handler: (ctx) => {
        const s = bind(ctx);
        const rawPer = ctx.query.per_page;
        const perPage = Math.min(rawPer && /^\d+$/.test(rawPer) && Number(rawPer) > 0 ? Number(rawPer) : 20, 50);
        const backups = store.of(s);
        const page = paginate({ ...ctx, query: { ...ctx.query, per_page: String(perPage) } }, backups, sim.baseUrl());
        const count = backups.filter((b) => b.completedAt === null || b.successful).length;
        return { status: 200, body: { ...list(page.data.map(transform)), meta: { ...page.meta, backup_count: count } } };
      },
    },
    {
      method: 'POST',
      path: B,
      name: 'api:client:server.backups.store',
      handler: (ctx) => {
        const s = bind(ctx);
        check(ctx, { name: 'nullable|string|max:191', is_locked: 'nullable|boolean', ignored: 'nullable|string' });
        const b = initiateBackup(sim, s, {
          name: typeof ctx.input.name === 'string' ? ctx.input.name : null,
          ignored: String(ctx.input.ignored ?? '')
            .split('\n')
            .filter((l) => l.length > 0),
          locked: bool(ctx.input.is_locked),
        });
        return { status: 200, body: transform(b) };
      },
    },
    {
      method: 'GET',
      path: `${B}/{backup}`,
      name: 'api:client:server.backups.view',
      handler: (ctx) => ({ status: 200, body: transform(backupOf(ctx, bind(ctx))) }),
    },
    {
      method: 'GET',
      path: `${B}/{backup}/download`,
      name: 'api:client:server.backups.download',
      handler: (ctx) => {
        const s = bind(ctx);
        const b = backupOf(ctx, s);
        const node = state.nodes.get(s.node_id);
        if (!node) throw notFound();
        const token = wings.signJwt(node, { backup_uuid: b.uuid, server_uuid: s.uuid }, 900, `${ctx.user.id}${s.uuid}`, sim.baseUrl());
        return {
          status: 200,
          body: { object: 'signed_url', attributes: { url: `${nodeConnectionAddress(node)}/download/backup?token=${token}` } },
        };
      },
    },
    {
      method: 'POST',
      path: `${B}/{backup}/lock`,
      name: 'api:client:server.backups.lock',
      handler: (ctx) => {
        const b = backupOf(ctx, bind(ctx));
        b.locked = !b.locked;
        return { status: 200, body: transform(b) };
      },
    },
    {
      method: 'POST',
      path: `${B}/{backup}/restore`,
      name: 'api:client:server.backups.restore',
      handler: (ctx) => {
        const s = bind(ctx);
        const b = backupOf(ctx, s);
        check(ctx, { truncate: 'required|boolean' });
        if (s.status !== null) {
          throw new PanelError(
            400,
            'BadRequestHttpException',
            'This server is not currently in a state that allows for a backup to be restored.',
          );
        }
        if (!b.successful && b.completedAt === null) {
          throw new PanelError(400, 'BadRequestHttpException', 'This backup cannot be restored at this time: not completed or failed.');
        }
        s.status = 'restoring_backup';
        s.updated_at = new Date();
        // Wings: truncate at once when asked, then stop the process and write the archive back in the background.
        const rt = wings.runtime(s);
        if (bool(ctx.input.truncate)) for (const key of [...rt.files.keys()]) if (key !== '') rt.files.delete(key);
        rt.resourceCache = null;
        store.later(s, () => {
          const current = state.servers.get(s.id);
          if (!current) return;
          wings.kill(current);
          const entries = b.archive ? readArchive(b.archive) : [];
          extract(wings, current, '/', entries ?? []);
          rt.console.push('[Pterodactyl Daemon]: Completed server restoration from local backup.');
          if (current.status === 'restoring_backup') current.status = null;
          current.updated_at = new Date();
        });
        return { status: 204 };
      },
    },
    {
      method: 'DELETE',
      path: `${B}/{backup}`,
      name: 'api:client:server.backups.delete',
      handler: (ctx) => {
        const b = backupOf(ctx, bind(ctx));
        if (b.locked && b.successful && b.completedAt !== null) {
          throw new PanelError(400, 'BackupLockedException', 'Cannot delete a backup that is marked as locked.', {}, 'back');
        }
        b.deletedAt = new Date();
        b.archive = null;
        return { status: 204 };
      },
    },
  ];
}

/** Wings `GET /download/backup?token=`: the archive of a completed local backup, once per token. */
export function downloadBackup(wings: Wings, state: SimContext['state'], url: URL): Reply {
  const error = (status: number, message: string): Reply => ({ status, body: { error: message, request_id: newRequestId() } });
  const payload = wings.verifyJwt(url.searchParams.get('token') ?? '');
  if (!payload) return error(500, 'An unexpected error was encountered while processing this request');
  const store = backupsOf(wings);
  const uniqueId = String(payload.unique_id ?? '');
  const unique = !store.usedTokens.has(uniqueId);
  store.usedTokens.add(uniqueId);
  const s = [...state.servers.values()].find((x) => x.uuid === payload.server_uuid);
  if (!s || !unique) return error(404, 'The requested resource was not found on this server.');
  const b = store.all.find((x) => x.uuid === payload.backup_uuid && x.deletedAt === null);
  if (!b?.archive) return error(404, 'The requested backup was not found on this server.');
  return {
    status: 200,
    headers: {
      'content-type': 'application/octet-stream',
      'content-disposition': `attachment; filename=${JSON.stringify(`${b.uuid}.tar.gz`)}`,
    },
    raw: b.archive,
  };
}
