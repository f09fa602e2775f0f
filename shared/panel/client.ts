import { createHash } from 'node:crypto';
import { logger } from '../observability/logger.ts';
import { putMetric } from '../observability/metrics.ts';
import { sleepWithin, timeLeftMs } from './deadline.ts';
import { PanelRequestError, type PanelErrorEntry } from './errors.ts';
import { ruleList } from './rules.ts';
import type {
  BuildBody,
  CreateServerBody,
  DetailsBody,
  Envelope,
  ListEnvelope,
  PanelAccount,
  PanelAllocation,
  PanelEgg,
  PanelEggVariable,
  PanelFileObject,
  PanelKind,
  PanelLocation,
  PanelNest,
  PanelNode,
  PanelServer,
  PanelServerWithAllocations,
  PanelStats,
  PanelSubuser,
  PanelUser,
  StartupBody,
} from './types.ts';

/**
 * HTTP client for one panel, the Pterodactyl adapter: every panel kind answers callers through
 * this class's methods and shapes; the Pelican adapter (pelican.ts) overrides only what Pelican
 * does differently. The Application API with the application key and the Client API with the
 * service user's client key (pterodactyl/panel:routes/api-application.php, routes/api-client.php).
 *
 * - Every call has a timeout (AbortSignal); a timeout is 504 `panel_timeout`.
 * - Only idempotent calls are retried on network errors, timeouts and 5xx, with exponential
 *   backoff; any call is retried on 429 (the panel did nothing), honouring Retry-After.
 * - Failures become our envelope: `panel_error` 502 with the panel's status and its 422 field
 *   errors in details; the panel's 409 state gate becomes `conflict` 409.
 * - Keys go only into the Authorization header: never into a message, an error or a log line.
 * - Metrics (shared/observability/metrics.ts), by instance: each attempt sent (`PanelCalls`), each
 *   without an answer (`PanelUnreachable`), each request-rate 429 (`PanelRateLimited`).
 *
 * It uses the runtime's fetch (undici inside Node), so the Lambda bundles carry no HTTP library.
 */
export type PanelApi = 'application' | 'client';
/**
 * Application API writes change servers (create, build, suspend, unsuspend, delete); its GETs are
 * reads; every Client API call is control (power, command, console, files, resources). The budget
 * caps each class per account; the caller (platform or an account) comes from the budget itself.
 */
export type PanelCallKind = 'read' | 'write';

/**
 * The shared call budget of one panel (shared/instances/call-budget.ts). `spend` throws
 * `panel_unavailable` when the call must not be sent; `observe` hands it the panel's
 * X-RateLimit-Limit and X-RateLimit-Remaining of an answer; `pause` records a 429 for every process.
 */
export interface CallBudget {
  spend(api: PanelApi, kind: PanelCallKind): Promise<void>;
  observe(api: PanelApi, limit: number | undefined, remaining: number | undefined): Promise<void>;
  pause(api: PanelApi, retryAfterMs: number): Promise<void>;
}

export interface PanelClientOptions {
  baseUrl: string;
  /** The registered instance: the `Instance` of its metrics (absent: a client built outside shared/instances). */
  instanceId?: string;
  /** Every call spends one unit of it first; without one (tests of the client alone) nothing is counted. */
  budget?: CallBudget;
  appKey: string;
  clientKey?: string;
  timeoutMs?: number;
  /** Attempts for a retryable failure, the first included. */
  maxAttempts?: number;
  /** Longest Retry-After we wait for before giving up. */
  maxRetryAfterMs?: number;
  baseBackoffMs?: number;
}

type Api = PanelApi;

interface RequestSpec {
  api: Api;
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  path: string;
  query?: Record<string, string | number | undefined>;
  json?: unknown;
  text?: string;
  /** Safe to repeat: retried on network errors, timeouts and 5xx. */
  idempotent: boolean;
  /** What a 2xx carries. */
  expect: 'json' | 'text' | 'none';
  timeoutMs?: number;
}

