// Application API (/api/application), pterodactyl/panel:routes/api-application.php.
import { randomUUID } from 'node:crypto';
import { ValidationError, applyQuery, daemonError, displayError, exact, includes, list, notFound, paginate, partial } from './http.ts';
import type { Ctx, Reply, RouteDef, SimContext } from './http.ts';
import { existsRule, isPhpArray, isPlainObject, phpString, uniqueRule, validate } from './rules.ts';
import type { CustomRule, RuleSet } from './rules.ts';
import type { Allocation, Egg, PanelNode, Server, User } from './state.ts';
import { WingsError } from './wings.ts';
import { setUserPassword } from './subusers.ts';
import { appAllocation, appEgg, appLocation, appNest, appNode, appServer, appUser } from './transform.ts';

const A = '/api/application';

// ------------------------------------------------------------------ rules

/** Server::$validationRules (v1.11), keyed by model column. */
const SERVER_RULES = {
  name: 'required|string|min:1|max:191',
  description: 'string',
  memory: 'required|numeric|min:0',
  swap: 'required|numeric|min:-1',
  io: 'required|numeric|between:10,1000',
  cpu: 'required|numeric|min:0',
  threads: 'nullable|regex:/^[0-9-,]+$/',
  oom_disabled: 'sometimes|boolean',
  disk: 'required|numeric|min:0',
  startup: 'required|string',
  skip_scripts: 'sometimes|boolean',
  image: ['required', 'string', 'max:191', 'regex:/^~?[\\w\\.\\/\\-:@ ]*$/'],
  database_limit: 'present|nullable|integer|min:0',
  allocation_limit: 'sometimes|nullable|integer|min:0',
  backup_limit: 'present|nullable|integer|min:0',
} as const;

const USERNAME_RULE: CustomRule = {
  name: 'p_username',
  // Pterodactyl\Rules\Username::message(), verbatim (including the line break).
  message:
    'The :attribute must start and end with alpha-numeric characters and\n                contain only letters, numbers, dashes, underscores, and periods.',
  passes: (v) => typeof v === 'string' && /^[a-z0-9]([\w.-]+)[a-z0-9]$/.test(v.toLowerCase()),
};

/** PHP truthiness (`!$input->deploy`). */
function truthy(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === '' || v === '0') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (isPlainObject(v)) return Object.keys(v).length > 0;
  return true;
}

function toInt(v: unknown): number {
  return Math.trunc(Number(v));
}

function nullableInt(v: unknown): number | null {
  return v === null || v === undefined ? null : toInt(v);
}

function check(data: Record<string, unknown>, rules: Record<string, RuleSet>, attributes?: Record<string, string>): void {
  const failures = validate(data, rules, attributes ? { attributes } : {});
  if (failures.length > 0) throw new ValidationError(failures);
}

// ----------------------------------------------------------------- routes

