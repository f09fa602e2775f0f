// Subusers (Client API /api/client/servers/{server}/users), user passwords, and the SFTP login check
// Wings asks the panel for (POST /api/remote/sftp/auth), read from pterodactyl/panel:
// app/Http/Controllers/Api/Client/Servers/SubuserController.php, app/Services/Subusers/SubuserCreationService.php,
// app/Http/Controllers/Api/Remote/SftpAuthenticationController.php, app/Http/Middleware/Api/Daemon/DaemonAuthenticate.php.
import { randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { PanelError, ValidationError, atom, displayError, item, list, notFound } from './http.ts';
import type { Ctx, Reply, RouteDef, SimContext } from './http.ts';
import { isPlainObject, validate } from './rules.ts';
import type { PanelState, Server, User } from './state.ts';
import { stateConflict } from './client-api.ts';
import { deauthorizeSftp } from './sftp.ts';

interface Subuser {
  userId: number;
  permissions: string[];
  created_at: Date;
}

/** Simulator-side tables kept apart from PanelState: `subusers` by server id, and each user's password hash. */
interface SubuserTables {
  byServer: Map<number, Map<number, Subuser>>;
  passwords: WeakMap<User, string>;
  /** ThrottlesLogins: failed SFTP logins by `<server part>|<ip>` (5 a minute). */
  failures: Map<string, { count: number; until: number }>;
}

const tables = new WeakMap<PanelState, SubuserTables>();

function tablesOf(state: PanelState): SubuserTables {
  let t = tables.get(state);
  if (!t) {
    t = { byServer: new Map(), passwords: new WeakMap(), failures: new Map() };
    tables.set(state, t);
  }
  return t;
}

/** The panel keeps a bcrypt hash (`Hash::make`); scrypt stands in for it: never the password itself. */
export function setUserPassword(state: PanelState, user: User, password: string): void {
  const salt = randomBytes(16);
  tablesOf(state).passwords.set(user, `${salt.toString('hex')}:${scryptSync(password, salt, 32).toString('hex')}`);
}

function passwordMatches(state: PanelState, user: User, password: string): boolean {
  const stored = tablesOf(state).passwords.get(user);
  if (!stored) return false;
  const [salt, hash] = stored.split(':') as [string, string];
  return timingSafeEqual(scryptSync(password, Buffer.from(salt, 'hex'), 32), Buffer.from(hash, 'hex'));
}

/** The subusers of a server that still exists (the panel deletes them with the server: FK ON DELETE CASCADE). */
function subusersOf(state: PanelState, server: Server): Map<number, Subuser> {
  const t = tablesOf(state);
  for (const id of t.byServer.keys()) if (!state.servers.has(id)) t.byServer.delete(id);
  let m = t.byServer.get(server.id);
  if (!m) {
    m = new Map();
    t.byServer.set(server.id, m);
  }
  return m;
}

/** GetUserPermissionsService: root admin, owner, else the subuser's stored list (none: empty). */
export function permissionsOf(state: PanelState, server: Server, user: User): string[] {
  if (user.root_admin) return ['*', 'admin.websocket.errors', 'admin.websocket.install', 'admin.websocket.transfer'];
  if (server.owner_id === user.id) return ['*'];
  return subusersOf(state, server).get(user.id)?.permissions ?? [];
}

function subuserObject(state: PanelState, s: Subuser) {
  const u = state.users.get(s.userId);
  return item('server_subuser', {
    uuid: u?.uuid ?? '',
    username: u?.username ?? '',
    email: u?.email ?? '',
    image: `https://gravatar.com/avatar/${u?.uuid ?? ''}`,
    '2fa_enabled': u?.use_totp ?? false,
    created_at: atom(s.created_at),
    permissions: s.permissions,
  });
}

export function subuserRoutes(sim: SimContext): RouteDef[] {
  const { state } = sim;
  const S = '/api/client/servers/{server}/users';

  /** AuthenticateServerAccess as in client-api.ts: owner or root admin, else 404; then the state gate (409). */
  const bind = (ctx: Ctx): Server => {
    const s = state.serverByIdentifier(ctx.params.server ?? '');
    if (!s) throw notFound();
    if (s.owner_id !== ctx.user.id && !ctx.user.root_admin) throw notFound('The requested resource does not exist on this server.');
    const conflict = stateConflict(sim, s);
    if (conflict !== null) throw new PanelError(409, 'ServerStateConflictException', conflict);
    return s;
  };
  const subuserParam = (ctx: Ctx, s: Server): Subuser => {
    const u = [...state.users.values()].find((x) => x.uuid === ctx.params.user);
    const sub = u ? subusersOf(state, s).get(u.id) : undefined;
    if (!sub) throw notFound();
    return sub;
  };

  return [
    {
      method: 'GET',
      path: S,
      name: 'api:client:server.users.index',
      handler: (ctx) => {
        const s = bind(ctx);
        return { status: 200, body: list([...subusersOf(state, s).values()].map((x) => subuserObject(state, x))) };
      },
    },
    {
      method: 'POST',
      path: S,
      name: 'api:client:server.users.create',
      handler: (ctx) => {
        const s = bind(ctx);
        const failures = validate(ctx.input, {
          email: 'required|email|between:1,191',
          permissions: 'required|array',
          'permissions.*': 'string',
        });
        if (failures.length > 0) throw new ValidationError(failures);
        const email = String(ctx.input.email);
        let user = [...state.users.values()].find((u) => u.email === email);
        if (user && s.owner_id === user.id)
          throw displayError('You cannot add the server owner as a subuser for this server.', 'UserIsServerOwnerException');
        if (user && subusersOf(state, s).has(user.id))
          throw displayError(
            'A user with that email address is already assigned as a subuser for this server.',
            'ServerSubuserExistsException',
          );
        // An unknown e-mail: the panel makes a user (username from the e-mail, three random characters) and mails it a reset link.
        user ??= state.createUser({
          email,
          username: `${(email.split('@')[0] ?? '').replace(/[^\w.-]+/g, '')}${randomBytes(2).toString('hex').slice(0, 3)}`,
          first_name: 'Server',
          last_name: 'Subuser',
        });
        const perms = [...new Set([...(ctx.input.permissions as unknown[]).map(String), 'websocket.connect'])];
        const sub: Subuser = { userId: user.id, permissions: perms, created_at: new Date() };
        subusersOf(state, s).set(user.id, sub);
        return { status: 200, body: subuserObject(state, sub) };
      },
    },
    {
      method: 'GET',
      path: `${S}/{user}`,
      name: 'api:client:server.users.view',
      handler: (ctx) => {
        const s = bind(ctx);
        return { status: 200, body: subuserObject(state, subuserParam(ctx, s)) };
      },
    },
    {
      // SubuserController::update (UpdateSubuserRequest: permissions required|array); websocket.connect always kept.
      method: 'POST',
      path: `${S}/{user}`,
      name: 'api:client:server.users.update',
      handler: (ctx) => {
        const s = bind(ctx);
        const sub = subuserParam(ctx, s);
        const failures = validate(ctx.input, { permissions: 'required|array', 'permissions.*': 'string' });
        if (failures.length > 0) throw new ValidationError(failures);
        sub.permissions = [...new Set([...(ctx.input.permissions as unknown[]).map(String), 'websocket.connect'])];
        // The panel tells Wings (POST /api/deauthorize-user): the user's open SFTP sessions end.
        deauthorizeSftp(sim.wings, s.uuid, state.users.get(sub.userId)?.uuid ?? '');
        return { status: 200, body: subuserObject(state, sub) };
      },
    },
    {
      method: 'DELETE',
      path: `${S}/{user}`,
      name: 'api:client:server.users.delete',
      handler: (ctx) => {
        const s = bind(ctx);
        const userId = subuserParam(ctx, s).userId;
        subusersOf(state, s).delete(userId);
        deauthorizeSftp(sim.wings, s.uuid, state.users.get(userId)?.uuid ?? '');
        return { status: 204 };
      },
    },
  ];
}

/** ThrottlesLogins defaults: 5 attempts, then locked for a minute. */
const MAX_ATTEMPTS = 5;
const DECAY_MS = 60_000;

/**
 * POST /api/remote/sftp/auth as Wings calls it: `Authorization: Bearer <daemon_token_id>.<daemon_token>`
 * of the node asking, body `{type, username: '<panel username>.<server identifier>', password, ip}`.
 * Answers `{user, server, permissions}`, or 403 for bad credentials, no `file.sftp` or a server of
 * another node, 409 when the server may not be used (suspended, installing, node in maintenance).
 */
export function sftpAuth(sim: SimContext, req: IncomingMessage, raw: Buffer): Reply {
  const { state } = sim;
  // DaemonAuthenticate
  const header = String(req.headers.authorization ?? '');
  if (!/^bearer /i.test(header))
    throw new PanelError(401, 'HttpException', 'Access to this endpoint must include an Authorization header.');
  const [tokenId, token, ...rest] = header.slice(7).trim().split('.');
  if (!tokenId || !token || rest.length > 0)
    throw new PanelError(400, 'BadRequestHttpException', 'The Authorization header provided was not in a valid format.');
  const node = [...state.nodes.values()].find((n) => n.daemon_token_id === tokenId);
  if (!node || node.daemon_token !== token)
    throw new PanelError(403, 'AccessDeniedHttpException', 'You are not authorized to access this resource.');

  let body: Record<string, unknown> = {};
  try {
    const parsed: unknown = raw.length ? JSON.parse(raw.toString('utf8')) : {};
    if (isPlainObject(parsed)) body = parsed;
  } catch {
    throw new PanelError(400, 'BadRequestHttpException', 'The JSON data passed in the request appears to be malformed: Syntax error');
  }
  // SftpAuthenticationFormRequest
  const failures = validate(body, { type: 'nullable|in:password,public_key', username: 'required|string', password: 'required|string' });
  if (failures.length > 0) throw new ValidationError(failures);

  const value = String(body.username);
  const cut = value.lastIndexOf('.');
  const username = cut === -1 ? '' : value.slice(0, cut);
  const serverPart = cut === -1 ? value : value.slice(cut + 1);
  if (!serverPart) throw new PanelError(400, 'BadRequestHttpException', 'No valid server identifier was included in the request.');

  const t = tablesOf(state);
  const throttleKey = `${serverPart.toLowerCase()}|${String(body.ip ?? req.socket.remoteAddress ?? '')}`;
  const now = Date.now();
  const seen = t.failures.get(throttleKey);
  if (seen && seen.until <= now) t.failures.delete(throttleKey);
  const attempts = t.failures.get(throttleKey);
  if (attempts && attempts.count >= MAX_ATTEMPTS) {
    const seconds = Math.ceil((attempts.until - now) / 1000);
    throw new PanelError(
      429,
      'TooManyRequestsHttpException',
      `Too many login attempts for this account, please try again in ${seconds} seconds.`,
      {
        'retry-after': String(seconds),
      },
    );
  }
  const reject = (): never => {
    const f = t.failures.get(throttleKey) ?? { count: 0, until: now + DECAY_MS };
    f.count++;
    t.failures.set(throttleKey, f);
    throw new PanelError(403, 'HttpForbiddenException', 'Authorization credentials were not correct, please try again.');
  };

  const user = [...state.users.values()].find((u) => u.username === username) ?? reject();
  const server =
    [...state.servers.values()].find((s) => (s.uuid === serverPart || s.uuidShort === serverPart) && s.node_id === node.id) ?? reject();
  // Public keys are not modelled: no user of the simulator has one.
  if (body.type === 'public_key' || !passwordMatches(state, user, String(body.password))) reject();

  const permissions = permissionsOf(state, server, user);
  if (!user.root_admin && server.owner_id !== user.id && !permissions.includes('file.sftp'))
    throw new PanelError(403, 'HttpForbiddenException', 'You do not have permission to access SFTP for this server.');
  // Server::validateCurrentState
  const conflict = stateConflict(sim, server);
  if (conflict !== null) throw new PanelError(409, 'ServerStateConflictException', conflict);
  return { status: 200, body: { user: user.uuid, server: server.uuid, permissions } };
}
