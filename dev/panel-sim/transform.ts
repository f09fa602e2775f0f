// Fractal transformers for the Application and Client APIs (the panel's
// app/Transformers/Api/ and PterodactylSerializer). Includes are placed in attributes.relationships.
import { atom, item, laravelTs, list, nullResource } from './http.ts';
import type { Envelope } from './http.ts';
import type { Allocation, Egg, EggVariable, Location, Nest, PanelNode, PanelState, Server, User } from './state.ts';

type Inc = Set<string>;

function withRelationships(attrs: Record<string, unknown>, rel: Record<string, unknown>): Record<string, unknown> {
  if (Object.keys(rel).length > 0) attrs.relationships = rel;
  return attrs;
}

// ------------------------------------------------------------ application

export function appLocation(state: PanelState, l: Location, inc: Inc = new Set()): Envelope {
  const rel: Record<string, unknown> = {};
  if (inc.has('nodes')) rel.nodes = list(state.nodesOfLocation(l.id).map((n) => appNode(state, n)));
  if (inc.has('servers')) {
    const nodeIds = new Set(state.nodesOfLocation(l.id).map((n) => n.id));
    rel.servers = list([...state.servers.values()].filter((s) => nodeIds.has(s.node_id)).map((s) => appServer(state, s)));
  }
  return item(
    'location',
    withRelationships({ id: l.id, short: l.short, long: l.long, updated_at: atom(l.updated_at), created_at: atom(l.created_at) }, rel),
  );
}

export function appNode(state: PanelState, n: PanelNode, inc: Inc = new Set()): Envelope {
  const rel: Record<string, unknown> = {};
  if (inc.has('allocations')) rel.allocations = list(state.allocationsOfNode(n.id).map((a) => appAllocation(state, a)));
  if (inc.has('location')) {
    const l = state.locations.get(n.location_id);
    rel.location = l ? appLocation(state, l) : nullResource();
  }
  if (inc.has('servers')) rel.servers = list(state.serversOfNode(n.id).map((s) => appServer(state, s)));
  return item(
    'node',
    withRelationships(
      {
        id: n.id,
        uuid: n.uuid,
        public: n.public,
        name: n.name,
        description: n.description,
        location_id: n.location_id,
        fqdn: n.fqdn,
        scheme: n.scheme,
        behind_proxy: n.behind_proxy,
        maintenance_mode: n.maintenance_mode,
        memory: n.memory,
        memory_overallocate: n.memory_overallocate,
        disk: n.disk,
        disk_overallocate: n.disk_overallocate,
        upload_size: n.upload_size,
        daemon_listen: n.daemon_listen,
        daemon_sftp: n.daemon_sftp,
        daemon_base: n.daemon_base,
        created_at: atom(n.created_at),
        updated_at: atom(n.updated_at),
        allocated_resources: state.allocatedResources(n.id),
      },
      rel,
    ),
  );
}

export function appAllocation(state: PanelState, a: Allocation, inc: Inc = new Set()): Envelope {
  const rel: Record<string, unknown> = {};
  if (inc.has('node')) {
    const n = state.nodes.get(a.node_id);
    rel.node = n ? appNode(state, n) : nullResource();
  }
  if (inc.has('server')) {
    const s = a.server_id !== null ? state.servers.get(a.server_id) : undefined;
    rel.server = s ? appServer(state, s) : nullResource();
  }
  // The application transformer calls the alias `alias` (the client one `ip_alias`).
  return item(
    'allocation',
    withRelationships({ id: a.id, ip: a.ip, alias: a.ip_alias, port: a.port, notes: a.notes, assigned: a.server_id !== null }, rel),
  );
}

export function appNest(state: PanelState, n: Nest, inc: Inc = new Set()): Envelope {
  const rel: Record<string, unknown> = {};
  if (inc.has('eggs')) rel.eggs = list(state.eggsOfNest(n.id).map((e) => appEgg(state, e)));
  if (inc.has('servers')) rel.servers = list([...state.servers.values()].filter((s) => s.nest_id === n.id).map((s) => appServer(state, s)));
  return item(
    'nest',
    withRelationships(
      {
        id: n.id,
        uuid: n.uuid,
        author: n.author,
        name: n.name,
        description: n.description,
        created_at: atom(n.created_at),
        updated_at: atom(n.updated_at),
      },
      rel,
    ),
  );
}

