// HTTP plumbing of the simulator: routing, the panel's middleware stack
// (auth, key type checks, JSON validity, request cleaning, throttling), fault
// injection, the Wings download endpoint, the /__sim control routes, and
// startPanelSim().
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { applicationRoutes } from './app-api.ts';
import { clientRoutes } from './client-api.ts';
import { sftpAuth, subuserRoutes } from './subusers.ts';
import { FaultInjector, statusDefaults } from './faults.ts';
import type { FaultEffect, FaultRule, FaultRuleJson } from './faults.ts';
import { GENERIC_500, PanelError, RawReply, renderError } from './http.ts';
import type { Ctx, Reply, RouteDef, SimContext } from './http.ts';
import { UnknownRuleError, isPlainObject } from './rules.ts';
import { DEFAULT_APP_KEY, DEFAULT_CLIENT_KEY, SEED_IDS, seedDefault, seedEmpty } from './seed.ts';
import { PanelState } from './state.ts';
import { attachConsoleSockets } from './websocket.ts';
import type { ApiKey, Server, User } from './state.ts';
import { Wings, newRequestId, normalizePath, WingsError } from './wings.ts';
import { backupsOf, downloadBackup } from './backups.ts';
import { databasesOf } from './databases.ts';
import { archiveHoldsOf } from './archives.ts';
import { schedulesOf } from './schedules.ts';
import type { PowerState } from './wings.ts';
import { startSftp, type SftpListeners, type SftpOptions } from './sftp.ts';
import { PelicanMode, type Refusal } from './pelican.ts';

export interface PanelSimOptions {
  /**
   * Which panel to play (default 'pterodactyl'). 'pelican': Pelican's routes, shapes, limits and
   * keys, strict about what Pelican has not got (dev/panel-sim/pelican.ts); GET /__sim/refused lists it.
   */
  kind?: 'pterodactyl' | 'pelican';
  /** default 0 (random free port) */
  port?: number;
  /** default 127.0.0.1 */
  host?: string;
  /**
   * time from create/reinstall until the install finishes; default 3000. 'held' (a test control):
   * an install ends only when the test calls endInstall() (holdInstalls() switches it later).
   */
  installMs?: number | 'held';
  /** duration of starting->running and stopping->offline; default 1000. 'held': only at endTransition(). */
  transitionMs?: number | 'held';
  /** panel-side cache of /resources per server (the real panel: 20 s); default 20000, 0 = off */
  resourcesCacheMs?: number;
  /** default 'default' */
  seed?: 'default' | 'empty';
  /** override the deterministic seed keys (48 chars, ptla_/ptlc_ prefix) */
  appKey?: string;
  clientKey?: string;
  /** requests per minute per user (config/http.php defaults: application 240, client 720; Pelican 256 and 256) */
  rateLimits?: { application?: number; client?: number };
  /** console lines kept per server; default 500 */
  consoleLimit?: number;
  /**
   * Where the Client API's websocket `socket` points. 'node' (default): the node's
   * `wss://fqdn:daemon_listen/api/servers/<uuid>/ws`, as the real panel answers (the seeded fqdns do
   * not resolve); 'simulator': `ws://<this host:port>/api/servers/<uuid>/ws`, where the simulator
   * serves the console for every node (dev/panel-sim/websocket.ts).
   */
  wingsAddress?: 'node' | 'simulator';
  /**
   * Wings' `remote` (config.yml), the Origin its console websocket always accepts; default the
   * simulator's own URL. Set it apart to play a Wings configured with the panel's public URL while
   * the service reaches the panel at another address.
   */
  remote?: string;
  /** Wings' `allowed_origins`: Origins accepted on the console websocket besides `remote` (`*` = any) */
  allowedOrigins?: string[];
  /** `stats` push interval on the console websocket; default 2000 */
  consoleStatsMs?: number;
  /** how often a console socket's token expiry is checked (Wings: 30 s); default 1000 */
  tokenCheckMs?: number;
  /** time Wings takes to finish a backup or a restore; default 500. 'held': only at backupsOf(wings).end(server) */
  backupMs?: number | 'held';
  /** the panel's backup throttle (config/backups.php); default 2 per 600 s per server */
  backupThrottle?: { limit: number; periodSeconds: number };
  /**
   * Run due schedules at each wall-clock minute, as the panel's cron does (default false: a test
   * makes a minute pass with `POST /__sim/schedules/run-due`, dev/panel-sim/schedules.ts).
   */
  scheduleTick?: boolean;
  /** multiplies schedule tasks' time offsets (default 1; 0: each task right after the one before) */
  scheduleOffsetScale?: number;
  /**
   * The default seed's database host (MySQL on fra-1, linked to that node; the panel's default
   * `allow_random` lets servers on other nodes use it too); false: a panel without one.
   */
  databaseHost?: boolean;
  /**
   * Run Wings' SFTP server for real (dev/panel-sim/sftp.ts): one listener per node on `host`
   * (default 127.0.0.1), which becomes the nodes' FQDN, each node's `daemon_sftp` its real port.
   * Off by default: the nodes keep their seeded names and port 2022, where nothing listens.
   */
  sftp?: SftpOptions;
}

