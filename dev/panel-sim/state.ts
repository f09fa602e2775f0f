// In-memory panel database: locations, nodes, allocations, nests/eggs/variables,
// users, API keys and servers, plus capacity accounting (NodeTransformer, FindViableNodesService).
import { randomBytes, randomUUID } from 'node:crypto';

export interface Location {
  id: number;
  short: string;
  long: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface PanelNode {
  id: number;
  uuid: string;
  public: boolean;
  name: string;
  description: string | null;
  location_id: number;
  fqdn: string;
  scheme: 'http' | 'https';
  behind_proxy: boolean;
  maintenance_mode: boolean;
  memory: number;
  memory_overallocate: number;
  disk: number;
  disk_overallocate: number;
  upload_size: number;
  daemon_listen: number;
  daemon_sftp: number;
  daemon_base: string;
  created_at: Date;
  updated_at: Date;
  /** hidden columns; the token signs websocket / download JWTs (HS256) */
  daemon_token_id: string;
  daemon_token: string;
}

export interface Allocation {
  id: number;
  node_id: number;
  ip: string;
  ip_alias: string | null;
  port: number;
  server_id: number | null;
  notes: string | null;
}

export interface Nest {
  id: number;
  uuid: string;
  author: string;
  name: string;
  description: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface EggConfig {
  files: Record<string, unknown>;
  startup: Record<string, unknown>;
  stop: string;
  logs: unknown;
  file_denylist: string[];
  extends: number | null;
}

export interface EggScript {
  privileged: boolean;
  install: string;
  entry: string;
  container: string;
  extends: number | null;
}

/** Simulator-only data: what the "game" prints and the files it starts with. */
export interface EggSimProfile {
  /** path -> content; a path ending in `/` is a directory. `{{SERVER_PORT}}` etc. are substituted */
  files: Record<string, string>;
  boot: string[];
  /** the line matching config.startup.done, printed on starting -> running */
  done: string;
  stopping: string[];
  /** rough resident memory while running, in MiB */
  baseMemoryMiB: number;
}

export interface Egg {
  id: number;
  uuid: string;
  nest_id: number;
  author: string;
  name: string;
  description: string | null;
  features: string[] | null;
  docker_images: Record<string, string>;
  config: EggConfig;
  startup: string;
  script: EggScript;
  created_at: Date;
  updated_at: Date;
  sim: EggSimProfile;
}

export interface EggVariable {
  id: number;
  egg_id: number;
  name: string;
  description: string;
  env_variable: string;
  default_value: string;
  user_viewable: boolean;
  user_editable: boolean;
  rules: string;
  created_at: Date;
  updated_at: Date;
}

export interface User {
  id: number;
  external_id: string | null;
  uuid: string;
  username: string;
  email: string;
  first_name: string;
  last_name: string;
  language: string;
  root_admin: boolean;
  use_totp: boolean;
  created_at: Date;
  updated_at: Date;
}

/** TYPE_ACCOUNT = 1 (`ptlc_`), TYPE_APPLICATION = 2 (`ptla_`) */
export interface ApiKey {
  token: string;
  identifier: string;
  key_type: 1 | 2;
  user_id: number;
  description: string;
  allowed_ips: string[];
  created_at: Date;
  last_used_at: Date | null;
}

export type ServerStatus = null | 'installing' | 'install_failed' | 'reinstall_failed' | 'suspended' | 'restoring_backup';

export interface Server {
  id: number;
  external_id: string | null;
  uuid: string;
  uuidShort: string;
  node_id: number;
  name: string;
  description: string;
  status: ServerStatus;
  skip_scripts: boolean;
  owner_id: number;
  memory: number;
  swap: number;
  disk: number;
  io: number;
  cpu: number;
  threads: string | null;
  oom_disabled: boolean;
  allocation_id: number;
  nest_id: number;
  egg_id: number;
  startup: string;
  image: string;
  allocation_limit: number | null;
  database_limit: number | null;
  backup_limit: number | null;
  created_at: Date;
  updated_at: Date;
  installed_at: Date | null;
  /** egg variable id -> stored server value (strings, '' for missing nullable) */
  variables: Map<number, string>;
}

export const KEY_PREFIX_ACCOUNT = 'ptlc_';
export const KEY_PREFIX_APPLICATION = 'ptla_';

const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

export function randomString(len: number): string {
  const bytes = randomBytes(len);
  let s = '';
  for (let i = 0; i < len; i++) s += ALNUM.charAt((bytes[i] ?? 0) % ALNUM.length);
  return s;
}

export class PanelState {
  locations = new Map<number, Location>();
  nodes = new Map<number, PanelNode>();
  allocations = new Map<number, Allocation>();
  nests = new Map<number, Nest>();
  eggs = new Map<number, Egg>();
  eggVariables = new Map<number, EggVariable>();
  users = new Map<number, User>();
  servers = new Map<number, Server>();
  /** full 48-char key -> key */
  keys = new Map<string, ApiKey>();
  private seq = new Map<string, number>();

