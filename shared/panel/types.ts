/**
 * Shapes of the panel APIs as our client hands them to callers (pterodactyl/panel:app/Transformers/Api/),
 * the same for both kinds of panel: the Pelican adapter (shared/panel/pelican.ts) turns Pelican's
 * shapes into these. Only the fields we read are typed; the panels send more.
 */
/** Which panel software answers: Pterodactyl, or its fork Pelican (pelican-dev/panel). */
export type PanelKind = 'pterodactyl' | 'pelican';

export interface Envelope<T> {
  object: string;
  attributes: T;
}

export interface ListEnvelope<T> {
  object: 'list';
  data: Envelope<T>[];
  meta?: { pagination?: { total: number; count: number; per_page: number; current_page: number; total_pages: number } };
}

export interface PanelLocation {
  id: number;
  short: string;
  long: string | null;
}

export interface PanelNode {
  id: number;
  uuid: string;
  name: string;
  location_id: number;
  fqdn: string;
  /** The port Wings' SFTP server listens on. */
  daemon_sftp?: number;
  public: boolean;
  maintenance_mode: boolean;
  memory: number;
  memory_overallocate: number;
  disk: number;
  disk_overallocate: number;
  allocated_resources: { memory: number; disk: number; cpu?: number };
  /** Pelican only: CPU capacity in percent (0: unlimited) and its overallocation (pelican-dev/panel app/Models/Node.php). */
  cpu?: number;
  cpu_overallocate?: number;
}

export interface PanelAllocation {
  id: number;
  ip: string;
  alias: string | null;
  port: number;
  assigned: boolean;
}

export interface PanelNest {
  id: number;
  uuid: string;
  name: string;
  description: string | null;
}

export interface PanelEggVariable {
  id: number;
  name: string;
  description: string;
  env_variable: string;
  default_value: string | null;
  user_viewable: boolean;
  user_editable: boolean;
  /** Laravel validation rules, one a rule (Pterodactyl's `a|b` string is split as Laravel splits it). */
  rules: string[];
}

export interface PanelEgg {
  id: number;
  uuid: string;
  name: string;
  nest: number;
  description: string | null;
  docker_image: string;
  docker_images: Record<string, string>;
  startup: string;
  relationships?: { variables?: ListEnvelope<PanelEggVariable> };
}

export interface PanelUser {
  id: number;
  external_id: string | null;
  uuid: string;
  username: string;
  email: string;
  root_admin: boolean;
}

/** A server's subuser as the Client API shows it (pterodactyl/panel:app/Transformers/Api/Client/SubuserTransformer.php). */
export interface PanelSubuser {
  uuid: string;
  username: string;
  email: string;
  permissions: string[];
}

export interface PanelLimits {
  memory: number;
  swap: number;
  disk: number;
  io: number;
  cpu: number;
  threads: string | null;
}

export interface PanelServer {
  id: number;
  external_id: string | null;
  uuid: string;
  identifier: string;
  name: string;
  description?: string | null;
  status: string | null;
  suspended: boolean;
  limits: PanelLimits & { oom_disabled?: boolean };
  feature_limits: { databases: number; allocations: number; backups: number };
  user: number;
  node: number;
  allocation: number;
  nest: number;
  egg: number;
  container: { startup_command: string; image: string; installed: number; environment: Record<string, unknown> };
  created_at: string;
}

export interface CreateServerBody {
  name: string;
  description?: string;
  external_id: string;
  user: number;
  egg: number;
  docker_image: string;
  startup: string;
  environment: Record<string, string>;
  limits: PanelLimits;
  feature_limits: { databases: number; allocations: number; backups: number };
  allocation: { default: number; additional?: number[] };
  oom_disabled?: boolean;
  start_on_completion?: boolean;
}

/** PATCH /servers/{id}/details: every field is written. */
export interface DetailsBody {
  name: string;
  user: number;
  external_id: string | null;
  description: string;
}

/** PATCH /servers/{id}/startup (UpdateServerStartupRequest): all required, `skip_scripts` present. */
export interface StartupBody {
  startup: string;
  environment: Record<string, string>;
  egg: number;
  image: string;
  skip_scripts: boolean;
}

export interface BuildBody {
  allocation: number;
  limits: PanelLimits;
  feature_limits: { databases: number; allocations: number; backups: number };
  oom_disabled?: boolean;
  /** Free allocations of the server's node to assign to it (others are skipped without a word). */
  add_allocations?: number[];
  remove_allocations?: number[];
}

/** A server read or changed with `include=allocations` (Application AllocationTransformer, inside `attributes`). */
export type PanelServerWithAllocations = PanelServer & {
  relationships?: { allocations?: ListEnvelope<PanelAppAllocation> };
};

export interface PanelAppAllocation {
  id: number;
  ip: string;
  alias: string | null;
  port: number;
  notes: string | null;
}

export interface PanelAccount {
  id: number;
  admin: boolean;
  username: string;
  email: string;
}

export type PowerState = 'offline' | 'starting' | 'running' | 'stopping';

export interface PanelStats {
  current_state: PowerState;
  is_suspended: boolean;
  resources: {
    memory_bytes: number;
    cpu_absolute: number;
    disk_bytes: number;
    network_rx_bytes: number;
    network_tx_bytes: number;
    uptime: number;
  };
}

export interface PanelFileObject {
  name: string;
  mode: string;
  mode_bits: string;
  size: number;
  is_file: boolean;
  is_symlink: boolean;
  mimetype: string;
  created_at: string;
  modified_at: string;
}
