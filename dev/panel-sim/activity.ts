// Server activity (Client API `GET /api/client/servers/{server}/activity`, pterodactyl/panel:
// ActivityLogController + ActivityLogTransformer) and the events the Client API routes log:
// - Each controller logs `Activity::event('server:…')` after it succeeded (PowerController,
//   CommandController, FileController, BackupController), with the request's user as actor, the API
//   key when one was used (`is_api`), the request IP and the controller's properties. The
//   `timestamp` column is a DATETIME: second precision.
// - The list: the server's events (the server is the subject), `server:file.upload` left out
//   (ActivityLog::DISABLED_EVENTS), `filter[event]` partial, `sort` by `timestamp` only (no default
//   order: the panel's front end asks for `-timestamp`; without it the rows come in insertion
//   order), `per_page` default 25 capped at 100, `include=actor` (the client UserTransformer, null
//   for a system actor). `ip` only for the actor's own events (or a root admin); an `ip` property is
//   `[hidden]` to anyone else; an array property gains `<key>_count`, renamed `count` when alone.
import { createHash } from 'node:crypto';
import { applyQuery, atom, list, nullResource, paginate, partial } from './http.ts';
import type { Ctx, Reply, RouteDef, SimContext } from './http.ts';
import { isPhpArray, phpString } from './rules.ts';
import type { PanelState, Server, User } from './state.ts';
import { backupsOf } from './backups.ts';

export interface SimActivity {
  id: number;
  batch: string | null;
  event: string;
  serverId: number;
  actorId: number | null;
  /** The API key's identifier when the request used one (the panel keeps its id). */
  apiKey: string | null;
  ip: string | null;
  properties: Record<string, unknown>;
  timestamp: Date;
}

const DISABLED_EVENTS = new Set(['server:file.upload']);
const logs = new WeakMap<PanelState, SimActivity[]>();

export function activityOf(state: PanelState): SimActivity[] {
  let all = logs.get(state);
  if (!all) {
    all = [];
    logs.set(state, all);
  }
  return all;
}

/** ActivityLogService::log: one row, the server as its subject, stamped to the second. */
export function logActivity(
  state: PanelState,
  server: Server,
  event: string,
  by: { user: User | null; apiKey: string | null; ip: string | null },
  properties: Record<string, unknown> = {},
): SimActivity {
  const now = new Date();
  now.setUTCMilliseconds(0);
  const entry: SimActivity = {
    id: state.nextId('activity_logs'),
    batch: null,
    event,
    serverId: server.id,
    actorId: by.user?.id ?? null,
    apiKey: by.apiKey,
    ip: by.ip,
    properties,
    timestamp: now,
  };
  activityOf(state).push(entry);
  return entry;
}

const input = (ctx: Ctx, key: string): unknown => ctx.input[key] ?? null;
const strings = (value: unknown): unknown => (isPhpArray(value) ? Object.values(value as Record<string, unknown>) : value);

/**
 * The event a Client API route logs once it succeeded, with its properties (the controllers' calls),
 * or null for a route that logs nothing (reads of lists, the websocket token, the upload link).
 */
function eventOf(
  ctx: Ctx,
  reply: Reply,
  backupBefore: { name: string; locked: boolean; successful: boolean } | undefined,
): [string, Record<string, unknown>] | null {
  const attributes = (reply.body as { attributes?: Record<string, unknown> } | undefined)?.attributes ?? {};
  switch (ctx.routeName) {
    case 'api:client:server.power':
      return [`server:power.${String(input(ctx, 'signal')).toLowerCase()}`, {}];
    case 'api:client:server.command':
      return ['server:console.command', { command: input(ctx, 'command') }];
    case 'api:client:server.files.contents':
      return ['server:file.read', { file: input(ctx, 'file') }];
    case 'api:client:server.files.download':
      return ['server:file.download', { file: input(ctx, 'file') }];
    case 'api:client:server.files.write':
      return ['server:file.write', { file: input(ctx, 'file') }];
    case 'api:client:server.files.create-folder':
      return ['server:file.create-directory', { name: input(ctx, 'name'), directory: input(ctx, 'root') }];
    case 'api:client:server.files.rename':
      return ['server:file.rename', { directory: input(ctx, 'root'), files: strings(input(ctx, 'files')) }];
    case 'api:client:server.files.compress':
      return ['server:file.compress', { directory: input(ctx, 'root'), files: strings(input(ctx, 'files')) }];
    case 'api:client:server.files.decompress':
      return ['server:file.decompress', { directory: input(ctx, 'root'), files: input(ctx, 'file') }];
    case 'api:client:server.files.delete':
      return ['server:file.delete', { directory: input(ctx, 'root'), files: strings(input(ctx, 'files')) }];
    case 'api:client:server.backups.store':
      return ['server:backup.start', { name: attributes.name, locked: attributes.is_locked === true }];
    case 'api:client:server.backups.lock':
      // The panel names the action by the state before the toggle.
      return [backupBefore?.locked ? 'server:backup.unlock' : 'server:backup.lock', { name: attributes.name }];
    case 'api:client:server.backups.download':
      return ['server:backup.download', { name: backupBefore?.name ?? null }];
    case 'api:client:server.backups.restore':
      return ['server:backup.restore', { name: backupBefore?.name ?? null, truncate: input(ctx, 'truncate') }];
    case 'api:client:server.backups.delete':
      return ['server:backup.delete', { name: backupBefore?.name ?? null, failed: backupBefore ? !backupBefore.successful : false }];
    default:
      return null;
  }
}