  nextId(table: string): number {
    const n = (this.seq.get(table) ?? 0) + 1;
    this.seq.set(table, n);
    return n;
  }

  // ----------------------------------------------------------------- keys

  /**
   * Keys are 48 chars: a 16-char identifier (starting with the prefix) and a
   * 32-char secret (pterodactyl/panel:app/Models/ApiKey.php).
   */
  /** The key prefixes of the panel played: Pterodactyl's, or Pelican's `pacc_` / `papp_` (pelican-dev/panel app/Models/ApiKey.php). */
  keyPrefixes = { account: KEY_PREFIX_ACCOUNT, application: KEY_PREFIX_APPLICATION };

  createKey(userId: number, type: 'account' | 'application', fixed?: string): ApiKey {
    const prefix = this.keyPrefixes[type];
    let token = fixed ?? prefix + randomString(16 - prefix.length) + randomString(32);
    if (!token.startsWith(prefix) || token.length !== 48) {
      throw new Error(`API key must be 48 chars and start with ${prefix}`);
    }
    if (this.keys.has(token)) token = prefix + randomString(16 - prefix.length) + randomString(32);
    const key: ApiKey = {
      token,
      identifier: token.slice(0, 16),
      key_type: type === 'account' ? 1 : 2,
      user_id: userId,
      description: type === 'account' ? 'panel-sim client key' : 'panel-sim application key',
      allowed_ips: [],
      created_at: new Date(),
      last_used_at: null,
    };
    this.keys.set(token, key);
    return key;
  }

  // ---------------------------------------------------------------- users

  createUser(input: {
    email: string;
    username: string;
    first_name: string;
    last_name: string;
    external_id?: string | null;
    root_admin?: boolean;
    language?: string;
  }): User {
    const now = new Date();
    const user: User = {
      id: this.nextId('users'),
      external_id: input.external_id ?? null,
      uuid: randomUUID(),
      username: input.username.toLowerCase(),
      email: input.email,
      first_name: input.first_name,
      last_name: input.last_name,
      language: input.language ?? 'en',
      root_admin: input.root_admin ?? false,
      use_totp: false,
      created_at: now,
      updated_at: now,
    };
    this.users.set(user.id, user);
    return user;
  }

  // ------------------------------------------------------------ relations

  serversOfNode(nodeId: number): Server[] {
    return [...this.servers.values()].filter((s) => s.node_id === nodeId);
  }

  serversOfUser(userId: number): Server[] {
    return [...this.servers.values()].filter((s) => s.owner_id === userId);
  }

  allocationsOfNode(nodeId: number): Allocation[] {
    return [...this.allocations.values()].filter((a) => a.node_id === nodeId);
  }