export function applicationRoutes(sim: SimContext): RouteDef[] {
  const { state, wings } = sim;

  const idParam = (ctx: Ctx, name: string): number => {
    const raw = ctx.params[name] ?? '';
    if (!/^\d+$/.test(raw)) throw notFound();
    return Number(raw);
  };
  const findServer = (ctx: Ctx): Server => {
    const s = state.servers.get(idParam(ctx, 'server'));
    if (!s) throw notFound();
    return s;
  };
  const findUser = (ctx: Ctx): User => {
    const u = state.users.get(idParam(ctx, 'user'));
    if (!u) throw notFound();
    return u;
  };
  const findNode = (ctx: Ctx): PanelNode => {
    const n = state.nodes.get(idParam(ctx, 'node'));
    if (!n) throw notFound();
    return n;
  };
  const ok = (body: unknown, status = 200): Reply => ({ status, body });
  const noContent = (): Reply => ({ status: 204 });

  /** VariableValidatorService at admin level: every egg variable, missing -> null. */
  const validateEggVariables = (eggId: number, fields: Record<string, unknown>): Map<number, string> => {
    const vars = state.variablesOfEgg(eggId);
    // A PHP array: any name is a plain key (`__proto__` too), so no prototype to assign through.
    const env: Record<string, unknown> = Object.create(null);
    const rules: Record<string, RuleSet> = {};
    const attributes: Record<string, string> = {};
    for (const v of vars) {
      env[v.env_variable] = Object.hasOwn(fields, v.env_variable) ? fields[v.env_variable] : null;
      rules[`environment.${v.env_variable}`] = v.rules;
      attributes[`environment.${v.env_variable}`] = `${v.name} variable`;
    }
    check({ environment: env }, rules, attributes);
    const out = new Map<number, string>();
    // stored as `$result->value ?? ''`
    for (const v of vars) out.set(v.id, phpString(env[v.env_variable]));
    return out;
  };

  const unassignedAllocation = (): CustomRule =>
    existsRule((v) => {
      const a = state.allocations.get(Number(v));
      return a !== undefined && a.server_id === null;
    });

  const userExists = existsRule((v) => state.users.has(Number(v)) && /^\d+$/.test(phpString(v)));
  const eggExists = existsRule((v) => state.eggs.has(Number(v)) && /^\d+$/.test(phpString(v)));

  const externalIdUnique = (ignoreId?: number): CustomRule =>
    uniqueRule((v) => [...state.servers.values()].some((s) => s.external_id === phpString(v) && s.id !== ignoreId));

  // ------------------------------------------------------------ locations
  const locations: RouteDef[] = [
    {
      method: 'GET',
      path: `${A}/locations`,
      name: 'api.application.locations',
      handler: (ctx) => {
        const items = applyQuery(ctx, [...state.locations.values()], {
          filters: { short: partial((l) => l.short), long: partial((l) => l.long) },
          sorts: { id: (l) => l.id },
        });
        const page = paginate(ctx, items, sim.baseUrl());
        const inc = includes(ctx);
        return ok({ ...list(page.data.map((l) => appLocation(state, l, inc))), meta: page.meta });
      },
    },
    {
      method: 'GET',
      path: `${A}/locations/{location}`,
      name: 'api.application.locations.view',
      handler: (ctx) => {
        const l = state.locations.get(idParam(ctx, 'location'));
        if (!l) throw notFound();
        return ok(appLocation(state, l, includes(ctx)));
      },
    },
  ];

  // ---------------------------------------------------------------- nodes
  const nodes: RouteDef[] = [
    {
      method: 'GET',
      path: `${A}/nodes`,
      name: 'api.application.nodes',
      handler: (ctx) => {
        const items = applyQuery(ctx, [...state.nodes.values()], {
          filters: {
            uuid: partial((n) => n.uuid),
            name: partial((n) => n.name),
            fqdn: partial((n) => n.fqdn),
            daemon_token_id: partial((n) => n.daemon_token_id),
          },
          sorts: { id: (n) => n.id, uuid: (n) => n.uuid, memory: (n) => n.memory, disk: (n) => n.disk },
        });
        const page = paginate(ctx, items, sim.baseUrl());
        const inc = includes(ctx);
        return ok({ ...list(page.data.map((n) => appNode(state, n, inc))), meta: page.meta });
      },
    },
    {
      // GetDeployableNodesRequest + NodeDeploymentController
      method: 'GET',
      path: `${A}/nodes/deployable`,
      name: 'api.application.nodes.deployable',
      handler: (ctx) => {
        const data: Record<string, unknown> = { ...ctx.input };
        const locIds: unknown[] = [];
        for (const [k, v] of ctx.url.searchParams) if (/^location_ids\[\d*\]$/.test(k)) locIds.push(v);
        if (locIds.length > 0) data.location_ids = locIds;
        check(data, {
          memory: 'required|integer|min:0',
          disk: 'required|integer|min:0',
          location_ids: 'array',
          'location_ids.*': 'integer',
        });
        const viable = state.viableNodes(toInt(data.memory), toInt(data.disk), locIds.map(toInt));
        if (viable.length === 0) {
          throw displayError(
            'No nodes satisfying the requirements specified for automatic deployment could be found.',
            'NoViableNodeException',
          );
        }
        const inc = includes(ctx);
        if (ctx.query.page) {
          const page = paginate(ctx, viable, sim.baseUrl());
          return ok({ ...list(page.data.map((n) => appNode(state, n, inc))), meta: page.meta });
        }
        return ok(list(viable.map((n) => appNode(state, n, inc))));
      },
    },
    {
      method: 'GET',
      path: `${A}/nodes/{node}`,
      name: 'api.application.nodes.view',
      handler: (ctx) => ok(appNode(state, findNode(ctx), includes(ctx))),
    },
    {
      method: 'GET',
      path: `${A}/nodes/{node}/allocations`,
      name: 'api.application.allocations',
      handler: (ctx) => {
        const node = findNode(ctx);
        const items = applyQuery(ctx, state.allocationsOfNode(node.id), {
          filters: {
            ip: exact((a: Allocation) => a.ip),
            port: exact((a: Allocation) => a.port),
            ip_alias: partial((a: Allocation) => a.ip_alias),
            // digits match that server; anything else (false, 0, ...) -> unassigned (AllocationController)
            server_id: (a, value) => (/^[1-9]\d*$/.test(value) ? a.server_id === Number(value) : a.server_id === null),
          },
          sorts: null,
        });
        const page = paginate(ctx, items, sim.baseUrl());
        const inc = includes(ctx);
        return ok({ ...list(page.data.map((a) => appAllocation(state, a, inc))), meta: page.meta });
      },
    },
  ];

  // ----------------------------------------------------------- nests/eggs
  const findNest = (ctx: Ctx) => {
    const n = state.nests.get(idParam(ctx, 'nest'));
    if (!n) throw notFound();
    return n;
  };
  const nests: RouteDef[] = [
    {
      method: 'GET',
      path: `${A}/nests`,
      name: 'api.application.nests',
      handler: (ctx) => {
        const page = paginate(ctx, [...state.nests.values()], sim.baseUrl());
        const inc = includes(ctx);
        return ok({ ...list(page.data.map((n) => appNest(state, n, inc))), meta: page.meta });
      },
    },
    {
      method: 'GET',
      path: `${A}/nests/{nest}`,
      name: 'api.application.nests.view',
      handler: (ctx) => ok(appNest(state, findNest(ctx), includes(ctx))),
    },
    {
      // not paginated (EggController)
      method: 'GET',
      path: `${A}/nests/{nest}/eggs`,
      name: 'api.application.nests.eggs',
      handler: (ctx) => {
        const nest = findNest(ctx);
        const inc = includes(ctx);
        return ok(list(state.eggsOfNest(nest.id).map((e) => appEgg(state, e, inc))));
      },
    },
    {
      // scoped binding: the egg must belong to the nest
      method: 'GET',
      path: `${A}/nests/{nest}/eggs/{egg}`,
      name: 'api.application.nests.eggs.view',
      handler: (ctx) => {
        const nest = findNest(ctx);
        const egg = state.eggs.get(idParam(ctx, 'egg'));
        if (!egg || egg.nest_id !== nest.id) throw notFound();
        return ok(appEgg(state, egg, includes(ctx)));
      },
    },
  ];

  // ---------------------------------------------------------------- users
  const userRules = (ignoreId?: number): Record<string, RuleSet> => {
    const taken = (field: 'email' | 'username' | 'external_id') =>
      uniqueRule((v) =>
        [...state.users.values()].some((u) => u.id !== ignoreId && String(u[field] ?? '').toLowerCase() === phpString(v).toLowerCase()),
      );
    // StoreUserRequest: only() keeps User::$validationRules order, then first/last name.
    return {
      email: ['required', 'email', 'between:1,191', taken('email')],
      external_id: ['sometimes', 'nullable', 'string', 'max:191', taken('external_id')],
      username: ['required', 'between:1,191', taken('username'), USERNAME_RULE],
      password: 'sometimes|nullable|string',
      root_admin: 'boolean',
      language: 'string',
      first_name: 'required|string|between:1,191',
      last_name: 'required|string|between:1,191',
    };
  };
  const userAttributes = { external_id: 'Third Party Identifier', root_admin: 'Root Administrator Status' };
  const userMeta = (u: User) => ({ resource: `${sim.baseUrl()}${A}/users/${u.id}` });

  const users: RouteDef[] = [
    {
      method: 'GET',
      path: `${A}/users`,
      name: 'api.application.users',
      handler: (ctx) => {
        const items = applyQuery(ctx, [...state.users.values()], {
          filters: {
            email: partial((u) => u.email),
            uuid: partial((u) => u.uuid),
            username: partial((u) => u.username),
            external_id: partial((u) => u.external_id),
          },
          sorts: { id: (u) => u.id, uuid: (u) => u.uuid },
        });
        const page = paginate(ctx, items, sim.baseUrl());
        const inc = includes(ctx);
        return ok({ ...list(page.data.map((u) => appUser(state, u, inc))), meta: page.meta });
      },
    },
    {
      method: 'GET',
      path: `${A}/users/external/{external_id}`,
      name: 'api.application.users.external',
      handler: (ctx) => {
        const u = [...state.users.values()].find((x) => x.external_id !== null && x.external_id === ctx.params.external_id);
        if (!u) throw notFound();
        return ok(appUser(state, u, includes(ctx)));
      },
    },
    {
      method: 'GET',
      path: `${A}/users/{user}`,
      name: 'api.application.users.view',
      handler: (ctx) => ok(appUser(state, findUser(ctx), includes(ctx))),
    },
    {
      method: 'POST',
      path: `${A}/users`,
      name: 'api.application.users.store',
      handler: (ctx) => {
        const d = ctx.input;
        check(d, userRules(), userAttributes);
        const u = state.createUser({
          email: String(d.email),
          username: String(d.username),
          first_name: String(d.first_name),
          last_name: String(d.last_name),
          external_id: d.external_id === undefined || d.external_id === null ? null : String(d.external_id),
          root_admin: truthy(d.root_admin),
          language: typeof d.language === 'string' ? d.language : 'en',
        });
        // UserCreationService: a password given is hashed; none, and the user has a random one it does not know.
        if (typeof d.password === 'string') setUserPassword(state, u, d.password);
        return ok({ ...appUser(state, u), meta: userMeta(u) }, 201);
      },
    },
    {
      // same rules as create (uniques ignore this user), UpdateUserRequest
      method: 'PATCH',
      path: `${A}/users/{user}`,
      name: 'api.application.users.update',
      handler: (ctx) => {
        const u = findUser(ctx);
        const d = ctx.input;
        check(d, userRules(u.id), userAttributes);
        u.email = String(d.email);
        u.username = String(d.username).toLowerCase();
        u.first_name = String(d.first_name);
        u.last_name = String(d.last_name);
        if (Object.hasOwn(d, 'external_id')) u.external_id = d.external_id === null ? null : String(d.external_id);
        if (d.root_admin !== undefined) u.root_admin = truthy(d.root_admin);
        if (typeof d.language === 'string') u.language = d.language;
        // UserUpdateService: an empty password leaves the old one.
        if (typeof d.password === 'string') setUserPassword(state, u, d.password);
        u.updated_at = new Date();
        return ok(appUser(state, u));
      },
    },
    {
      method: 'DELETE',
      path: `${A}/users/{user}`,
      name: 'api.application.users.delete',
      handler: (ctx) => {
        const u = findUser(ctx);
        if (state.serversOfUser(u.id).length > 0) {
          throw displayError('Cannot delete a user with active servers attached to their account. Delete their servers before continuing.');
        }
        state.users.delete(u.id);
        for (const [token, key] of state.keys) if (key.user_id === u.id) state.keys.delete(token);
        return noContent();
      },
    },
  ];

  // -------------------------------------------------------------- servers

  /** StoreServerRequest (+ withValidator sometimes-rules) */
  const createRules = (data: Record<string, unknown>): Record<string, RuleSet> => {
    const deploy = truthy(data.deploy);
    return {
      external_id: ['sometimes', 'nullable', 'string', 'between:1,191', externalIdUnique()],
      name: SERVER_RULES.name,
      description: ['nullable', SERVER_RULES.description],
      user: ['required', 'integer', userExists],
      egg: ['required', eggExists],
      docker_image: [...SERVER_RULES.image],
      startup: SERVER_RULES.startup,
      environment: 'present|array',
      skip_scripts: 'sometimes|boolean',
      oom_disabled: 'sometimes|boolean',
      limits: 'required|array',
      'limits.memory': SERVER_RULES.memory,
      'limits.swap': SERVER_RULES.swap,
      'limits.disk': SERVER_RULES.disk,
      'limits.io': SERVER_RULES.io,
      'limits.threads': SERVER_RULES.threads,
      'limits.cpu': SERVER_RULES.cpu,
      feature_limits: 'required|array',
      'feature_limits.databases': SERVER_RULES.database_limit,
      'feature_limits.allocations': SERVER_RULES.allocation_limit,
      'feature_limits.backups': SERVER_RULES.backup_limit,
      'allocation.default': deploy ? [] : ['required', 'integer', 'bail', unassignedAllocation()],
      'allocation.additional.*': deploy ? [] : ['integer', unassignedAllocation()],
      deploy: 'sometimes|required|array',
      'deploy.locations': deploy ? ['array', 'present'] : 'array',
      'deploy.locations.*': 'integer|min:1',
      // (sic) the panel's rule string is `required_with:deploy,boolean`, so there is no boolean check
      'deploy.dedicated_ip': 'required_with:deploy,boolean',
      'deploy.port_range': deploy ? ['array', 'present'] : 'array',
      'deploy.port_range.*': 'string',
      start_on_completion: 'sometimes|boolean',
    };
  };

  /** AllocationSelectionService + FindViableNodesService (auto-deploy via `deploy`). */
  const deployAllocation = (deploy: Record<string, unknown>, memory: number, disk: number): Allocation => {
    const locs = Array.isArray(deploy.locations) ? deploy.locations.map(toInt) : [];
    const viable = state.viableNodes(memory, disk, locs);
    if (viable.length === 0) {
      throw displayError(
        'No nodes satisfying the requirements specified for automatic deployment could be found.',
        'NoViableNodeException',
      );
    }
    const singles: number[] = [];
    const ranges: Array<[number, number]> = [];
    for (const p of Array.isArray(deploy.port_range) ? deploy.port_range : []) {
      const s = phpString(p);
      if (/^\d+$/.test(s)) singles.push(Number(s));
      const m = /^(\d{4,5})-(\d{4,5})$/.exec(s);
      if (m) {
        const a = Number(m[1]);
        const b = Number(m[2]);
        if (Math.abs(b - a) > 1000) throw displayError('Adding more than 1000 ports in a single range at once is not supported.');
        ranges.push([a, b]);
      }
    }
    const anyPort = singles.length === 0 && ranges.length === 0;
    const nodeIds = new Set(viable.map((n) => n.id));
    let candidates = [...state.allocations.values()].filter(
      (a) =>
        a.server_id === null &&
        nodeIds.has(a.node_id) &&
        (anyPort || singles.includes(a.port) || ranges.some(([x, y]) => a.port >= x && a.port <= y)),
    );
    if (truthy(deploy.dedicated_ip)) {
      const used = new Set([...state.allocations.values()].filter((a) => a.server_id !== null).map((a) => `${a.node_id}-${a.ip}`));
      candidates = candidates.filter((a) => !used.has(`${a.node_id}-${a.ip}`));
    }
    const pick = candidates[Math.floor(Math.random() * candidates.length)];
    if (!pick)
      throw displayError('No allocations satisfying the requirements for automatic deployment were found.', 'NoViableAllocationException');
    return pick;
  };

  const servers: RouteDef[] = [
    {
      method: 'GET',
      path: `${A}/servers`,
      name: 'api.application.servers',
      handler: (ctx) => {
        // all partial LIKE filters, including external_id (ServerController)
        const items = applyQuery(ctx, [...state.servers.values()], {
          filters: {
            uuid: partial((s) => s.uuid),
            uuidShort: partial((s) => s.uuidShort),
            name: partial((s) => s.name),
            description: partial((s) => s.description),
            image: partial((s) => s.image),
            external_id: partial((s) => s.external_id),
          },
          sorts: { id: (s) => s.id, uuid: (s) => s.uuid },
        });
        const page = paginate(ctx, items, sim.baseUrl());
        const inc = includes(ctx);
        return ok({ ...list(page.data.map((s) => appServer(state, s, inc))), meta: page.meta });
      },
    },
    {
      method: 'GET',
      path: `${A}/servers/external/{external_id}`,
      name: 'api.application.servers.external',
      handler: (ctx) => {
        const s = [...state.servers.values()].find((x) => x.external_id !== null && x.external_id === ctx.params.external_id);
        if (!s) throw notFound();
        return ok(appServer(state, s, includes(ctx)));
      },
    },
    {
      method: 'GET',
      path: `${A}/servers/{server}`,
      name: 'api.application.servers.view',
      handler: (ctx) => ok(appServer(state, findServer(ctx), includes(ctx))),
    },
    {
      method: 'POST',
      path: `${A}/servers`,
      name: 'api.application.servers.store',
      handler: (ctx) => {
        const d = ctx.input;
        // 1. request validation, 2. egg variables (both 422, nothing created)
        check(d, createRules(d));
        const egg = state.eggs.get(toInt(d.egg)) as Egg;
        const env = isPlainObject(d.environment) ? d.environment : {};
        const values = validateEggVariables(egg.id, env);
        const limits = d.limits as Record<string, unknown>;
        const fl = d.feature_limits as Record<string, unknown>;
        const memory = toInt(limits.memory);
        const disk = toInt(limits.disk);
        let primary: Allocation;
        let additional: Allocation[] = [];
        if (truthy(d.deploy) && isPlainObject(d.deploy)) {
          primary = deployAllocation(d.deploy, memory, disk);
        } else {
          const alloc = d.allocation as Record<string, unknown>;
          primary = state.allocations.get(toInt(alloc.default)) as Allocation;
          if (isPhpArray(alloc.additional)) {
            const ids = Object.values(alloc.additional).map(toInt);
            additional = ids.map((id) => state.allocations.get(id)).filter((a): a is Allocation => a !== undefined && a.server_id === null);
          }
        }
        // 3. insert with status=installing, assign allocations
        const uuid = uniqueUuid();
        const now = new Date();
        const server: Server = {
          id: state.nextId('servers'),
          external_id: d.external_id === undefined || d.external_id === null ? null : String(d.external_id),
          uuid,
          uuidShort: uuid.slice(0, 8),
          node_id: primary.node_id,
          name: String(d.name),
          description: d.description === undefined || d.description === null ? '' : String(d.description),
          status: 'installing',
          skip_scripts: truthy(d.skip_scripts),
          owner_id: toInt(d.user),
          memory,
          swap: toInt(limits.swap),
          disk,
          io: toInt(limits.io),
          cpu: toInt(limits.cpu),
          threads: limits.threads === undefined || limits.threads === null ? null : phpString(limits.threads),
          // top-level oom_disabled only; limits.oom_disabled is dropped (Laravel drops unvalidated array keys)
          oom_disabled: d.oom_disabled === undefined || d.oom_disabled === null ? true : truthy(d.oom_disabled),
          allocation_id: primary.id,
          nest_id: egg.nest_id,
          egg_id: egg.id,
          startup: String(d.startup),
          image: String(d.docker_image),
          // feature-limit nulls are stored as 0 on create
          database_limit: nullableInt(fl.databases) ?? 0,
          allocation_limit: nullableInt(fl.allocations) ?? 0,
          backup_limit: nullableInt(fl.backups) ?? 0,
          created_at: now,
          updated_at: now,
          installed_at: null,
          variables: values,
        };
        state.servers.set(server.id, server);
        primary.server_id = server.id;
        for (const a of additional) a.server_id = server.id;
        // 4. Wings create (202, installs in the background)
        wings.create(server, truthy(d.start_on_completion));
        return ok(appServer(state, server), 201);
      },
    },
    {
      // UpdateServerDetailsRequest + DetailsModificationService: every field is written
      method: 'PATCH',
      path: `${A}/servers/{server}/details`,
      name: 'api.application.servers.details',
      handler: (ctx) => {
        const s = findServer(ctx);
        const d = ctx.input;
        // The second argument: UpdateServerDetailsRequest::attributes(), the names its messages use.
        check(
          d,
          {
            external_id: ['sometimes', 'nullable', 'string', 'between:1,191', externalIdUnique(s.id)],
            name: SERVER_RULES.name,
            user: ['required', 'integer', userExists],
            description: ['nullable', SERVER_RULES.description],
          },
          { user: 'User ID', name: 'Server Name' },
        );
        s.external_id = d.external_id === undefined || d.external_id === null ? null : String(d.external_id);
        s.owner_id = toInt(d.user);
        s.name = String(d.name);
        s.description = d.description === undefined || d.description === null ? '' : String(d.description);
        s.updated_at = new Date();
        return ok(appServer(state, s));
      },
    },
    {
      // UpdateServerBuildConfigurationRequest + BuildModificationService
      method: 'PATCH',
      path: `${A}/servers/{server}/build`,
      name: 'api.application.servers.build',
      handler: (ctx) => {
        const s = findServer(ctx);
        const d = ctx.input;
        const allocationRule: RuleSet = [
          'required',
          'bail',
          // unique:servers,allocation_id,<this server> -> not another server's primary
          uniqueRule((v) => [...state.servers.values()].some((x) => x.id !== s.id && x.allocation_id === Number(v))),
          existsRule((v) => state.allocations.has(Number(v))),
        ];
        const opt = (rule: string, limits: boolean): string => {
          const parts = rule.split('|');
          if (!parts.includes('required')) return rule;
          return [limits ? 'required_with:limits' : 'required_without:limits', ...parts.filter((p) => p !== 'required')].join('|');
        };
        check(d, {
          allocation: allocationRule,
          oom_disabled: SERVER_RULES.oom_disabled,
          limits: 'sometimes|array',
          'limits.memory': opt(SERVER_RULES.memory, true),
          'limits.swap': opt(SERVER_RULES.swap, true),
          'limits.io': opt(SERVER_RULES.io, true),
          'limits.cpu': opt(SERVER_RULES.cpu, true),
          'limits.threads': opt(SERVER_RULES.threads, true),
          'limits.disk': opt(SERVER_RULES.disk, true),
          memory: opt(SERVER_RULES.memory, false),
          swap: opt(SERVER_RULES.swap, false),
          io: opt(SERVER_RULES.io, false),
          cpu: opt(SERVER_RULES.cpu, false),
          threads: opt(SERVER_RULES.threads, false),
          disk: opt(SERVER_RULES.disk, false),
          add_allocations: 'bail|array',
          'add_allocations.*': 'integer',
          remove_allocations: 'bail|array',
          'remove_allocations.*': 'integer',
          feature_limits: 'required|array',
          'feature_limits.databases': SERVER_RULES.database_limit,
          'feature_limits.allocations': SERVER_RULES.allocation_limit,
          'feature_limits.backups': SERVER_RULES.backup_limit,
        });
        const src: Record<string, unknown> = isPlainObject(d.limits) && Object.keys(d.limits).length > 0 ? { ...d, ...d.limits } : d;
        const fl = d.feature_limits as Record<string, unknown>;
        let allocationId = toInt(d.allocation);
        const add = isPhpArray(d.add_allocations) ? Object.values(d.add_allocations).map(toInt) : [];
        const remove = isPhpArray(d.remove_allocations) ? Object.values(d.remove_allocations).map(toInt) : [];
        // processAllocations: add unassigned ones on the same node; removing the primary needs a fallback.
        const toAssign = add
          .map((id) => state.allocations.get(id))
          .filter((a): a is Allocation => !!a && a.node_id === s.node_id && a.server_id === null);
        const fresh = toAssign[0]?.id;
        for (const id of remove) {
          if (id === allocationId) {
            if (fresh === undefined) {
              throw displayError(
                'You are attempting to delete the default allocation for this server but there is no fallback allocation to use.',
              );
            }
            allocationId = fresh;
          }
        }
        const target = state.allocations.get(allocationId);
        const willBeAssigned =
          target && (target.server_id === s.id || toAssign.includes(target)) && !(remove.includes(target.id) && !add.includes(target.id));
        if (allocationId !== s.allocation_id && !willBeAssigned) {
          throw displayError('The requested default allocation is not currently assigned to this server.');
        }
        for (const a of toAssign) {
          a.server_id = s.id;
          a.notes = null;
        }
        for (const id of remove) {
          if (add.includes(id)) continue;
          const a = state.allocations.get(id);
          if (a && a.node_id === s.node_id && a.server_id === s.id) {
            a.server_id = null;
            a.notes = null;
          }
        }
        s.allocation_id = allocationId;
        for (const k of ['memory', 'swap', 'io', 'cpu', 'disk'] as const) if (src[k] !== undefined && src[k] !== null) s[k] = toInt(src[k]);
        if (Object.hasOwn(src, 'threads')) s.threads = src.threads === null ? null : phpString(src.threads);
        if (d.oom_disabled !== undefined && d.oom_disabled !== null) s.oom_disabled = truthy(d.oom_disabled);
        s.database_limit = nullableInt(fl.databases);
        s.allocation_limit = nullableInt(fl.allocations);
        s.backup_limit = nullableInt(fl.backups) ?? 0;
        s.updated_at = new Date();
        // ApplicationApiController parses `include` on every request, this one too.
        return ok(appServer(state, s, includes(ctx)));
      },
    },
    {
      // UpdateServerStartupRequest + StartupModificationService
      method: 'PATCH',
      path: `${A}/servers/{server}/startup`,
      name: 'api.application.servers.startup',
      handler: (ctx) => {
        const s = findServer(ctx);
        const d = ctx.input;
        check(d, {
          startup: SERVER_RULES.startup,
          environment: 'present|array',
          egg: ['required', eggExists],
          image: [...SERVER_RULES.image],
          skip_scripts: 'present|boolean',
        });
        const eggId = toInt(d.egg);
        const env = isPlainObject(d.environment) ? d.environment : {};
        let values: Map<number, string> | null = null;
        if (Object.keys(env).length > 0) values = validateEggVariables(eggId, env);
        if (eggId !== s.egg_id) {
          const egg = state.eggs.get(eggId) as Egg;
          s.egg_id = egg.id;
          s.nest_id = egg.nest_id;
        }
        if (values) for (const [k, v] of values) s.variables.set(k, v);
        s.startup = String(d.startup);
        s.image = String(d.image);
        s.skip_scripts = truthy(d.skip_scripts);
        s.updated_at = new Date();
        return ok(appServer(state, s));
      },
    },
    {
      method: 'POST',
      path: `${A}/servers/{server}/suspend`,
      name: 'api.application.servers.suspend',
      handler: (ctx) => {
        const s = findServer(ctx);
        if (s.status !== 'suspended') {
          s.status = 'suspended';
          s.updated_at = new Date();
          // Wings stops a running server when it gets suspended.
          wings.power(s, 'stop');
        }
        return noContent();
      },
    },
    {
      method: 'POST',
      path: `${A}/servers/{server}/unsuspend`,
      name: 'api.application.servers.unsuspend',
      handler: (ctx) => {
        const s = findServer(ctx);
        if (s.status === 'suspended') {
          s.status = null;
          s.updated_at = new Date();
        }
        return noContent();
      },
    },
    {
      method: 'POST',
      path: `${A}/servers/{server}/reinstall`,
      name: 'api.application.servers.reinstall',
      handler: (ctx) => {
        const s = findServer(ctx);
        // ReinstallServerService: status and the Wings call in one transaction (a Wings refusal keeps the status).
        try {
          wings.reinstall(s);
        } catch (e) {
          if (e instanceof WingsError) throw daemonError(e.status, e.message);
          throw e;
        }
        s.status = 'installing';
        s.updated_at = new Date();
        return noContent();
      },
    },
    {
      method: 'DELETE',
      path: `${A}/servers/{server}`,
      name: 'api.application.servers.delete',
      handler: (ctx) => {
        const s = findServer(ctx);
        wings.remove(s);
        state.deleteServer(s.id);
        return noContent();
      },
    },
    {
      method: 'DELETE',
      path: `${A}/servers/{server}/force`,
      name: 'api.application.servers.delete.force',
      handler: (ctx) => {
        const s = findServer(ctx);
        wings.remove(s);
        state.deleteServer(s.id);
        return noContent();
      },
    },
  ];

  const uniqueUuid = (): string => {
    for (;;) {
      const u = randomUUID();
      if (![...state.servers.values()].some((s) => s.uuidShort === u.slice(0, 8))) return u;
    }
  };

  return [...locations, ...nodes, ...nests, ...users, ...servers];
}