export function appEggVariable(v: EggVariable): Envelope {
  // EggVariableTransformer dumps toArray(): Laravel default timestamps.
  return item('egg_variable', {
    id: v.id,
    egg_id: v.egg_id,
    name: v.name,
    description: v.description,
    env_variable: v.env_variable,
    default_value: v.default_value,
    user_viewable: v.user_viewable,
    user_editable: v.user_editable,
    rules: v.rules,
    created_at: laravelTs(v.created_at),
    updated_at: laravelTs(v.updated_at),
  });
}

export function appEgg(state: PanelState, e: Egg, inc: Inc = new Set()): Envelope {
  const rel: Record<string, unknown> = {};
  if (inc.has('nest')) {
    const n = state.nests.get(e.nest_id);
    rel.nest = n ? appNest(state, n) : nullResource();
  }
  if (inc.has('servers')) rel.servers = list([...state.servers.values()].filter((s) => s.egg_id === e.id).map((s) => appServer(state, s)));
  if (inc.has('variables')) rel.variables = list(state.variablesOfEgg(e.id).map(appEggVariable));
  const files = Object.keys(e.config.files).length === 0 ? {} : e.config.files;
  const startup = Object.keys(e.config.startup).length === 0 ? [] : e.config.startup;
  return item(
    'egg',
    withRelationships(
      {
        id: e.id,
        uuid: e.uuid,
        name: e.name,
        nest: e.nest_id,
        author: e.author,
        description: e.description,
        // docker_image (deprecated) is the first value of docker_images.
        docker_image: Object.values(e.docker_images)[0] ?? '',
        docker_images: e.docker_images,
        config: {
          files,
          startup,
          stop: e.config.stop,
          logs: e.config.logs,
          file_denylist: e.config.file_denylist,
          extends: e.config.extends,
        },
        startup: e.startup,
        script: { ...e.script },
        created_at: atom(e.created_at),
        updated_at: atom(e.updated_at),
      },
      rel,
    ),
  );
}

export function appUser(state: PanelState, u: User, inc: Inc = new Set()): Envelope {
  const rel: Record<string, unknown> = {};
  if (inc.has('servers')) rel.servers = list(state.serversOfUser(u.id).map((s) => appServer(state, s)));
  return item(
    'user',
    withRelationships(
      {
        id: u.id,
        external_id: u.external_id,
        uuid: u.uuid,
        username: u.username,
        email: u.email,
        first_name: u.first_name,
        last_name: u.last_name,
        language: u.language,
        root_admin: u.root_admin,
        '2fa': u.use_totp,
        created_at: atom(u.created_at),
        updated_at: atom(u.updated_at),
      },
      rel,
    ),
  );
}

export function isInstalled(s: Server): boolean {
  return s.status !== 'installing' && s.status !== 'install_failed';
}