/** Wraps the Client API routes so each logs its event after it succeeded, as the controllers do. */
export function logsActivity(sim: SimContext, routes: RouteDef[]): RouteDef[] {
  return routes.map((def) => ({
    ...def,
    handler: async (ctx) => {
      const found = ctx.params.backup ? backupsOf(sim.wings).all.find((b) => b.uuid === ctx.params.backup) : undefined;
      const backupBefore = found ? { name: found.name, locked: found.locked, successful: found.successful } : undefined;
      const reply = await def.handler(ctx);
      const server = ctx.params.server ? sim.state.serverByIdentifier(ctx.params.server) : undefined;
      if (!server || reply.status >= 400) return reply;
      const event = eventOf(ctx, reply, backupBefore);
      if (event) {
        logActivity(
          sim.state,
          server,
          event[0],
          { user: ctx.user, apiKey: ctx.key.identifier, ip: ctx.req.socket.remoteAddress ?? null },
          event[1],
        );
      }
      return reply;
    },
  }));
}

/** ActivityLogTransformer::properties. */
function transformProperties(entry: SimActivity, viewerIsActor: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const counts: string[] = [];
  for (const [key, raw] of Object.entries(entry.properties)) {
    if (key === 'ip' && !viewerIsActor) {
      out[key] = '[hidden]';
      continue;
    }
    let value = raw;
    if (!Array.isArray(value)) {
      if (key === 'directory') value = `/${phpString(value ?? '').replace(/^\/+|\/+$/g, '')}/`.replaceAll('//', '/');
      out[key] = value;
      continue;
    }
    out[key] = value;
    out[`${key}_count`] = value.length;
    counts.push(`${key}_count`);
  }
  if (counts.length === 1) {
    out.count = out[counts[0]!];
    delete out[counts[0]!];
  }
  return out;
}

/** The client UserTransformer. */
function clientUser(u: User): Record<string, unknown> {
  return {
    object: 'user',
    attributes: {
      uuid: u.uuid,
      username: u.username,
      email: u.email,
      image: `https://gravatar.com/avatar/${createHash('md5').update(u.email.toLowerCase()).digest('hex')}`,
      '2fa_enabled': u.use_totp,
      created_at: atom(u.created_at),
    },
  };
}

export function activityRoutes(sim: SimContext, bind: (ctx: Ctx) => Server): RouteDef[] {
  return [
    {
      method: 'GET',
      path: '/api/client/servers/{server}/activity',
      name: 'api:client:server.activity',
      handler: (ctx) => {
        const s = bind(ctx);
        const events = activityOf(sim.state).filter((e) => e.serverId === s.id && !DISABLED_EVENTS.has(e.event));
        const items = applyQuery(ctx, events, {
          filters: { event: partial((e) => e.event) },
          sorts: { timestamp: (e) => e.timestamp.getTime() },
        });
        // `min($request->query('per_page', 25), 100)`
        const rawPer = ctx.query.per_page;
        const perPage = Math.min(rawPer && /^\d+$/.test(rawPer) && Number(rawPer) > 0 ? Number(rawPer) : 25, 100);
        const page = paginate({ ...ctx, query: { ...ctx.query, per_page: String(perPage) } }, items, sim.baseUrl(), {
          appendQuery: true,
        });
        const withActor = ctx.query.include?.split(',').some((i) => i.trim() === 'actor') ?? false;
        const viewer = ctx.user;
        return {
          status: 200,
          body: {
            ...list(
              page.data.map((e) => {
                const actor = e.actorId === null ? null : (sim.state.users.get(e.actorId) ?? null);
                const viewerIsActor = actor?.id === viewer.id;
                return {
                  object: 'activity_log',
                  attributes: {
                    id: createHash('sha1').update(String(e.id)).digest('hex'),
                    batch: e.batch,
                    event: e.event,
                    is_api: e.apiKey !== null,
                    ip: viewerIsActor || viewer.root_admin ? e.ip : null,
                    description: null,
                    properties: transformProperties(e, viewerIsActor),
                    // The panel compares the keys with its translation strings; the simulator has none.
                    has_additional_metadata: false,
                    timestamp: atom(e.timestamp),
                    ...(withActor ? { relationships: { actor: actor ? clientUser(actor) : nullResource() } } : {}),
                  },
                };
              }),
            ),
            meta: page.meta,
          },
        };
      },
    },
  ];
}
