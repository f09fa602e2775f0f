// Client API (/api/client), pterodactyl/panel:routes/api-client.php. The key's user sees only servers it
// owns (root admins: any server); server routes take the 8-char identifier or
// the full uuid, never the numeric id.
import { ValidationError, PanelError, applyQuery, atom, daemonError, includes, item, list, notFound, paginate, partial } from './http.ts';
import type { Ctx, Reply, RouteDef, SimContext } from './http.ts';
import { isPhpArray, isPlainObject, phpString, validate } from './rules.ts';
import type { RuleSet } from './rules.ts';
import type { Server } from './state.ts';
import { clientAccount, clientServer, isInstalled, userPermissions } from './transform.ts';
import { WingsError, nodeConnectionAddress } from './wings.ts';
import { archiveHoldsOf, compress, decompress } from './archives.ts';
import { backupRoutes } from './backups.ts';
import { scheduleRoutes } from './schedules.ts';
import { networkRoutes } from './network.ts';
import { databaseRoutes } from './databases.ts';
import { activityRoutes, logsActivity } from './activity.ts';
import type { FsEntry, PowerSignal } from './wings.ts';

const C = '/api/client';
const S = `${C}/servers/{server}`;

/** PTERODACTYL_FILES_MAX_EDIT_SIZE default */
const MAX_EDIT_SIZE = 4 * 1024 * 1024;

function check(data: Record<string, unknown>, rules: Record<string, RuleSet>): void {
  const failures = validate(data, rules);
  if (failures.length > 0) throw new ValidationError(failures);
}

function octalMode(e: FsEntry): { mode: string; bits: string } {
  const bits = e.mode.toString(8);
  const rwx = (n: number): string => `${n & 4 ? 'r' : '-'}${n & 2 ? 'w' : '-'}${n & 1 ? 'x' : '-'}`;
  const m = e.mode;
  return { mode: `${e.type === 'dir' ? 'd' : '-'}${rwx((m >> 6) & 7)}${rwx((m >> 3) & 7)}${rwx(m & 7)}`, bits };
}

function mimetype(name: string, e: FsEntry): string {
  if (e.type === 'dir') return 'inode/directory';
  if (/\.(jar|zip)$/i.test(name)) return 'application/zip';
  if (/\.json$/i.test(name)) return 'application/json';
  const sample = e.content.subarray(0, 512);
  return sample.includes(0) || /[\u0000-\u0008\u007f]/.test(sample.toString('latin1'))
    ? 'application/octet-stream'
    : 'text/plain; charset=utf-8';
}

export function fileObject(name: string, e: FsEntry): ReturnType<typeof item> {
  const { mode, bits } = octalMode(e);
  return item('file_object', {
    name,
    mode,
    mode_bits: bits,
    size: e.type === 'dir' ? 4096 : e.content.length,
    is_file: e.type === 'file',
    is_symlink: false,
    mimetype: mimetype(name, e),
    created_at: atom(e.created),
    modified_at: atom(e.modified),
  });
}

/** ServerStateConflictException message for the state gate (AuthenticateServerAccess), or null. */
export function stateConflict(sim: SimContext, s: Server): string | null {
  const node = sim.state.nodes.get(s.node_id);
  if (s.status === 'suspended') return 'This server is currently suspended and the functionality requested is unavailable.';
  if (node?.maintenance_mode)
    return 'The node of this server is currently under maintenance and the functionality requested is unavailable.';
  if (!isInstalled(s)) return 'This server has not yet completed its installation process, please try again later.';
  if (s.status === 'restoring_backup') return 'This server is currently restoring from a backup, please try again later.';
  return null;
}