/** A wait never runs past the request's deadline (the next attempt would be refused anyway). */
const sleep = (ms: number) => sleepWithin(ms, MIN_ATTEMPT_MS);

/** Less than this left, and an attempt could not get an answer back in time: do not start one. */
const MIN_ATTEMPT_MS = 250;

/** Limiters of one route and server allow at most 10 (pelican-dev/panel config/http.php); panel-wide ones are far above. */
const ROUTE_LIMIT_BELOW = 60;

const consoleCredentials = new Map<string, { value: { token: string; socket: string }; until: number }>();
const CONSOLE_CREDENTIALS_KEPT_MS = 5 * 60_000;

/** Pterodactyl's rule string split as Laravel splits it (`explode('|')`); Pelican's list kept. */
export function withRuleLists(egg: PanelEgg): PanelEgg {
  for (const { attributes: v } of egg.relationships?.variables?.data ?? [])
    (v as { rules: PanelEggVariable['rules'] }).rules = ruleList(v.rules);
  return egg;
}

/** What a client is told to wait when the panel is down: long enough not to pile on, short enough to recover. */
const UNREACHABLE_RETRY_S = 30;

export class PanelClient {
  readonly baseUrl: string;
  readonly hasClientKey: boolean;
  private readonly instance: string;
  private readonly appKey: string;
  private readonly clientKey: string | undefined;
  private clientKeyDigest: string | undefined;
  private readonly timeoutMs: number;
  private readonly maxAttempts: number;
  private readonly maxRetryAfterMs: number;
  private readonly baseBackoffMs: number;
  private readonly budget: CallBudget | undefined;

  constructor(options: PanelClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.instance = options.instanceId ?? 'unregistered';
    this.appKey = options.appKey;
    this.clientKey = options.clientKey;
    this.hasClientKey = Boolean(options.clientKey);
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxAttempts = options.maxAttempts ?? 3;
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? 5_000;
    this.baseBackoffMs = options.baseBackoffMs ?? 200;
    this.budget = options.budget;
  }

  readonly kind: PanelKind = 'pterodactyl';

  // ---- Application API -----------------------------------------------------------------------

  /** The regions and the nodes in them: Pterodactyl's locations, a node's `location_id` naming its own. */
  async topology(): Promise<{ locations: PanelLocation[]; nodes: PanelNode[] }> {
    const [locations, nodes] = await Promise.all([this.listLocations(), this.listNodes()]);
    return { locations, nodes };
  }

  listLocations(): Promise<PanelLocation[]> {
    return this.listAll<PanelLocation>('/locations');
  }

  listNodes(): Promise<PanelNode[]> {
    return this.listAll<PanelNode>('/nodes');
  }

  async getNode(nodeId: number): Promise<PanelNode> {
    return (await this.app<Envelope<PanelNode>>('GET', `/nodes/${nodeId}`)).attributes;
  }

  /** Free allocations of a node (`filter[server_id]=false` returns unassigned ones). */
  async listFreeAllocations(nodeId: number, perPage = 100): Promise<PanelAllocation[]> {
    const list = await this.app<ListEnvelope<PanelAllocation>>('GET', `/nodes/${nodeId}/allocations`, {
      query: { 'filter[server_id]': 'false', per_page: perPage },
    });
    return list.data.map((d) => d.attributes).filter((a) => !a.assigned);
  }

  listNests(): Promise<PanelNest[]> {
    return this.listAll<PanelNest>('/nests');
  }

  /** Every egg of the panel with its variables and its nest: the nests, then the eggs of each. */
  async listAllEggs(): Promise<{ egg: PanelEgg; nest: Pick<PanelNest, 'id' | 'name'> }[]> {
    const nests = await this.listNests();
    return (await Promise.all(nests.map(async (nest) => (await this.listEggs(nest.id)).map((egg) => ({ egg, nest }))))).flat();
  }

  /** Eggs of a nest with their variables (the panel does not paginate them). */
  async listEggs(nestId: number): Promise<PanelEgg[]> {
    return this.eggList(`/nests/${nestId}/eggs`);
  }