export function appServer(state: PanelState, s: Server, inc: Inc = new Set()): Envelope {
  const rel: Record<string, unknown> = {};
  if (inc.has('allocations')) rel.allocations = list(state.allocationsOfServer(s.id).map((a) => appAllocation(state, a)));
  if (inc.has('user')) {
    const u = state.users.get(s.owner_id);
    rel.user = u ? appUser(state, u) : nullResource();
  }
  if (inc.has('subusers')) rel.subusers = list([]);
  if (inc.has('nest')) {
    const n = state.nests.get(s.nest_id);
    rel.nest = n ? appNest(state, n) : nullResource();
  }
  if (inc.has('egg')) {
    const e = state.eggs.get(s.egg_id);
    rel.egg = e ? appEgg(state, e) : nullResource();
  }
  if (inc.has('variables')) {
    rel.variables = list(
      state.variablesOfEgg(s.egg_id).map((v) => {
        const env = appEggVariable(v);
        return item('server_variable', { ...(env.attributes ?? {}), server_value: s.variables.get(v.id) ?? null });
      }),
    );
  }
  if (inc.has('location')) {
    const n = state.nodes.get(s.node_id);
    const l = n ? state.locations.get(n.location_id) : undefined;
    rel.location = l ? appLocation(state, l) : nullResource();
  }
  if (inc.has('node')) {
    const n = state.nodes.get(s.node_id);
    rel.node = n ? appNode(state, n) : nullResource();
  }
  if (inc.has('databases')) rel.databases = list([]);
  return item(
    'server',
    withRelationships(
      {
        id: s.id,
        external_id: s.external_id,
        uuid: s.uuid,
        identifier: s.uuidShort,
        name: s.name,
        description: s.description,
        status: s.status,
        // deprecated mirror of status
        suspended: s.status === 'suspended',
        limits: { memory: s.memory, swap: s.swap, disk: s.disk, io: s.io, cpu: s.cpu, threads: s.threads, oom_disabled: s.oom_disabled },
        feature_limits: { databases: s.database_limit, allocations: s.allocation_limit, backups: s.backup_limit },
        user: s.owner_id,
        node: s.node_id,
        allocation: s.allocation_id,
        nest: s.nest_id,
        egg: s.egg_id,
        container: {
          startup_command: s.startup,
          image: s.image,
          // deprecated mirror of status: 0 while installing / install_failed
          installed: isInstalled(s) ? 1 : 0,
          environment: state.environment(s),
        },
        updated_at: atom(s.updated_at),
        created_at: atom(s.created_at),
      },
      rel,
    ),
  );
}

// ----------------------------------------------------------------- client

export function clientAccount(u: User): Envelope {
  return item('user', {
    id: u.id,
    admin: u.root_admin,
    username: u.username,
    email: u.email,
    first_name: u.first_name,
    last_name: u.last_name,
    language: u.language,
  });
}

export function userPermissions(s: Server, u: User): string[] {
  if (u.root_admin) return ['*', 'admin.websocket.errors', 'admin.websocket.install', 'admin.websocket.transfer'];
  if (s.owner_id === u.id) return ['*'];
  return [];
}

export function clientServer(state: PanelState, s: Server, u: User, inc: Inc = new Set()): Envelope {
  const node = state.nodes.get(s.node_id);
  const egg = state.eggs.get(s.egg_id);
  const rel: Record<string, unknown> = {
    allocations: list(
      state
        .allocationsOfServer(s.id)
        .sort((a, b) => (a.id === s.allocation_id ? -1 : b.id === s.allocation_id ? 1 : a.id - b.id))
        .map((a) =>
          item('allocation', {
            id: a.id,
            ip: a.ip,
            ip_alias: a.ip_alias,
            port: a.port,
            notes: a.notes,
            is_default: a.id === s.allocation_id,
          }),
        ),
    ),
    // only user_viewable variables are listed on the Client API
    variables: list(
      state
        .variablesOfEgg(s.egg_id)
        .filter((v) => v.user_viewable)
        .map((v) =>
          item('egg_variable', {
            name: v.name,
            description: v.description,
            env_variable: v.env_variable,
            default_value: v.default_value,
            server_value: s.variables.get(v.id) ?? null,
            is_editable: v.user_editable,
            rules: v.rules,
          }),
        ),
    ),
  };
  if (inc.has('egg') && egg) rel.egg = item('egg', { uuid: egg.uuid, name: egg.name });
  if (inc.has('subusers')) rel.subusers = list([]);
  return item('server', {
    server_owner: s.owner_id === u.id,
    identifier: s.uuidShort,
    internal_id: s.id,
    uuid: s.uuid,
    name: s.name,
    node: node?.name ?? null,
    is_node_under_maintenance: node?.maintenance_mode ?? false,
    sftp_details: { ip: node?.fqdn ?? null, port: node?.daemon_sftp ?? null },
    description: s.description,
    limits: { memory: s.memory, swap: s.swap, disk: s.disk, io: s.io, cpu: s.cpu, threads: s.threads, oom_disabled: s.oom_disabled },
    invocation: state.invocation(s),
    docker_image: s.image,
    egg_features: egg?.features ?? null,
    feature_limits: { databases: s.database_limit, allocations: s.allocation_limit, backups: s.backup_limit },
    status: s.status,
    is_suspended: s.status === 'suspended',
    is_installing: !isInstalled(s),
    is_transferring: false,
    relationships: rel,
  });
}
