// Pelican mode of the simulator (startPanelSim({ kind: 'pelican' })): the same panel and Wings,
// answering in Pelican's shapes (pelican-dev/panel v1.0.0-beta38) and strict about what Pelican
// has not got. Every difference is here, each with the Pelican source it follows:
//
// - no locations (no Location model) and no nests: /api/application/locations* and /nests* are
//   404 and recorded; eggs at /api/application/eggs and /eggs/{id} (routes/api-application.php);
// - nodes carry `tags` (the seeded location's short code) and `cpu`, no `location_id`
//   (app/Models/Node.php, app/Transformers/Api/Application/NodeTransformer.php);
// - an egg variable's `rules` is an array of strings (app/Models/EggVariable.php); eggs have no `nest`;
// - servers take `oom_killer` (StoreServerRequest, UpdateServerBuildConfigurationRequest) and answer
//   both `limits.oom_killer` and the deprecated `limits.oom_disabled` (ServerTransformer);
//   `oom_disabled` in a create or build is refused and recorded (Pelican would drop it silently);
// - users have no first or last name (StoreUserRequest `only([...])`): a body with them is refused
//   and recorded (Pelican would drop them silently), and answers carry none;
// - `deploy.locations` is refused (Pelican takes `deploy.tags`);
// - per-server limiters of single routes (routes/api-client.php, app/Enums/ResourceLimit.php,
//   config/http.php): websocket credentials 5 a minute, subuser create 10 and backup restore 3
//   per 15 minutes, answered 429 ThrottleRequestsException with their own X-RateLimit-Limit and
//   Retry-After;
// - keys `papp_` / `pacc_` (app/Models/ApiKey.php) and 256 a minute on each API (config/http.php).
import { PanelError, ValidationError, includes, list, notFound } from './http.ts';
import type { Ctx, RouteDef, SimContext } from './http.ts';
import { isPlainObject } from './rules.ts';
import { appEgg } from './transform.ts';

export interface Refusal {
  method: string;
  path: string;
  reason: string;
}

const A = '/api/application';

/** Pelican's per-server limiters by route name: [max, period in seconds]. */
const ROUTE_LIMITS: Record<string, [number, number]> = {
  'api:client:server.ws': [5, 60],
  'api:client:server.users.create': [10, 900],
  'api:client:server.backups.restore': [3, 900],
};

/** Fields of a request body Pelican has not got, by route name. */
const NOT_PELICAN: Record<string, string[]> = {
  'api.application.servers.store': ['oom_disabled', 'deploy.locations'],
  'api.application.servers.build': ['oom_disabled'],
  'api.application.users.store': ['first_name', 'last_name'],
  'api.application.users.update': ['first_name', 'last_name'],
};

export class PelicanMode {
  readonly refused: Refusal[] = [];
  /** A node's CPU capacity in percent, by node id (a test control); 0, the default, is unlimited. */
  readonly nodeCpu = new Map<number, number>();
  private readonly buckets = new Map<string, { hits: number; resetAt: number }>();

  private readonly sim: SimContext;

  constructor(sim: SimContext) {
    this.sim = sim;
  }

  /** The Pterodactyl routes in Pelican's terms (application or client), plus Pelican's egg routes. */
  routes(defs: RouteDef[], api: 'application' | 'client'): RouteDef[] {
    const out = defs.map((def) => {
      if (def.path.startsWith(`${A}/locations`) || def.path.startsWith(`${A}/nests`)) {
        return { ...def, handler: (ctx: Ctx) => this.refuse(ctx, 'Pelican has no locations and no nests', 404) };
      }
      return { ...def, handler: async (ctx: Ctx) => this.shaped(await def.handler(this.request(ctx))) };
    });
    if (api === 'client') return out;
    const { state } = this.sim;
    const eggs: RouteDef[] = [
      {
        method: 'GET',
        path: `${A}/eggs`,
        name: 'api.application.eggs.eggs',
        // Egg::all(), not paginated (app/Http/Controllers/Api/Application/Eggs/EggController.php)
        handler: (ctx) => this.shaped({ status: 200, body: list([...state.eggs.values()].map((e) => appEgg(state, e, includes(ctx)))) }),
      },
      {
        method: 'GET',
        path: `${A}/eggs/{egg}`,
        name: 'api.application.eggs.eggs.view',
        handler: (ctx) => {
          const egg = /^\d+$/.test(ctx.params.egg ?? '') ? state.eggs.get(Number(ctx.params.egg)) : undefined;
          if (!egg) throw notFound();
          return this.shaped({ status: 200, body: appEgg(state, egg, includes(ctx)) });
        },
      },
    ];
    return [...out, ...eggs];
  }