  protected async eggList(path: string): Promise<PanelEgg[]> {
    const list = await this.app<ListEnvelope<PanelEgg>>('GET', path, { query: { include: 'variables' } });
    return list.data.map((d) => withRuleLists(d.attributes));
  }

  async getUserByExternalId(externalId: string): Promise<PanelUser | null> {
    return this.orNull(
      async () => (await this.app<Envelope<PanelUser>>('GET', `/users/external/${encodeURIComponent(externalId)}`)).attributes,
    );
  }

  async createUser(body: {
    email: string;
    username: string;
    first_name?: string;
    last_name?: string;
    external_id: string;
    /** Absent: the panel sets a random one (and mails a reset link to the e-mail). */
    password?: string;
  }): Promise<PanelUser> {
    return this.attributes<PanelUser>('application', 'POST', '/users', this.userBody(body), false);
  }

  /**
   * Sets a user's password. The panel's PATCH takes the same rules as a create, so email, username
   * and both names are required (pterodactyl/panel:app/Http/Requests/Api/Application/Users/UpdateUserRequest.php).
   * Setting the same password twice is harmless, so this is retried. The body goes only into the request.
   */
  async setUserPassword(
    userId: number,
    body: { email: string; username: string; first_name?: string; last_name?: string; password: string },
  ): Promise<PanelUser> {
    return this.attributes<PanelUser>('application', 'PATCH', `/users/${userId}`, this.userBody(body), true);
  }

  /**
   * Adds a user (by e-mail) as a subuser of a server (Client API, as the server's owner). Not
   * retried: a lost answer is settled by the caller (a second add is refused as "already assigned").
   */
  async addSubuser(identifier: string, email: string, permissions: string[]): Promise<PanelSubuser> {
    return this.attributes<PanelSubuser>('client', 'POST', `/servers/${identifier}/users`, { email, permissions }, false);
  }

  /** Replaces a subuser's permissions (Client API `POST /servers/{server}/users/{user uuid}`); the same list again is a no-op. */
  async updateSubuser(identifier: string, userUuid: string, permissions: string[]): Promise<PanelSubuser> {
    return this.attributes<PanelSubuser>('client', 'POST', `/servers/${identifier}/users/${userUuid}`, { permissions }, true);
  }

  /** Removes a subuser (Client API); a subuser already gone (404) is done. */
  async deleteSubuser(identifier: string, userUuid: string): Promise<void> {
    await this.orNull(() => this.serverCall(identifier, 'DELETE', `/users/${userUuid}`, { idempotent: true }));
  }

  /** Every server of the panel (paginated reads, 100 a page). */
  listServers(): Promise<PanelServer[]> {
    return this.listAll<PanelServer>('/servers');
  }

  async getServer(serverId: number): Promise<PanelServer> {
    return (await this.app<Envelope<PanelServer>>('GET', `/servers/${serverId}`)).attributes;
  }

  /**
   * The server with how many allocations and databases it holds (the Application API's
   * `include=allocations,databases`): one call, for changes of its feature limits (shared/servers/addons.ts).
   */
  async getServerWithUsage(serverId: number): Promise<{ server: PanelServer; allocations: number; databases: number }> {
    const envelope = await this.app<
      Envelope<PanelServer & { relationships?: { allocations?: { data: unknown[] }; databases?: { data: unknown[] } } }>
    >('GET', `/servers/${serverId}`, { query: { include: 'allocations,databases' } });
    const { relationships, ...server } = envelope.attributes;
    return {
      server,
      allocations: relationships?.allocations?.data.length ?? 0,
      databases: relationships?.databases?.data.length ?? 0,
    };
  }

  /** Exact lookup by our id (the external route; `filter[external_id]` is a substring match). */
  async getServerByExternalId(externalId: string): Promise<PanelServer | null> {
    return this.orNull(
      async () => (await this.app<Envelope<PanelServer>>('GET', `/servers/external/${encodeURIComponent(externalId)}`)).attributes,
    );
  }