export interface SimServerView {
  id: number;
  uuid: string;
  identifier: string;
  external_id: string | null;
  name: string;
  status: Server['status'];
  power: PowerState;
  node_id: number;
  owner_id: number;
  allocation_id: number;
  allocations: number[];
  memory: number;
  disk: number;
  environment: Record<string, string | number | null>;
}

export interface PanelSim {
  /** base URL of the panel (and of the simulated Wings download endpoint) */
  url: string;
  /** application key (owned by the root admin, user id 1) */
  appKey: string;
  /** client key of the non-admin service user */
  clientKey: string;
  serviceUserId: number;
  adminUserId: number;
  /** the live in-memory database (read it in tests; mutate at your own risk) */
  state: PanelState;
  wings: Wings;
  /** The SFTP port of each node by node id, when started with `sftp`. */
  sftpPorts?: Map<number, number>;
  faults: {
    add(rule: FaultRule): string;
    remove(id: string): boolean;
    clear(): void;
    list(): ReturnType<FaultInjector['list']>;
    /** Requests waiting on a `hold` effect. */
    held(): number;
    /** Lets every held request go on; answers how many there were. */
    release(): number;
  };
  setNodeMaintenance(nodeId: number, on: boolean): void;
  /** `id` (number) or 8-char identifier / uuid (string) */
  server(ref: number | string): SimServerView | undefined;
  powerState(ref: number | string): PowerState | undefined;
  console(ref: number | string): string[];
  /** commands received through POST /command */
  commands(ref: number | string): string[];
  /** path -> utf8 content; directories are listed with a trailing `/` and empty content */
  files(ref: number | string): Record<string, string>;
  readFile(ref: number | string, path: string): string | undefined;
  createUser(input: {
    email: string;
    username: string;
    first_name?: string;
    last_name?: string;
    root_admin?: boolean;
    external_id?: string | null;
  }): User;
  /** create a `ptlc_` key for any user */
  createClientKey(userId: number): string;
  /** a console (websocket) token for the service user, signed as the panel signs it, living `ttlSeconds` (default 600) */
  consoleToken(ref: number | string, ttlSeconds?: number): string;
  /** the next `count` installs end in install_failed / reinstall_failed */
  failNextInstalls(count: number): void;
  /**
   * Test controls, so a test decides when a state ends instead of racing a timer: installs
   * (transitions) begun while held last until endInstall (endTransition) is called for the server.
   * The end* calls also end a timed one early; they answer false when nothing was running.
   */
  holdInstalls(on?: boolean): void;
  endInstall(ref: number | string): boolean;
  holdTransitions(on?: boolean): void;
  endTransition(ref: number | string): boolean;
  /** Compress and decompress begun while held wait until endArchives(), which answers how many it let run. */
  holdArchives(on?: boolean): void;
  endArchives(): number;
  /** Archive operations waiting now. */
  heldArchives(): number;
  snapshot(): Record<string, unknown>;
  /** Pelican mode: the calls it refused as Pelican would not take them (empty in Pterodactyl mode). */
  refused(): Refusal[];
  /** Pelican mode: a node's CPU capacity in percent (0: unlimited, the default). */
  setNodeCpu(nodeId: number, cpu: number): void;
  close(): Promise<void>;
}

interface CompiledRoute extends RouteDef {
  api: 'application' | 'client';
  re: RegExp;
  names: string[];
}

function compile(def: RouteDef, api: 'application' | 'client'): CompiledRoute {
  const names: string[] = [];
  const src = def.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{(\w+)\}/g, (_m, n: string) => {
    names.push(n);
    return '([^/]+)';
  });
  return { ...def, api, re: new RegExp(`^${src}$`), names };
}

/** Laravel's fixed-window limiter (RateLimiter::hit with a 60 s decay). */
class RateLimiter {
  private buckets = new Map<string, { hits: number; resetAt: number }>();

  hit(key: string, max: number): { allowed: boolean; remaining: number; retryAfter: number; resetAt: number } {
    const now = Date.now();
    let b = this.buckets.get(key);
    if (!b || b.resetAt <= now) {
      b = { hits: 0, resetAt: now + 60_000 };
      this.buckets.set(key, b);
    }
    const retryAfter = Math.max(0, Math.ceil((b.resetAt - now) / 1000));
    if (b.hits >= max) return { allowed: false, remaining: 0, retryAfter, resetAt: Math.ceil(b.resetAt / 1000) };
    b.hits++;
    return { allowed: true, remaining: max - b.hits, retryAfter, resetAt: Math.ceil(b.resetAt / 1000) };
  }
}

function throttled(limit: number, retryAfter: number, resetAt: number): PanelError {
  return new PanelError(429, 'ThrottleRequestsException', 'Too Many Attempts.', {
    'x-ratelimit-limit': String(limit),
    'x-ratelimit-remaining': '0',
    'retry-after': String(retryAfter),
    'x-ratelimit-reset': String(resetAt),
  });
}

const NO_TRIM_KEYS = new Set(['password', 'password_confirmation', 'current_password']);