  allocationsOfServer(serverId: number): Allocation[] {
    return [...this.allocations.values()].filter((a) => a.server_id === serverId);
  }

  nodesOfLocation(locationId: number): PanelNode[] {
    return [...this.nodes.values()].filter((n) => n.location_id === locationId);
  }

  eggsOfNest(nestId: number): Egg[] {
    return [...this.eggs.values()].filter((e) => e.nest_id === nestId);
  }

  variablesOfEgg(eggId: number): EggVariable[] {
    return [...this.eggVariables.values()].filter((v) => v.egg_id === eggId);
  }

  serverByIdentifier(value: string): Server | undefined {
    // SubstituteClientBindings: 8 chars -> uuidShort, otherwise the full uuid.
    const field: 'uuidShort' | 'uuid' = value.length === 8 ? 'uuidShort' : 'uuid';
    return [...this.servers.values()].find((s) => s[field] === value);
  }

  // ------------------------------------------------------------- capacity

  /** NodeTransformer `allocated_resources`: sums of memory/disk of the node's servers. */
  allocatedResources(nodeId: number): { memory: number; disk: number } {
    let memory = 0;
    let disk = 0;
    for (const s of this.serversOfNode(nodeId)) {
      memory += s.memory;
      disk += s.disk;
    }
    return { memory, disk };
  }

  /**
   * FindViableNodesService: public nodes in the given locations (all if empty)
   * where sum(memory)+requested <= memory*(1+overallocate/100), same for disk.
   * No special case for -1 (the panel has none either).
   */
  viableNodes(memory: number, disk: number, locationIds: number[]): PanelNode[] {
    return [...this.nodes.values()].filter((n) => {
      if (!n.public) return false;
      if (locationIds.length > 0 && !locationIds.includes(n.location_id)) return false;
      const used = this.allocatedResources(n.id);
      return (
        used.memory + memory <= n.memory * (1 + n.memory_overallocate / 100) && used.disk + disk <= n.disk * (1 + n.disk_overallocate / 100)
      );
    });
  }

  /** Container environment (EnvironmentService). */
  environment(server: Server): Record<string, string | number | null> {
    // A PHP array: any variable name is a plain key (`__proto__` too).
    const env: Record<string, string | number | null> = Object.create(null);
    for (const v of this.variablesOfEgg(server.egg_id)) {
      const stored = server.variables.get(v.id);
      env[v.env_variable] = stored ?? v.default_value;
    }
    const node = this.nodes.get(server.node_id);
    const location = node ? this.locations.get(node.location_id) : undefined;
    env.STARTUP = server.startup;
    env.P_SERVER_LOCATION = location?.short ?? null;
    env.P_SERVER_UUID = server.uuid;
    env.P_SERVER_ALLOCATION_LIMIT = server.allocation_limit;
    return env;
  }

  /** StartupCommandService: the startup line with values substituted. */
  invocation(server: Server, hideAll = false): string {
    const alloc = this.allocations.get(server.allocation_id);
    const pairs: Array<[string, string]> = [
      ['{{SERVER_MEMORY}}', String(server.memory)],
      ['{{SERVER_IP}}', alloc?.ip ?? ''],
      ['{{SERVER_PORT}}', String(alloc?.port ?? '')],
    ];
    for (const v of this.variablesOfEgg(server.egg_id)) {
      const value = server.variables.get(v.id) ?? v.default_value;
      pairs.push([`{{${v.env_variable}}}`, v.user_viewable && !hideAll ? value : '[hidden]']);
    }
    let out = server.startup;
    for (const [find, rep] of pairs) out = out.split(find).join(rep);
    return out;
  }

  /** Deleting a server frees its allocations (FK ON DELETE SET NULL). */
  deleteServer(serverId: number): void {
    for (const a of this.allocationsOfServer(serverId)) {
      a.server_id = null;
      a.notes = null;
    }
    this.servers.delete(serverId);
  }
}