  /** Not retried: a second create could make a second server. Callers resolve ambiguity by external id. */
  async createServer(body: CreateServerBody, timeoutMs = Math.max(this.timeoutMs, 20_000)): Promise<PanelServer> {
    // The panel calls Wings inside the create, so it gets a longer timeout.
    return this.attributes<PanelServer>('application', 'POST', '/servers', this.buildBody(body), false, timeoutMs);
  }

  /** Setting the same limits twice is harmless, so this is retried. */
  async updateBuild(serverId: number, body: BuildBody): Promise<PanelServer> {
    return (await this.buildPatch<PanelServer>(serverId, body)).attributes;
  }

  /** The server with its allocations (`include=allocations`): the build a change of ports sends back, and the ports it holds. */
  async getServerWithAllocations(serverId: number): Promise<PanelServerWithAllocations> {
    return (await this.app<Envelope<PanelServerWithAllocations>>('GET', `/servers/${serverId}`, { query: { include: 'allocations' } }))
      .attributes;
  }

  /**
   * A build change that adds or removes allocations, answered with the server's allocations after
   * it (the panel silently skips an added one that is not free on the server's node). Adding or
   * removing the same allocation twice is harmless, so this is retried too.
   */
  async updateBuildWithAllocations(serverId: number, body: BuildBody): Promise<PanelServerWithAllocations> {
    return (await this.buildPatch<PanelServerWithAllocations>(serverId, body, 'allocations')).attributes;
  }

  private buildPatch<T>(serverId: number, body: BuildBody, include?: 'allocations'): Promise<Envelope<T>> {
    return this.request<Envelope<T>>({
      api: 'application',
      method: 'PATCH',
      path: `/servers/${serverId}/build`,
      ...(include ? { query: { include } } : {}),
      json: this.buildBody(body),
      idempotent: true,
      expect: 'json',
    });
  }

  /**
   * Name, owner, external id and description (pterodactyl/panel DetailsModificationService): the
   * panel writes all four, an omitted external id as null and an omitted description as '', so
   * the caller sends the current ones. The same details twice are harmless, so this is retried.
   */
  async updateDetails(serverId: number, body: DetailsBody): Promise<PanelServer> {
    return this.attributes<PanelServer>('application', 'PATCH', `/servers/${serverId}/details`, body, true);
  }

  /**
   * Startup command, egg, image and variables (pterodactyl/panel StartupModificationService): a
   * non-empty `environment` re-writes every egg variable, one missing from it as '', so the caller
   * sends them all. Wings takes the change at the next start. Setting the same twice is harmless.
   */
  async updateStartup(serverId: number, body: StartupBody): Promise<PanelServer> {
    return this.attributes<PanelServer>('application', 'PATCH', `/servers/${serverId}/startup`, body, true);
  }

  /** No-op on the panel if already suspended, so retried. */
  suspendServer(serverId: number): Promise<void> {
    return this.appDo('POST', `/servers/${serverId}/suspend`, true);
  }

  unsuspendServer(serverId: number): Promise<void> {
    return this.appDo('POST', `/servers/${serverId}/unsuspend`, true);
  }

  /** Deleting a server that is already gone counts as done. */
  async deleteServer(serverId: number, force = false): Promise<void> {
    try {
      await this.appDo('DELETE', `/servers/${serverId}${force ? '/force' : ''}`, true);
    } catch (err) {
      if (err instanceof PanelRequestError && err.panelStatus === 404) return;
      throw err;
    }
  }

  /**
   * 204: the panel sets `installing` and Wings runs the egg's install script again (files are kept).
   * Not retried: a second reinstall would restart the install.
   */
  reinstallServer(serverId: number): Promise<void> {
    return this.appDo('POST', `/servers/${serverId}/reinstall`, false);
  }