/** TrimStrings (unless skipped) then ConvertEmptyStringsToNull, recursively. */
function clean(value: unknown, trim: boolean, key = ''): unknown {
  if (typeof value === 'string') {
    const v = trim && !NO_TRIM_KEYS.has(key) ? value.trim() : value;
    return v === '' ? null : v;
  }
  if (Array.isArray(value)) return value.map((v) => clean(v, trim));
  if (isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = clean(v, trim, k);
    return out;
  }
  return value;
}

function isJsonContent(req: IncomingMessage): boolean {
  const ct = String(req.headers['content-type'] ?? '');
  return ct.includes('/json') || ct.includes('+json');
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Signed Wings links besides the file download, rewritten like it with wingsAddress 'simulator'. */
const SIGNED_LINKS = new Set(['api:client:server.files.upload', 'api:client:server.backups.download']);
/** Wings' `api.upload_limit` default (config.yml), in MB. */
const UPLOAD_LIMIT_MB = 100;

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export async function startPanelSim(options: PanelSimOptions = {}): Promise<PanelSim> {
  const host = options.host ?? '127.0.0.1';
  const state = new PanelState();
  const pelicanKind = options.kind === 'pelican';
  if (pelicanKind) state.keyPrefixes = { account: 'pacc_', application: 'papp_' };
  const wings = new Wings(state, {
    installMs: typeof options.installMs === 'number' ? options.installMs : 3000,
    transitionMs: typeof options.transitionMs === 'number' ? options.transitionMs : 1000,
    holdInstalls: options.installMs === 'held',
    holdTransitions: options.transitionMs === 'held',
    resourcesCacheMs: options.resourcesCacheMs ?? 20_000,
    consoleLimit: options.consoleLimit ?? 500,
  });
  const asKind = (key: string) => (pelicanKind ? key.replace(/^ptla_/, 'papp_').replace(/^ptlc_/, 'pacc_') : key);
  const seedOpts = { appKey: options.appKey ?? asKind(DEFAULT_APP_KEY), clientKey: options.clientKey ?? asKind(DEFAULT_CLIENT_KEY) };
  const seeded = (options.seed ?? 'default') === 'empty' ? seedEmpty(state, seedOpts) : seedDefault(state, seedOpts);
  const limits = {
    application: options.rateLimits?.application ?? (pelicanKind ? 256 : 240),
    client: options.rateLimits?.client ?? (pelicanKind ? 256 : 720),
  };
  const faults = new FaultInjector();
  const limiter = new RateLimiter();
  /** Panel requests received, by `METHOD /path` (faulted and throttled ones included): GET /__sim/requests. */
  const requestCounts = new Map<string, number>();
  /** Requests the per-user rate limit refused with 429 (injected `rate_limit` faults not included). */
  let throttledCount = 0;
  let baseUrl = '';
  const sim: SimContext = { state, wings, baseUrl: () => baseUrl };
  Object.assign(backupsOf(wings).options, {
    ...(options.backupMs !== undefined ? { backupMs: options.backupMs } : {}),
    ...(options.backupThrottle ? { throttle: options.backupThrottle } : {}),
  });
  const schedules = schedulesOf(wings);
  if (options.scheduleOffsetScale !== undefined) schedules.options.offsetScale = options.scheduleOffsetScale;
  if (options.scheduleTick) schedules.startTicker();

  if ((options.seed ?? 'default') === 'default' && options.databaseHost !== false) {
    databasesOf(state).addHost({ name: 'fra-1 MySQL', host: '10.10.1.10', port: 3306, node_id: SEED_IDS.nodes.fra1 });
  }

  const pelican = pelicanKind ? new PelicanMode(sim) : undefined;
  const played = (defs: RouteDef[], api: 'application' | 'client') => pelican?.routes(defs, api) ?? defs;
  const routes: CompiledRoute[] = [
    ...played(applicationRoutes(sim), 'application').map((r) => compile(r, 'application')),
    ...played(clientRoutes(sim), 'client').map((r) => compile(wingsAddressed(r), 'client')),
    ...played(subuserRoutes(sim), 'client').map((r) => compile(r, 'client')),
  ];

  const hanging = new Set<ServerResponse>();

  /**
   * wingsAddress 'simulator': the addresses the panel hands out for Wings (the console websocket,
   * signed download links) point at this simulator, which serves every node; 'node' keeps the
   * node's own address, as the real panel answers.
   */
  function wingsAddressed(def: RouteDef): RouteDef {
    const rewrites = def.name === 'api:client:server.ws' || def.name === 'api:client:server.files.download' || SIGNED_LINKS.has(def.name);
    if (options.wingsAddress !== 'simulator' || !rewrites) return def;
    return {
      ...def,
      handler: async (ctx) => {
        const reply = await def.handler(ctx);
        const body = reply.body as { data?: { socket?: string }; attributes?: { url?: string } } | undefined;
        if (body?.data?.socket) body.data.socket = body.data.socket.replace(/^wss?:\/\/[^/]+/, baseUrl.replace(/^http/, 'ws'));
        if (body?.attributes?.url) body.attributes.url = body.attributes.url.replace(/^https?:\/\/[^/]+/, baseUrl);
        return reply;
      },
    };
  }

  const send = (res: ServerResponse, reply: Reply): void => {
    if (res.writableEnded || res.destroyed) return;
    const headers: Record<string, string> = { ...(reply.headers ?? {}) };
    let payload: Buffer | string | undefined;
    if (reply.body !== undefined) {
      payload = JSON.stringify(reply.body);
      headers['content-type'] ??= 'application/json';
    } else if (reply.raw !== undefined) {
      payload = reply.raw;
    }
    if (payload !== undefined) headers['content-length'] = String(Buffer.byteLength(payload));
    res.writeHead(reply.status, headers);
    res.end(payload);
  };

  const resolveServer = (ref: number | string): Server | undefined =>
    typeof ref === 'number'
      ? state.servers.get(ref)
      : (state.serverByIdentifier(ref) ?? [...state.servers.values()].find((s) => s.uuid === ref));

  /** A server named in a /__sim path: its id, else its identifier or uuid (an identifier may be all digits). */
  const serverInPath = (ref: string): Server | undefined =>
    (/^\d+$/.test(ref) ? state.servers.get(Number(ref)) : undefined) ?? resolveServer(ref);

  const serverView = (s: Server): SimServerView => ({
    id: s.id,
    uuid: s.uuid,
    identifier: s.uuidShort,
    external_id: s.external_id,
    name: s.name,
    status: s.status,
    power: wings.runtime(s).power,
    node_id: s.node_id,
    owner_id: s.owner_id,
    allocation_id: s.allocation_id,
    allocations: state.allocationsOfServer(s.id).map((a) => a.id),
    memory: s.memory,
    disk: s.disk,
    environment: state.environment(s),
  });

  const snapshot = (): Record<string, unknown> => ({
    url: baseUrl,
    service_user_id: seeded.serviceUserId,
    admin_user_id: seeded.adminUserId,
    locations: [...state.locations.values()].map((l) => ({ id: l.id, short: l.short, long: l.long })),
    nodes: [...state.nodes.values()].map((n) => {
      const allocs = state.allocationsOfNode(n.id);
      return {
        id: n.id,
        name: n.name,
        location_id: n.location_id,
        maintenance_mode: n.maintenance_mode,
        memory: n.memory,
        memory_overallocate: n.memory_overallocate,
        disk: n.disk,
        disk_overallocate: n.disk_overallocate,
        allocated_resources: state.allocatedResources(n.id),
        allocations: { total: allocs.length, assigned: allocs.filter((a) => a.server_id !== null).length },
      };
    }),
    users: [...state.users.values()].map((u) => ({
      id: u.id,
      email: u.email,
      username: u.username,
      external_id: u.external_id,
      root_admin: u.root_admin,
    })),
    servers: [...state.servers.values()].map((s) => {
      const rt = wings.runtime(s);
      return { ...serverView(s), console: rt.console.slice(-50), commands: [...rt.commands], files: Object.keys(filesOf(s)) };
    }),
    faults: faults.list(),
  });

  const filesOf = (s: Server): Record<string, string> => {
    const out: Record<string, string> = {};
    const rt = wings.runtime(s);
    for (const [p, e] of [...rt.files.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (p === '') continue;
      if (e.type === 'dir') out[`${p}/`] = '';
      else out[p] = e.content.toString('utf8');
    }
    return out;
  };

  const setNodeMaintenance = (nodeId: number, on: boolean): void => {
    const n = state.nodes.get(nodeId);
    if (!n) throw new Error(`unknown node ${nodeId}`);
    n.maintenance_mode = on;
    n.updated_at = new Date();
  };

  // ------------------------------------------------------ /__sim routes
  const simRoute = async (req: IncomingMessage, url: URL): Promise<Reply> => {
    const method = req.method ?? 'GET';
    const path = url.pathname;
    const raw = await readBody(req);
    let body: unknown;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return { status: 400, body: { error: 'invalid JSON' } };
      }
    }
    const obj = isPlainObject(body) ? body : {};
    try {
      if (method === 'GET' && path === '/__sim/state') return { status: 200, body: snapshot() };
      if (method === 'GET' && path === '/__sim/refused')
        return { status: 200, body: { kind: options.kind ?? 'pterodactyl', refused: pelican?.refused ?? [] } };
      if (method === 'GET' && path === '/__sim/requests')
        return { status: 200, body: { requests: Object.fromEntries(requestCounts), throttled: throttledCount } };
      if (path === '/__sim/faults/release' && method === 'POST') return { status: 200, body: { released: faults.release() } };
      if (path === '/__sim/faults') {
        if (method === 'GET') return { status: 200, body: { faults: faults.list() } };
        if (method === 'POST') {
          const rules = Array.isArray(body) ? body : [body];
          const ids = rules.map((r) => faults.addJson(r as FaultRuleJson));
          return { status: 201, body: { ids, faults: faults.list() } };
        }
        if (method === 'DELETE') {
          const id = url.searchParams.get('id');
          if (id) return { status: faults.remove(id) ? 204 : 404 };
          faults.clear();
          return { status: 204 };
        }
      }
      const m = /^\/__sim\/nodes\/(\d+)\/maintenance$/.exec(path);
      if (m && (method === 'POST' || method === 'PUT')) {
        const on = obj.enabled ?? obj.on ?? true;
        setNodeMaintenance(Number(m[1]), on === true || on === 1 || on === '1' || on === 'true');
        return { status: 200, body: { id: Number(m[1]), maintenance_mode: state.nodes.get(Number(m[1]))?.maintenance_mode } };
      }
      if (path === '/__sim/keys' && method === 'POST') {
        const userId = Number(obj.user_id);
        if (!state.users.has(userId)) return { status: 404, body: { error: 'unknown user' } };
        return { status: 201, body: { key: state.createKey(userId, 'account').token, user_id: userId } };
      }
      if (path === '/__sim/install-failures' && method === 'POST') {
        wings.failInstalls = Number(obj.count ?? 1);
        return { status: 200, body: { pending: wings.failInstalls } };
      }
      if (path === '/__sim/holds' && method === 'POST') {
        if (typeof obj.installs === 'boolean') wings.options.holdInstalls = obj.installs;
        if (typeof obj.transitions === 'boolean') wings.options.holdTransitions = obj.transitions;
        if (typeof obj.archives === 'boolean') archiveHoldsOf(wings).held = obj.archives;
        return {
          status: 200,
          body: {
            installs: wings.options.holdInstalls === true,
            transitions: wings.options.holdTransitions === true,
            archives: archiveHoldsOf(wings).held,
          },
        };
      }
      if (path === '/__sim/archives/end' && method === 'POST') return { status: 200, body: { ended: archiveHoldsOf(wings).end() } };
      // The panel's cron at the minute `at` (default now): runs the schedules due then and waits for their tasks.
      if (path === '/__sim/schedules/run-due' && method === 'POST') {
        const at = typeof obj.at === 'string' ? new Date(obj.at) : new Date();
        if (Number.isNaN(at.getTime())) return { status: 400, body: { error: 'at: not a date' } };
        const started = schedules.runDue(at);
        await schedules.settled();
        return { status: 200, body: { started } };
      }
      const ending = /^\/__sim\/servers\/([^/]+)\/(end-install|end-transition)$/.exec(path);
      if (ending && method === 'POST') {
        const s = serverInPath(ending[1] ?? '');
        if (!s) return { status: 404, body: { error: 'unknown server' } };
        return { status: 200, body: { ended: ending[2] === 'end-install' ? wings.endInstall(s) : wings.endTransition(s) } };
      }
      const c = /^\/__sim\/servers\/([^/]+)\/(console|files)$/.exec(path);
      if (c && method === 'GET') {
        const s = serverInPath(c[1] ?? '');
        if (!s) return { status: 404, body: { error: 'unknown server' } };
        const rt = wings.runtime(s);
        return { status: 200, body: c[2] === 'console' ? { lines: rt.console, commands: rt.commands } : { files: filesOf(s) } };
      }
      return { status: 404, body: { error: `no simulator route ${method} ${path}` } };
    } catch (e) {
      return { status: 400, body: { error: e instanceof Error ? e.message : String(e) } };
    }
  };

  // ------------------------------------------- Wings: GET /download/file
  const wingsError = (status: number, error: string): Reply => ({ status, body: { error, request_id: newRequestId() } });
  const download = (url: URL): Reply => {
    const payload = wings.verifyJwt(url.searchParams.get('token') ?? '');
    if (!payload) return wingsError(500, 'An unexpected error was encountered while processing this request');
    const s = [...state.servers.values()].find((x) => x.uuid === payload.server_uuid);
    const uniqueId = String(payload.unique_id ?? '');
    // single use: the token's unique_id is remembered (router/tokens/file.go)
    const unique = !wings.usedDownloadIds.has(uniqueId);
    wings.usedDownloadIds.add(uniqueId);
    if (!s || !unique || typeof payload.file_path !== 'string')
      return wingsError(404, 'The requested resource was not found on this server.');
    const rt = wings.runtime(s);
    const p = normalizePath(payload.file_path);
    const e = rt.files.get(p);
    if (!e) return wingsError(404, 'The requested resources was not found on the system.');
    if (e.type === 'dir') return wingsError(404, 'The requested resource was not found on this server.');
    const name = p.slice(p.lastIndexOf('/') + 1);
    return {
      status: 200,
      headers: { 'content-type': 'application/octet-stream', 'content-disposition': `attachment; filename=${JSON.stringify(name)}` },
      raw: e.content,
    };
  };

  // ------------------------------------------- Wings: POST /upload/file
  /**
   * pterodactyl/wings:router/router_server_files.go postServerUploadFiles: the panel's upload token
   * (single use), multipart field `files` (each file at most `upload_limit`, 100 MB by default),
   * written to `directory` + the file's base name through the server's filesystem (disk limit
   * checked); 200 with no body.
   */
  const upload = async (req: IncomingMessage, url: URL, raw: Buffer): Promise<Reply> => {
    const payload = wings.verifyJwt(url.searchParams.get('token') ?? '');
    if (!payload) return wingsError(500, 'An unexpected error was encountered while processing this request');
    const s = [...state.servers.values()].find((x) => x.uuid === payload.server_uuid);
    const uniqueId = String(payload.unique_id ?? '');
    const unique = !wings.usedDownloadIds.has(uniqueId);
    wings.usedDownloadIds.add(uniqueId);
    if (!s || !unique) return wingsError(404, 'The requested resource was not found on this server.');
    let form: FormData;
    try {
      form = await new Request('http://wings/upload', {
        method: 'POST',
        headers: { 'content-type': String(req.headers['content-type'] ?? '') },
        body: new Uint8Array(raw),
      }).formData();
    } catch {
      return wingsError(400, 'Failed to get multipart form data from request.');
    }
    const files = form.getAll('files').filter((f): f is File => typeof f !== 'string');
    if (files.length === 0) return wingsError(400, 'No files were found on the request body.');
    for (const f of files) {
      if (f.size > UPLOAD_LIMIT_MB * 1024 * 1024) {
        return wingsError(400, `File ${f.name} is larger than the maximum file upload size of ${UPLOAD_LIMIT_MB} MB.`);
      }
    }
    const directory = url.searchParams.get('directory') ?? '';
    for (const f of files) {
      const base = f.name.slice(Math.max(f.name.lastIndexOf('/'), f.name.lastIndexOf('\\')) + 1);
      try {
        wings.writeFile(s, `${directory}/${base}`, Buffer.from(await f.arrayBuffer()));
      } catch (e) {
        if (e instanceof WingsError) return wingsError(e.status, e.message);
        throw e;
      }
    }
    return { status: 200 };
  };

  // ------------------------------------------- Wings: CORS on its HTTP routes
  /**
   * pterodactyl/wings:router/middleware/middleware.go SetAccessControlHeaders: every Wings route
   * answers `Access-Control-Allow-Origin` with the panel URL (`remote`), or the request's Origin when
   * it is one of `allowed_origins` (`*` answers `*`); OPTIONS is 204. So a dashboard on an allowed
   * origin can POST an upload to the signed address from the browser.
   */
  const WINGS_PATHS = new Set(['/download/file', '/download/backup', '/upload/file']);
  const withCors = (req: IncomingMessage, reply: Reply): Reply => {
    const remote = options.remote ?? baseUrl;
    const origin = String(req.headers.origin ?? '');
    const allowed = origin === remote ? undefined : (options.allowedOrigins ?? []).find((o) => o === '*' || o === origin);
    return {
      ...reply,
      headers: {
        'access-control-allow-credentials': 'true',
        'access-control-allow-methods': 'GET, POST, PATCH, PUT, DELETE, OPTIONS',
        'access-control-max-age': '7200',
        'access-control-allow-origin': allowed ?? remote,
        'access-control-allow-headers':
          'Accept, Accept-Encoding, Authorization, Cache-Control, Content-Type, Content-Length, Origin, X-Real-IP, X-CSRF-Token',
        ...(reply.headers ?? {}),
      },
    };
  };

  // -------------------------------------------------- panel request flow
  const applyFault = async (effect: FaultEffect, req: IncomingMessage, res: ServerResponse): Promise<'continue' | 'done'> => {
    switch (effect.kind) {
      case 'latency':
        await sleep(effect.ms);
        return res.destroyed ? 'done' : 'continue';
      case 'lost_response':
        return 'continue';
      case 'hold':
        await faults.hold();
        return res.destroyed ? 'done' : 'continue';
      case 'timeout':
        // accept and never answer; released when the client aborts or the sim closes
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        req.resume();
        return 'done';
      case 'status': {
        const d = statusDefaults(effect.status);
        send(res, renderError(new PanelError(effect.status, effect.code ?? d.code, effect.detail ?? d.detail), req, baseUrl));
        return 'done';
      }
      case 'rate_limit': {
        const limit =
          effect.limit ?? (new URL(req.url ?? '/', 'http://x').pathname.startsWith('/api/client') ? limits.client : limits.application);
        const retry = effect.retryAfter ?? 60;
        send(res, renderError(throttled(limit, retry, Math.ceil(Date.now() / 1000) + retry), req, baseUrl));
        return 'done';
      }
    }
  };

  const handlePanel = async (req: IncomingMessage, url: URL, raw: Buffer): Promise<Reply> => {
    const method = (req.method ?? 'GET').toUpperCase();
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const candidates = routes.filter((r) => r.re.test(path));
    const route = candidates.find((r) => r.method === method || (method === 'HEAD' && r.method === 'GET'));
    if (!route) {
      if (candidates.length > 0) {
        const allowed = [...new Set(candidates.flatMap((r) => (r.method === 'GET' ? ['GET', 'HEAD'] : [r.method])))];
        throw new PanelError(
          405,
          'MethodNotAllowedHttpException',
          `The ${method} method is not supported for route ${path.slice(1)}. Supported methods: ${allowed.join(', ')}.`,
        );
      }
      throw new PanelError(404, 'NotFoundHttpException', `The route ${path.slice(1)} could not be found.`);
    }
    const match = route.re.exec(path) as RegExpExecArray;
    const params: Record<string, string> = {};
    route.names.forEach((n, i) => {
      const rawParam = match[i + 1] ?? '';
      try {
        params[n] = decodeURIComponent(rawParam);
      } catch {
        params[n] = rawParam;
      }
    });

    // auth:sanctum -> 401 (302 to /auth/login without a JSON Accept header)
    const header = String(req.headers.authorization ?? '');
    const pos = header.toLowerCase().lastIndexOf('bearer ');
    const token =
      pos === -1
        ? ''
        : header
            .slice(pos + 7)
            .split(',')[0]!
            .trim();
    const key: ApiKey | undefined = token ? state.keys.get(token) : undefined;
    const user = key ? state.users.get(key.user_id) : undefined;
    if (!key || !user) throw new PanelError(401, 'AuthenticationException', 'Unauthenticated.', {}, 'auth');
    key.last_used_at = new Date();

    // IsValidJson
    if (isJsonContent(req) && raw.length > 0) {
      try {
        JSON.parse(raw.toString('utf8'));
      } catch {
        throw new PanelError(400, 'BadRequestHttpException', 'The JSON data passed in the request appears to be malformed: Syntax error');
      }
    }

    // throttle:api.application / throttle:api.client, keyed by the user's uuid
    const limit = route.api === 'application' ? limits.application : limits.client;
    const rl = limiter.hit(`${route.api}:${user.uuid}`, limit);
    if (!rl.allowed) {
      throttledCount++;
      throw throttled(limit, rl.retryAfter, rl.resetAt);
    }
    const rateHeaders = { 'x-ratelimit-limit': String(limit), 'x-ratelimit-remaining': String(rl.remaining) };

    try {
      if (route.api === 'application') {
        // AuthenticateApplicationUser: the key's owner must be a root admin
        if (!user.root_admin)
          throw new PanelError(403, 'AccessDeniedHttpException', 'This account does not have permission to access the API.');
      } else if (key.key_type === 2) {
        // RequireClientApiKey
        throw new PanelError(
          403,
          'AccessDeniedHttpException',
          'You are attempting to use an application API key on an endpoint that requires a client API key.',
        );
      }

      // TrimStrings is skipped only for /api/client/servers/<36-char uuid>/files paths
      const trim = !/api\/client\/servers\/([a-z0-9-]{36})\/files/.test(path);
      const query: Record<string, string | null> = {};
      for (const [k, v] of url.searchParams) query[k] = clean(v, trim, k) as string | null;
      let body: Record<string, unknown> = {};
      if (raw.length > 0) {
        if (isJsonContent(req)) {
          const parsed = clean(JSON.parse(raw.toString('utf8')), trim);
          if (isPlainObject(parsed)) body = parsed;
        } else if (String(req.headers['content-type'] ?? '').includes('application/x-www-form-urlencoded')) {
          for (const [k, v] of new URLSearchParams(raw.toString('utf8'))) body[k] = clean(v, trim, k);
        }
      }
      const input: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(query)) if (!k.includes('[')) input[k] = v;
      Object.assign(input, body);

      const ctx: Ctx = { req, method, url, path, params, query, body, input, raw, user, key, routeName: route.name };
      const reply = await route.handler(ctx);
      return { ...reply, headers: { ...rateHeaders, ...(reply.headers ?? {}) } };
    } catch (e) {
      if (e instanceof PanelError) {
        e.headers = { ...rateHeaders, ...e.headers };
      }
      throw e;
    }
  };

  const onRequest = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', baseUrl || 'http://127.0.0.1');
    } catch {
      send(res, { status: 400, raw: 'bad request' });
      return;
    }
    try {
      if (url.pathname.startsWith('/__sim/')) {
        send(res, await simRoute(req, url));
        return;
      }
      const counted = `${req.method ?? 'GET'} ${url.pathname}`;
      requestCounts.set(counted, (requestCounts.get(counted) ?? 0) + 1);
      const effect = faults.take(req.method ?? 'GET', url.pathname);
      if (effect && (await applyFault(effect, req, res)) === 'done') return;
      const raw = await readBody(req);
      if (WINGS_PATHS.has(url.pathname) && req.method === 'OPTIONS') {
        send(res, withCors(req, { status: 204 }));
        return;
      }
      if (url.pathname === '/download/file' && (req.method === 'GET' || req.method === 'HEAD')) {
        send(res, withCors(req, download(url)));
        return;
      }
      // The remote API Wings calls with its node token (not an API key): the SFTP login check.
      if (url.pathname === '/api/remote/sftp/auth' && req.method === 'POST') {
        send(res, sftpAuth(sim, req, raw));
        return;
      }
      if (url.pathname === '/download/backup' && (req.method === 'GET' || req.method === 'HEAD')) {
        send(res, withCors(req, downloadBackup(wings, state, url)));
        return;
      }
      if (url.pathname === '/upload/file' && req.method === 'POST') {
        send(res, withCors(req, await upload(req, url, raw)));
        return;
      }
      const reply = await handlePanel(req, url, raw);
      if (effect?.kind === 'lost_response') {
        // The panel did the work; the answer is lost on the way (released like a timeout).
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      send(res, reply);
    } catch (e) {
      if (e instanceof RawReply) {
        send(res, e.reply);
      } else if (e instanceof PanelError) {
        send(res, renderError(e, req, baseUrl));
      } else {
        const code = e instanceof UnknownRuleError ? 'BadMethodCallException' : 'Exception';
        if (!(e instanceof UnknownRuleError)) console.error('[panel-sim] unexpected error', e);
        send(res, renderError(new PanelError(500, code, GENERIC_500), req, baseUrl));
      }
    }
  };

  const httpServer = createServer((req, res) => {
    void onRequest(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(options.port ?? 0, host, () => {
      httpServer.off('error', reject);
      resolve();
    });
  });
  const addr = httpServer.address() as AddressInfo;
  baseUrl = `http://${host.includes(':') ? `[${host}]` : host}:${addr.port}`;
  const consoleSockets = attachConsoleSockets(httpServer, state, wings, {
    panelUrl: () => options.remote ?? baseUrl,
    allowedOrigins: options.allowedOrigins ?? [],
    statsIntervalMs: options.consoleStatsMs ?? 2000,
    tokenCheckMs: options.tokenCheckMs ?? 1000,
    logCount: 150,
  });
  const sftp: SftpListeners | undefined = options.sftp ? await startSftp(state, wings, () => baseUrl, options.sftp) : undefined;

  let closed = false;
  return {
    url: baseUrl,
    appKey: seeded.appKey,
    clientKey: seeded.clientKey,
    serviceUserId: seeded.serviceUserId,
    adminUserId: seeded.adminUserId,
    state,
    wings,
    ...(sftp ? { sftpPorts: sftp.ports } : {}),
    faults: {
      add: (rule) => faults.add(rule),
      remove: (id) => faults.remove(id),
      clear: () => faults.clear(),
      list: () => faults.list(),
      held: () => faults.held(),
      release: () => faults.release(),
    },
    setNodeMaintenance,
    server: (ref) => {
      const s = resolveServer(ref);
      return s ? serverView(s) : undefined;
    },
    powerState: (ref) => {
      const s = resolveServer(ref);
      return s ? wings.runtime(s).power : undefined;
    },
    console: (ref) => {
      const s = resolveServer(ref);
      return s ? [...wings.runtime(s).console] : [];
    },
    commands: (ref) => {
      const s = resolveServer(ref);
      return s ? [...wings.runtime(s).commands] : [];
    },
    files: (ref) => {
      const s = resolveServer(ref);
      return s ? filesOf(s) : {};
    },
    readFile: (ref, path) => {
      const s = resolveServer(ref);
      if (!s) return undefined;
      const e = wings.runtime(s).files.get(normalizePath(path));
      return e && e.type === 'file' ? e.content.toString('utf8') : undefined;
    },
    createUser: (input) =>
      state.createUser({
        email: input.email,
        username: input.username,
        first_name: input.first_name ?? 'Sim',
        last_name: input.last_name ?? 'User',
        root_admin: input.root_admin ?? false,
        external_id: input.external_id ?? null,
      }),
    createClientKey: (userId) => {
      if (!state.users.has(userId)) throw new Error(`unknown user ${userId}`);
      return state.createKey(userId, 'account').token;
    },
    consoleToken: (ref, ttlSeconds = 600) => {
      const s = resolveServer(ref);
      const node = s ? state.nodes.get(s.node_id) : undefined;
      const user = state.users.get(seeded.serviceUserId);
      if (!s || !node || !user) throw new Error(`unknown server ${ref}`);
      return wings.signJwt(
        node,
        { server_uuid: s.uuid, permissions: ['*'], user_uuid: user.uuid, user_id: user.id },
        ttlSeconds,
        `${user.id}${s.uuid}`,
        baseUrl,
      );
    },
    failNextInstalls: (count) => {
      wings.failInstalls = count;
    },
    holdInstalls: (on = true) => {
      wings.options.holdInstalls = on;
    },
    endInstall: (ref) => {
      const s = resolveServer(ref);
      return s ? wings.endInstall(s) : false;
    },
    holdTransitions: (on = true) => {
      wings.options.holdTransitions = on;
    },
    endTransition: (ref) => {
      const s = resolveServer(ref);
      return s ? wings.endTransition(s) : false;
    },
    holdArchives: (on = true) => {
      archiveHoldsOf(wings).held = on;
    },
    endArchives: () => archiveHoldsOf(wings).end(),
    heldArchives: () => archiveHoldsOf(wings).pending,
    snapshot,
    refused: () => [...(pelican?.refused ?? [])],
    setNodeCpu: (nodeId, cpu) => void pelican?.nodeCpu.set(nodeId, cpu),
    close: async () => {
      if (closed) return;
      closed = true;
      schedules.stopTicker();
      wings.close();
      faults.release();
      archiveHoldsOf(wings).held = false;
      archiveHoldsOf(wings).end();
      consoleSockets.close();
      await sftp?.close();
      for (const res of hanging) res.destroy();
      hanging.clear();
      await new Promise<void>((resolve) => {
        httpServer.close(() => resolve());
        httpServer.closeAllConnections();
      });
    },
  };
}