  /** Refuses (and records) what Pelican has not got; turns what it has into what the Pterodactyl handlers read. */
  private request(ctx: Ctx): Ctx {
    // The route's limiter (middleware) before the request's rules (the controller's FormRequest).
    const limit = ROUTE_LIMITS[ctx.routeName];
    if (limit) this.throttle(ctx, limit[0], limit[1]);
    for (const field of NOT_PELICAN[ctx.routeName] ?? []) {
      const [head, tail] = field.split('.') as [string, string | undefined];
      const value = ctx.body[head];
      if (tail ? isPlainObject(value) && tail in value : head in ctx.body) {
        this.refuse(ctx, `${field} is not a Pelican field`, 422, field);
      }
    }
    if (ctx.routeName === 'api.application.servers.store' || ctx.routeName === 'api.application.servers.build') {
      if ('oom_killer' in ctx.body) {
        const killer = ctx.body.oom_killer;
        delete ctx.body.oom_killer;
        delete ctx.input.oom_killer;
        // A boolean as Laravel reads one: true, 1, '1' (anything else the Pterodactyl rule refuses as it is).
        const disabled =
          killer === true || killer === 1 || killer === '1' ? false : killer === false || killer === 0 || killer === '0' ? true : killer;
        ctx.body.oom_disabled = disabled;
        ctx.input.oom_disabled = disabled;
      }
    }
    if (ctx.routeName === 'api.application.users.store' || ctx.routeName === 'api.application.users.update') {
      // The Pterodactyl handlers require both names; Pelican keeps none (answers carry none).
      for (const name of ['first_name', 'last_name']) {
        ctx.body[name] = 'Pelican';
        ctx.input[name] = 'Pelican';
      }
    }
    return ctx;
  }

  /** Laravel's limiter of one route and one server (`Limit::perMinutes(...)->by($server->uuid)`). */
  private throttle(ctx: Ctx, max: number, periodSeconds: number): void {
    const server = this.sim.state.serverByIdentifier(ctx.params.server ?? '');
    if (!server) return;
    const key = `${ctx.routeName} ${server.uuid}`;
    const now = Date.now();
    let bucket = this.buckets.get(key);
    if (!bucket || bucket.resetAt <= now) {
      bucket = { hits: 0, resetAt: now + periodSeconds * 1000 };
      this.buckets.set(key, bucket);
    }
    const retryAfter = Math.max(1, Math.ceil((bucket.resetAt - now) / 1000));
    if (bucket.hits >= max) {
      throw new PanelError(429, 'ThrottleRequestsException', 'Too Many Attempts.', {
        'x-ratelimit-limit': String(max),
        'x-ratelimit-remaining': '0',
        'retry-after': String(retryAfter),
        'x-ratelimit-reset': String(Math.ceil(bucket.resetAt / 1000)),
      });
    }
    bucket.hits++;
  }

  private refuse(ctx: Ctx, reason: string, status: 404 | 422, field?: string): never {
    this.refused.push({ method: ctx.method, path: ctx.path, reason });
    if (status === 404) throw new PanelError(404, 'NotFoundHttpException', `The route ${ctx.path.slice(1)} could not be found.`);
    throw new ValidationError([{ field: field ?? '', rule: 'prohibited', message: `The ${field} field is prohibited.` }]);
  }

  /** Pelican's shapes of what the Pterodactyl handlers answered. */
  private shaped<T extends { body?: unknown }>(reply: T): T {
    const { state } = this.sim;
    const walk = (value: unknown): void => {
      if (Array.isArray(value)) {
        for (const v of value) walk(v);
        return;
      }
      if (!isPlainObject(value)) return;
      const a = value.attributes;
      if (typeof value.object === 'string' && isPlainObject(a)) {
        if (value.object === 'node') {
          const short = state.locations.get(Number(a.location_id))?.short;
          a.tags = short ? [short] : [];
          delete a.location_id;
          a.daemon_connect = a.daemon_listen;
          a.cpu = this.nodeCpu.get(Number(a.id)) ?? 0;
          a.cpu_overallocate = 0;
          if (isPlainObject(a.allocated_resources)) {
            const nodeId = Number(a.id);
            a.allocated_resources.cpu = [...state.servers.values()].filter((s) => s.node_id === nodeId).reduce((n, s) => n + s.cpu, 0);
          }
        } else if (value.object === 'egg_variable' && typeof a.rules === 'string') {
          a.rules = a.rules.split('|').filter((r) => r !== '');
        } else if (value.object === 'egg' || value.object === 'server') {
          // An egg's tags (Pelican's grouping where Pterodactyl has nests): here its seeded nest's name.
          if (value.object === 'egg') a.tags = [state.nests.get(Number(a.nest))?.name.toLowerCase() ?? 'other'];
          delete a.nest;
          if (isPlainObject(a.limits) && typeof a.limits.oom_disabled === 'boolean') a.limits.oom_killer = !a.limits.oom_disabled;
        } else if (value.object === 'user') {
          delete a.first_name;
          delete a.last_name;
        }
      }
      for (const v of Object.values(value)) walk(v);
    };
    walk(reply.body);
    return reply;
  }
}