  /**
   * The servers of these uuids in one call: `filter[uuid]` is a partial match and a comma value an OR
   * (spatie/laravel-query-builder), and a whole uuid matches only itself. At most 50 uuids a call, so
   * the URL stays short and every match fits the one page of 100.
   */
  async listServersByUuid(uuids: readonly string[]): Promise<PanelServer[]> {
    if (uuids.length === 0) return [];
    if (uuids.length > 50) throw new RangeError('At most 50 uuids a call');
    const list = await this.app<ListEnvelope<PanelServer>>('GET', '/servers', {
      query: { 'filter[uuid]': uuids.join(','), per_page: 100 },
    });
    const wanted = new Set(uuids.map((u) => u.toLowerCase()));
    return list.data.map((d) => d.attributes).filter((s) => wanted.has(s.uuid.toLowerCase()));
  }

  // ---- Client API (the service user's client key) --------------------------------------------

  async getAccount(): Promise<PanelAccount> {
    return (await this.client<Envelope<PanelAccount>>('GET', '/account')).attributes;
  }

  async getResources(identifier: string): Promise<PanelStats> {
    return (await this.client<Envelope<PanelStats>>('GET', `/servers/${identifier}/resources`)).attributes;
  }

  /** 204 means accepted, not done (Wings runs power actions asynchronously). Not retried: `restart` twice restarts twice. */
  power(identifier: string, signal: 'start' | 'stop' | 'restart' | 'kill'): Promise<void> {
    return this.serverCall(identifier, 'POST', '/power', { json: { signal }, idempotent: false });
  }

  sendCommand(identifier: string, command: string): Promise<void> {
    return this.serverCall(identifier, 'POST', '/command', { json: { command }, idempotent: false });
  }

  /**
   * The console's websocket credentials, kept per server for half the panel's token lifetime (both
   * panels sign for 10 minutes: pterodactyl/panel and pelican-dev/panel
   * app/Http/Controllers/Api/Client/Servers/WebsocketController.php), so every console opened
   * meanwhile gets at least 5 minutes from one panel call (Pelican allows 5 a minute a server).
   */
  async websocket(identifier: string): Promise<{ token: string; socket: string }> {
    // Under the key that obtained them: new keys (a rotation, a revoked key replaced) never get a
    // token the old key fetched. A digest, so no key sits in memory twice.
    this.clientKeyDigest ??= createHash('sha256')
      .update(this.clientKey ?? '')
      .digest('base64url')
      .slice(0, 22);
    const key = `${this.baseUrl} ${this.clientKeyDigest} ${identifier}`;
    const hit = consoleCredentials.get(key);
    if (hit && hit.until > Date.now()) return hit.value;
    const value = (await this.client<{ data: { token: string; socket: string } }>('GET', `/servers/${identifier}/websocket`)).data;
    if (consoleCredentials.size > 1000) consoleCredentials.clear();
    consoleCredentials.set(key, { value, until: Date.now() + CONSOLE_CREDENTIALS_KEPT_MS });
    return value;
  }

  async listFiles(identifier: string, directory: string): Promise<PanelFileObject[]> {
    const list = await this.client<ListEnvelope<PanelFileObject>>('GET', `/servers/${identifier}/files/list`, { directory });
    return list.data.map((d) => d.attributes);
  }

  fileContents(identifier: string, file: string): Promise<string> {
    return this.request({
      api: 'client',
      method: 'GET',
      path: `/servers/${identifier}/files/contents`,
      query: { file },
      idempotent: true,
      expect: 'text',
    });
  }

  /** Raw body (not JSON) with `?file=`; writing the same content twice is harmless. */
  writeFile(identifier: string, file: string, content: string): Promise<void> {
    return this.request({
      api: 'client',
      method: 'POST',
      path: `/servers/${identifier}/files/write`,
      query: { file },
      text: content,
      idempotent: true,
      expect: 'none',
    });
  }

  /**
   * The panel URL-decodes the name once more before signing the link (`rawurldecode`,
   * pterodactyl/panel:app/Http/Controllers/Api/Client/Servers/FileController.php::download), so
   * every `%` is sent as `%25`: a file named `a%41.txt` stays `a%41.txt`, not `aA.txt`.
   */
  async downloadUrl(identifier: string, file: string): Promise<string> {
    const query = { file: file.replace(/%/g, '%25') };
    return (await this.client<Envelope<{ url: string }>>('GET', `/servers/${identifier}/files/download`, query)).attributes.url;
  }