export function clientRoutes(sim: SimContext): RouteDef[] {
  const { state, wings } = sim;
  const ok = (body: unknown, status = 200): Reply => ({ status, body });
  const noContent = (): Reply => ({ status: 204 });

  /**
   * SubstituteClientBindings + AuthenticateServerAccess: unknown server -> 404,
   * not owner (and not admin) -> 404, then the state gate -> 409 for every
   * route except the server view; a root admin may still fetch a websocket
   * token while installing.
   */
  const bind = (ctx: Ctx): Server => {
    const s = state.serverByIdentifier(ctx.params.server ?? '');
    if (!s) throw notFound();
    const u = ctx.user;
    if (s.owner_id !== u.id && !u.root_admin) throw notFound('The requested resource does not exist on this server.');
    if (ctx.routeName !== 'api:client:server.view') {
      const conflict = stateConflict(sim, s);
      if (conflict !== null) {
        const node = state.nodes.get(s.node_id);
        const hard = s.status === 'suspended' || node?.maintenance_mode === true;
        if (hard || !(u.root_admin && ctx.routeName === 'api:client:server.ws')) {
          throw new PanelError(409, 'ServerStateConflictException', conflict);
        }
      }
    }
    return s;
  };

  const wingsCall = <T>(fn: () => T): T => {
    try {
      return fn();
    } catch (e) {
      if (e instanceof WingsError) throw daemonError(e.status, e.message);
      throw e;
    }
  };

  // Each route logs its activity event once it succeeded, as the panel's controllers do (activity.ts).
  return logsActivity(sim, [
    {
      method: 'GET',
      path: C,
      name: 'api:client.index',
      handler: (ctx) => {
        const u = ctx.user;
        const type = ctx.query.type ?? null;
        let servers = [...state.servers.values()];
        if (type === 'admin' || type === 'admin-all') {
          if (!u.root_admin) servers = [];
          else if (type === 'admin') servers = servers.filter((s) => s.owner_id !== u.id);
        } else {
          // default and `owner`: owned (no subusers in the simulator)
          servers = servers.filter((s) => s.owner_id === u.id);
        }
        const ipv4 = /^(\d{1,3}\.){3}\d{1,3}(:\d{1,5})?$/;
        const items = applyQuery(ctx, servers, {
          filters: {
            uuid: partial((s) => s.uuid),
            name: partial((s) => s.name),
            description: partial((s) => s.description),
            external_id: partial((s) => s.external_id),
            // MultiFieldServerFilter
            '*': (s, value) => {
              if (ipv4.test(value) || /^:\d{1,5}$/.test(value)) {
                const [ip, port] = value.split(':');
                return state
                  .allocationsOfServer(s.id)
                  .some((a) => (ip === undefined || ip === '' || a.ip.startsWith(ip)) && (port === undefined || a.port === Number(port)));
              }
              return (
                s.uuid.startsWith(value) ||
                s.uuidShort === value ||
                s.external_id === value ||
                s.name.toLowerCase().includes(value.toLowerCase())
              );
            },
          },
          sorts: null,
        });
        const page = paginate(ctx, items, sim.baseUrl(), { maxPerPage: 100, appendQuery: true });
        const inc = includes(ctx);
        return ok({ ...list(page.data.map((s) => clientServer(state, s, u, inc))), meta: page.meta });
      },
    },
    {
      method: 'GET',
      path: `${C}/account`,
      name: 'api:client.account',
      handler: (ctx) => ok(clientAccount(ctx.user)),
    },
    {
      method: 'GET',
      path: S,
      name: 'api:client:server.view',
      handler: (ctx) => {
        const s = bind(ctx);
        return ok({
          ...clientServer(state, s, ctx.user, includes(ctx)),
          meta: { is_server_owner: s.owner_id === ctx.user.id, user_permissions: userPermissions(s, ctx.user) },
        });
      },
    },
    {
      method: 'GET',
      path: `${S}/resources`,
      name: 'api:client:server.resources',
      handler: (ctx) => {
        const s = bind(ctx);
        return ok(item('stats', { ...wings.stats(s) }));
      },
    },
    {
      method: 'POST',
      path: `${S}/power`,
      name: 'api:client:server.power',
      handler: (ctx) => {
        const s = bind(ctx);
        check(ctx.input, { signal: 'required|string|in:start,stop,restart,kill' });
        wings.power(s, ctx.input.signal as PowerSignal);
        return noContent();
      },
    },
    {
      method: 'POST',
      path: `${S}/command`,
      name: 'api:client:server.command',
      handler: (ctx) => {
        const s = bind(ctx);
        check(ctx.input, { command: 'required|string|min:1' });
        try {
          wings.command(s, String(ctx.input.command));
        } catch (e) {
          if (e instanceof WingsError && e.status === 502) {
            throw new PanelError(502, 'HttpException', 'Server must be online in order to send commands.');
          }
          throw e;
        }
        return noContent();
      },
    },
    {
      method: 'GET',
      path: `${S}/websocket`,
      name: 'api:client:server.ws',
      handler: (ctx) => {
        const s = bind(ctx);
        const node = state.nodes.get(s.node_id);
        if (!node) throw notFound();
        const token = wings.signJwt(
          node,
          { server_uuid: s.uuid, permissions: userPermissions(s, ctx.user), user_uuid: ctx.user.uuid, user_id: ctx.user.id },
          600,
          `${ctx.user.id}${s.uuid}`,
          sim.baseUrl(),
        );
        const socket = `${nodeConnectionAddress(node)
          .replace(/^https:/, 'wss:')
          .replace(/^http:/, 'ws:')}/api/servers/${s.uuid}/ws`;
        // not wrapped in object/attributes (WebsocketController)
        return ok({ data: { token, socket } });
      },
    },
    {
      method: 'GET',
      path: `${S}/files/list`,
      name: 'api:client:server.files.list',
      handler: (ctx) => {
        const s = bind(ctx);
        const dir = ctx.query.directory ?? '/';
        const entries = wingsCall(() => wings.list(s, dir));
        return ok(list(entries.map((e) => fileObject(e.name, e.entry))));
      },
    },
    {
      method: 'GET',
      path: `${S}/files/contents`,
      name: 'api:client:server.files.contents',
      handler: (ctx) => {
        const s = bind(ctx);
        check(ctx.input, { file: 'required|string' });
        const { entry } = wingsCall(() => wings.readFile(s, String(ctx.input.file)));
        if (entry.content.length > MAX_EDIT_SIZE) {
          throw new PanelError(
            400,
            'FileSizeTooLargeException',
            'The file you are attempting to open is too large to view in the file editor.',
          );
        }
        return { status: 200, headers: { 'content-type': 'text/plain' }, raw: entry.content };
      },
    },
    {
      method: 'POST',
      path: `${S}/files/write`,
      name: 'api:client:server.files.write',
      handler: (ctx) => {
        const s = bind(ctx);
        check(ctx.input, { file: 'required|string' });
        // the body is the raw file content (FileController)
        wingsCall(() => wings.writeFile(s, String(ctx.input.file), ctx.raw));
        return noContent();
      },
    },
    {
      method: 'GET',
      path: `${S}/files/download`,
      name: 'api:client:server.files.download',
      handler: (ctx) => {
        const s = bind(ctx);
        const node = state.nodes.get(s.node_id);
        if (!node) throw notFound();
        const token = wings.signJwt(
          node,
          { file_path: rawurldecode(phpString(ctx.query.file ?? '')), server_uuid: s.uuid, user_uuid: ctx.user.uuid, user_id: ctx.user.id },
          900,
          `${ctx.user.id}${s.uuid}`,
          sim.baseUrl(),
        );
        // As the real panel: the node's connection address (Wings serves the download, not the panel).
        // With wingsAddress 'simulator' the server rewrites it to this simulator, which plays every node.
        return ok(item('signed_url', { url: `${node.scheme}://${node.fqdn}:${node.daemon_listen}/download/file?token=${token}` }));
      },
    },
    {
      method: 'POST',
      path: `${S}/files/delete`,
      name: 'api:client:server.files.delete',
      handler: (ctx) => {
        const s = bind(ctx);
        // `required|nullable` still rejects null (Laravel's required runs first)
        check(ctx.input, { root: 'required|nullable|string', files: 'required|array', 'files.*': 'string' });
        const files = Object.values(ctx.input.files as Record<string, unknown>).map(phpString);
        wingsCall(() => wings.deleteFiles(s, String(ctx.input.root ?? '/'), files));
        return noContent();
      },
    },
    {
      method: 'POST',
      path: `${S}/files/create-folder`,
      name: 'api:client:server.files.create-folder',
      handler: (ctx) => {
        const s = bind(ctx);
        check(ctx.input, { root: 'sometimes|nullable|string', name: 'required|string' });
        wingsCall(() => wings.createFolder(s, String(ctx.input.root ?? '/'), String(ctx.input.name)));
        return noContent();
      },
    },
    {
      method: 'PUT',
      path: `${S}/files/rename`,
      name: 'api:client:server.files.rename',
      handler: (ctx) => {
        const s = bind(ctx);
        check(ctx.input, {
          root: 'required|nullable|string',
          files: 'required|array',
          'files.*': 'array',
          'files.*.to': 'required|string',
          'files.*.from': 'required|string',
        });
        const root = String(ctx.input.root ?? '/');
        const files = ctx.input.files;
        const pairs = isPhpArray(files) ? Object.values(files) : [];
        for (const p of pairs) {
          if (!isPlainObject(p)) continue;
          wingsCall(() => wings.rename(s, root, String(p.from), String(p.to)));
        }
        return noContent();
      },
    },
    {
      method: 'POST',
      path: `${S}/files/compress`,
      name: 'api:client:server.files.compress',
      handler: async (ctx) => {
        const s = bind(ctx);
        check(ctx.input, { root: 'sometimes|nullable|string', files: 'required|array', 'files.*': 'string' });
        const files = Object.values(ctx.input.files as Record<string, unknown>).map(phpString);
        await archiveHoldsOf(wings).wait();
        const { name, entry } = wingsCall(() => compress(wings, s, String(ctx.input.root ?? '/'), files));
        // Wings answers the archive's stat with the mimetype it set (router_server_files.go postServerCompressFiles).
        const object = fileObject(name, entry) as { attributes: Record<string, unknown> };
        object.attributes.mimetype = 'application/tar+gzip';
        return ok(object);
      },
    },
    {
      method: 'POST',
      path: `${S}/files/decompress`,
      name: 'api:client:server.files.decompress',
      handler: async (ctx) => {
        const s = bind(ctx);
        check(ctx.input, { root: 'sometimes|nullable|string', file: 'required|string' });
        await archiveHoldsOf(wings).wait();
        wingsCall(() => decompress(wings, s, String(ctx.input.root ?? '/'), String(ctx.input.file)));
        return noContent();
      },
    },
    {
      method: 'POST',
      path: `${S}/files/chmod`,
      name: 'api:client:server.files.chmod',
      handler: (ctx) => {
        const s = bind(ctx);
        // ChmodFilesRequest; the panel passes root and files to Wings as given, and answers 204.
        check(ctx.input, {
          root: 'required|nullable|string',
          files: 'required|array',
          'files.*.file': 'required|string',
          'files.*.mode': 'required|numeric',
        });
        const files = Object.values(ctx.input.files as Record<string, unknown>)
          .filter(isPlainObject)
          .map((f) => ({ file: String(f.file), mode: String(f.mode) }));
        wingsCall(() => wings.chmod(s, String(ctx.input.root ?? '/'), files));
        return noContent();
      },
    },
    {
      method: 'GET',
      path: `${S}/files/upload`,
      name: 'api:client:server.files.upload',
      handler: (ctx) => {
        const s = bind(ctx);
        const node = state.nodes.get(s.node_id);
        if (!node) throw notFound();
        // FileUploadController: 15 minutes, the node's address; the caller adds `&directory=`.
        const token = wings.signJwt(
          node,
          { server_uuid: s.uuid, user_uuid: ctx.user.uuid, user_id: ctx.user.id },
          900,
          `${ctx.user.id}${s.uuid}`,
          sim.baseUrl(),
        );
        return ok(item('signed_url', { url: `${nodeConnectionAddress(node)}/upload/file?token=${token}` }));
      },
    },
    ...backupRoutes(sim, bind),
    ...scheduleRoutes(sim, bind),
    ...networkRoutes(sim, bind),
    ...databaseRoutes(sim, bind),
    ...activityRoutes(sim, bind),
  ]);
}

/**
 * PHP `rawurldecode`: every `%XX` (two hex digits) becomes that byte; `+` and a lone `%` stay. The
 * panel applies it to the download's file name before signing the link (FileController::download).
 */
export function rawurldecode(value: string): string {
  if (!value.includes('%')) return value;
  const bytes: number[] = [];
  const src = Buffer.from(value, 'utf8');
  for (let i = 0; i < src.length; i++) {
    const hex = src.subarray(i + 1, i + 3).toString('latin1');
    if (src[i] === 0x25 && /^[0-9a-fA-F]{2}$/.test(hex)) {
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else bytes.push(src[i]!);
  }
  return Buffer.from(bytes).toString('utf8');
}