  deleteFiles(identifier: string, root: string, files: string[]): Promise<void> {
    return this.serverCall(identifier, 'POST', '/files/delete', { json: { root, files }, idempotent: true });
  }

  /**
   * A Client API call on one server for the operations that load with their own routes
   * (shared/servers/files.ts, backups.ts: folders, rename, upload, archives, backups), so their
   * paths and bodies stay out of every cold start; the same transport, budget, retries and errors.
   */
  serverCall<T = void>(
    identifier: string,
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    options: { json?: unknown; query?: RequestSpec['query']; idempotent: boolean; expect?: 'json' | 'none'; timeoutMs?: number },
  ): Promise<T> {
    return this.request<T>({ api: 'client', method, path: `/servers/${identifier}${path}`, ...options, expect: options.expect ?? 'none' });
  }

  // ---- where the panels differ (pelican.ts overrides these) --------------------------------------

  /** A user's create or update body: Pterodactyl requires both names. */
  protected userBody<T extends object>(body: T): object {
    return body;
  }

  /** A create or build body: Pterodactyl takes `oom_disabled` as callers give it. */
  protected buildBody(body: CreateServerBody | BuildBody): object {
    return body;
  }

  /** A 429 of a limiter on this route alone (Pterodactyl: `throttle:10,5` on files/pull, routes/api-client.php). */
  protected perRouteLimited(path: string): boolean {
    return path.endsWith('/files/pull');
  }

  // ---- transport -----------------------------------------------------------------------------

  /** An Application API change answered with no body. */
  private appDo(method: 'POST' | 'DELETE', path: string, idempotent: boolean): Promise<void> {
    return this.request({ api: 'application', method, path, idempotent, expect: 'none' });
  }

  /** A call answered with one item: its attributes. */
  private async attributes<T>(
    api: Api,
    method: RequestSpec['method'],
    path: string,
    json: unknown,
    idempotent: boolean,
    timeoutMs?: number,
  ) {
    return (await this.request<Envelope<T>>({ api, method, path, json, idempotent, expect: 'json', timeoutMs })).attributes;
  }

  /** An Application API read (public for shared/panel/detect.ts). */
  app<T>(method: 'GET', path: string, options: { query?: RequestSpec['query'] } = {}): Promise<T> {
    return this.request<T>({ api: 'application', method, path, query: options.query, idempotent: true, expect: 'json' });
  }

  private client<T>(method: 'GET', path: string, query?: RequestSpec['query']): Promise<T> {
    return this.request<T>({ api: 'client', method, path, query, idempotent: true, expect: 'json' });
  }

  private async listAll<T>(path: string): Promise<T[]> {
    const out: T[] = [];
    for (let page = 1; page <= 100; page++) {
      const list = await this.app<ListEnvelope<T>>('GET', path, { query: { page, per_page: 100 } });
      out.push(...list.data.map((d) => d.attributes));
      const pagination = list.meta?.pagination;
      if (!pagination || pagination.current_page >= pagination.total_pages) break;
    }
    return out;
  }

  async orNull<T>(fn: () => Promise<T>): Promise<T | null> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof PanelRequestError && err.panelStatus === 404) return null;
      throw err;
    }
  }

  private async request<T>(spec: RequestSpec): Promise<T> {
    const key = spec.api === 'application' ? this.appKey : this.clientKey;
    if (!key) throw new PanelRequestError('panel_error', 'This instance has no client key', undefined);
    const url = new URL(`${this.baseUrl}/api/${spec.api}${spec.path}`);
    for (const [k, v] of Object.entries(spec.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const what = `${spec.method} /api/${spec.api}${spec.path}`;

    const kind: PanelCallKind = spec.api === 'application' && spec.method !== 'GET' ? 'write' : 'read';
    for (let attempt = 1; ; attempt++) {
      // Fitted into the time the request has left: no attempt that could not finish before it.
      const left = timeLeftMs();
      if (left < MIN_ATTEMPT_MS) {
        logger.warn('panel call skipped: the request is out of time', { call: what, attempt, leftMs: Math.max(0, left) });
        throw new PanelRequestError('panel_timeout', 'The panel did not answer in the time this request has', undefined, [], {
          sent: attempt > 1,
        });
      }
      // Every attempt is a request the panel counts: each one spends the shared budget first.
      await this.budget?.spend(spec.api, kind);
      // CallClass: the budget's class of the call (call-budget.ts classOf), Client API calls all control.
      putMetric('PanelCalls', 1, { Instance: this.instance, Api: spec.api, CallClass: spec.api === 'client' ? 'control' : kind });
      let response: globalThis.Response;
      try {
        response = await fetch(url, {
          method: spec.method,
          headers: {
            authorization: `Bearer ${key}`,
            accept: 'application/json',
            ...(spec.json !== undefined
              ? { 'content-type': 'application/json' }
              : spec.text !== undefined
                ? { 'content-type': 'text/plain' }
                : {}),
          },
          body: spec.json !== undefined ? JSON.stringify(spec.json) : spec.text,
          signal: AbortSignal.timeout(Math.min(spec.timeoutMs ?? this.timeoutMs, left)),
        });
      } catch (err) {
        putMetric('PanelUnreachable', 1, { Instance: this.instance });
        const timedOut = (err as Error).name === 'TimeoutError' || (err as Error).name === 'AbortError';
        if (spec.idempotent && attempt < this.maxAttempts) {
          logger.warn('panel call failed, retrying', { call: what, attempt, reason: timedOut ? 'timeout' : 'network' });
          await sleep(this.backoff(attempt));
          continue;
        }
        logger.warn('panel call failed', { call: what, reason: timedOut ? 'timeout' : 'network' });
        if (timedOut) throw new PanelRequestError('panel_timeout', 'The panel did not answer in time', undefined);
        throw new PanelRequestError('panel_unavailable', 'The panel could not be reached', undefined, [], {
          retryAfterSeconds: UNREACHABLE_RETRY_S,
        });
      }

      // The body first: the attempt's timeout still runs while it is read.
      if (response.ok) {
        let out: T = undefined as T;
        if (spec.expect === 'json') out = (await response.json()) as T;
        else if (spec.expect === 'text') out = (await response.text()) as T;
        else await response.body?.cancel();
        await this.observeLimits(spec.api, response.headers);
        return out;
      }

      const errors = await readErrors(response);
      // A 429 the panel's own logic answers (the backup throttle: TooManyRequestsHttpException), or a
      // limiter of this route and server alone (its X-RateLimit-Limit far below any panel-wide one),
      // not the panel's request rate limit: this call fails alone, nothing to pause, nothing to retry now.
      const routeLimit = Number(response.headers.get('x-ratelimit-limit') ?? 0);
      if (
        response.status === 429 &&
        (errors.some((e) => e.code === 'TooManyRequestsHttpException') ||
          (this.perRouteLimited(spec.path) && routeLimit < ROUTE_LIMIT_BELOW))
      ) {
        // The panel-wide limiter let it through: its headers count; a route limiter's own do not.
        if (routeLimit >= ROUTE_LIMIT_BELOW) await this.observeLimits(spec.api, response.headers);
        const wait = retryAfterMs(response.headers.get('retry-after'));
        throw new PanelRequestError('rate_limited', 'The panel allows this only a few times per server in a short time', 429, errors, {
          retryAfterSeconds: Math.max(1, Math.ceil((wait ?? 60_000) / 1000)),
        });
      }
      // A 429's "0 remaining" is the pause's to handle (below), not a count to add.
      if (response.status !== 429) await this.observeLimits(spec.api, response.headers);
      if (response.status === 429) {
        putMetric('PanelRateLimited', 1, { Instance: this.instance });
        // The panel did nothing. Every process holds off until its Retry-After (up to 60 s on a
        // real panel); only a short wait is worth waiting out inside this request.
        const wait = retryAfterMs(response.headers.get('retry-after')) ?? this.backoff(attempt);
        await this.budget?.pause(spec.api, wait);
        if (wait <= this.maxRetryAfterMs && attempt < this.maxAttempts) {
          logger.warn('panel rate limit, retrying', { call: what, attempt, waitMs: wait });
          await sleep(wait);
          continue;
        }
        logger.warn('panel rate limit', { call: what, waitMs: wait });
        throw new PanelRequestError(
          'panel_unavailable',
          'The panel is rate limiting requests; nothing was changed by this one',
          429,
          errors,
          { retryAfterSeconds: Math.max(1, Math.ceil(wait / 1000)) },
        );
      }
      // A 504 DaemonConnectionException is the panel saying Wings did not answer it: the panel
      // already waited on Wings, so asking again at once only spends budget.
      const wingsDown = response.status === 504 && errors.some((e) => e.code === 'DaemonConnectionException');
      // 502, 503 and a 504 of the panel's proxy (not the panel's own word on Wings): nothing answered for the panel.
      if (response.status >= 502 && response.status <= 504 && !wingsDown) putMetric('PanelUnreachable', 1, { Instance: this.instance });
      if (response.status >= 500 && spec.idempotent && attempt < this.maxAttempts && !wingsDown) {
        logger.warn('panel error, retrying', { call: what, attempt, status: response.status });
        await sleep(this.backoff(attempt));
        continue;
      }
      // The panel's own paths stay in the log; callers see what happened, not where.
      logger.warn('panel call refused', { call: what, status: response.status });
      throw toError(response.status, errors);
    }
  }

  /** The panel's own count corrects the shared budget; never fails the call it came with. */
  private async observeLimits(api: Api, headers: Headers): Promise<void> {
    if (!this.budget) return;
    const header = (name: string) => {
      const value = headers.get(name);
      const n = value === null || value.trim() === '' ? Number.NaN : Number(value);
      return Number.isInteger(n) && n >= 0 ? n : undefined;
    };
    try {
      await this.budget.observe(api, header('x-ratelimit-limit'), header('x-ratelimit-remaining'));
    } catch (err) {
      logger.warn('panel rate-limit headers not recorded', { api, error: (err as Error).name });
    }
  }

  private backoff(attempt: number): number {
    const base = this.baseBackoffMs * 2 ** (attempt - 1);
    return base + Math.floor(Math.random() * base * 0.25);
  }
}

async function readErrors(response: globalThis.Response): Promise<PanelErrorEntry[]> {
  try {
    const body = (await response.json()) as { errors?: PanelErrorEntry[] };
    return Array.isArray(body.errors) ? body.errors : [];
  } catch {
    return [];
  }
}

function retryAfterMs(value: string | null): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

function toError(status: number, errors: PanelErrorEntry[]): PanelRequestError {
  const detail = errors[0]?.detail;
  if (status === 409)
    return new PanelRequestError(
      'conflict',
      detail ?? 'The panel refused: the server is busy (installing, suspended or in maintenance)',
      status,
      errors,
    );
  if (status === 422)
    return new PanelRequestError(
      'panel_error',
      `The panel rejected the request: ${
        errors
          .map((e) => e.detail)
          .filter(Boolean)
          .join(' ') || 'validation failed'
      }`,
      status,
      errors,
    );
  if (status === 401 || status === 403)
    return new PanelRequestError('panel_error', `The panel refused the instance's key (${status})`, status, errors);
  if (status === 504) return new PanelRequestError('panel_timeout', 'The panel timed out', status, errors);
  // Down for maintenance or behind a proxy that cannot reach it: unavailable, not broken.
  if (status === 502 || status === 503)
    return new PanelRequestError('panel_unavailable', `The panel is unavailable (${status})`, status, errors, {
      retryAfterSeconds: UNREACHABLE_RETRY_S,
    });
  return new PanelRequestError('panel_error', `The panel answered ${status}${detail ? `: ${detail}` : ''}`, status, errors);
}
