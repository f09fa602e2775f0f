// Server databases (Client API `/api/client/servers/{server}/databases`, pterodactyl/panel:routes/api-client.php)
// on the panel's database hosts, from pterodactyl/panel:
// - StoreDatabaseRequest: `database` required|alpha_dash|min:3|max:48 and unique per server under its
//   stored name; `remote` Database::$validationRules (required|string|regex:/^[\w\-\/.%:]+$/).
// - DeployServerDatabaseService: no host at all, or none on the server's node while
//   `client_features.databases.allow_random` is off → 400 NoSuitableDatabaseHostException; else a
//   host of the node, or any host.
// - DatabaseManagementService: the stored name is `s{server_id}_` + the name, cut to 48 characters;
//   `database_limit` (feature_limits.databases; null = no limit) counted over the server's databases
//   → 400 TooManyDatabasesException; the username `u{server_id}_` + 10 random characters; the
//   password 24 random characters (Utilities::randomStringWithSpecialCharacters).
// - DatabaseController: create and rotate-password answer the DatabaseTransformer with the password
//   include; the list without it; delete 204. A database's route key is its hashid (or its numeric
//   id), and one of another server is 404 (ResourceBelongsToServer).
// Database hosts have no route in the panel's APIs (only the admin UI); tests set them here.
import { randomInt } from 'node:crypto';
import { PanelError, ValidationError, item, list, notFound } from './http.ts';
import type { Ctx, RouteDef, SimContext } from './http.ts';
import { uniqueRule, validate } from './rules.ts';
import type { PanelState, Server } from './state.ts';

export interface SimDatabaseHost {
  id: number;
  name: string;
  host: string;
  port: number;
  /** the node it is linked to (null: any node, when allow_random is on) */
  node_id: number | null;
}

export interface SimDatabase {
  id: number;
  /** the route key the panel hands out (Hashids, 8 characters by default) */
  hashid: string;
  server_id: number;
  database_host_id: number;
  database: string;
  username: string;
  remote: string;
  password: string;
  max_connections: number;
}

/** The database hosts and databases of one simulated panel. */
export class SimDatabases {
  hosts: SimDatabaseHost[] = [];
  all: SimDatabase[] = [];
  /** config pterodactyl.client_features.databases.allow_random (the panel's default: true) */
  allowRandom = true;
  private seq = 0;
  private hostSeq = 0;

  private state: PanelState;

  constructor(state: PanelState) {
    this.state = state;
  }

  addHost(input: Omit<SimDatabaseHost, 'id'>): SimDatabaseHost {
    const host = { id: ++this.hostSeq, ...input };
    this.hosts.push(host);
    return host;
  }

  /** The server's databases (a deleted server's went with it: ServerDeletionService). */
  of(server: Server): SimDatabase[] {
    this.all = this.all.filter((d) => this.state.servers.has(d.server_id));
    return this.all.filter((d) => d.server_id === server.id);
  }

  nextId(): number {
    return ++this.seq;
  }
}

const stores = new WeakMap<PanelState, SimDatabases>();

export function databasesOf(state: PanelState): SimDatabases {
  let store = stores.get(state);
  if (!store) {
    store = new SimDatabases(state);
    stores.set(state, store);
  }
  return store;
}

const ALPHANUMERIC = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const SPECIAL = '!@#$%^&*()-_=+[]{}:;,.?';
const pick = (alphabet: string, length: number): string => Array.from({ length }, () => alphabet[randomInt(alphabet.length)]).join('');

/** Utilities::randomStringWithSpecialCharacters: letters, digits and at least one special character. */
function randomPassword(): string {
  const chars = pick(ALPHANUMERIC, 23).split('');
  chars.splice(randomInt(24), 0, pick(SPECIAL, 1));
  return chars.join('');
}

/** DatabaseManagementService::generateUniqueDatabaseName */
export function storedDatabaseName(name: string, serverId: number): string {
  const prefix = `s${serverId}_`;
  return prefix + name.slice(0, 48 - prefix.length);
}

function transform(d: SimDatabase, host: SimDatabaseHost | undefined, withPassword: boolean) {
  return item('server_database', {
    id: d.hashid,
    host: { address: host?.host ?? null, port: host?.port ?? null },
    name: d.database,
    username: d.username,
    connections_from: d.remote,
    max_connections: d.max_connections,
    ...(withPassword ? { relationships: { password: item('database_password', { password: d.password }) } } : {}),
  });
}

export function databaseRoutes(sim: SimContext, bind: (ctx: Ctx) => Server): RouteDef[] {
  const store = databasesOf(sim.state);
  const D = '/api/client/servers/{server}/databases';
  const hostOf = (d: SimDatabase) => store.hosts.find((h) => h.id === d.database_host_id);

  /** Route binding by hashid or numeric id, then ResourceBelongsToServer (404 for another server's). */
  const databaseOf = (ctx: Ctx, s: Server): SimDatabase => {
    const key = ctx.params.database ?? '';
    const d = store.of(s).find((x) => (/^\d+$/.test(key) ? x.id === Number(key) : x.hashid === key));
    if (!d) throw notFound();
    return d;
  };

  return [
    {
      method: 'GET',
      path: D,
      name: 'api:client:server.databases',
      handler: (ctx) => {
        const s = bind(ctx);
        return { status: 200, body: list(store.of(s).map((d) => transform(d, hostOf(d), false))) };
      },
    },
    {
      method: 'POST',
      path: D,
      name: 'api:client:server.databases.store',
      handler: (ctx) => {
        const s = bind(ctx);
        const taken = uniqueRule(
          (value) => typeof value === 'string' && store.of(s).some((d) => d.database === storedDatabaseName(value, s.id)),
        );
        const failures = validate(ctx.input, {
          database: [
            'required',
            'alpha_dash',
            'min:3',
            'max:48',
            { ...taken, message: 'The database name you have selected is already in use by this server.' },
          ],
          remote: 'required|string|regex:/^[\\w\\-\\/.%:]+$/',
        });
        if (failures.length > 0) throw new ValidationError(failures);
        const noHost = () =>
          new PanelError(400, 'NoSuitableDatabaseHostException', 'No database host was found that meets the requirements for this server.');
        if (store.hosts.length === 0) throw noHost();
        const nodeHosts = store.hosts.filter((h) => h.node_id === s.node_id);
        if (nodeHosts.length === 0 && !store.allowRandom) throw noHost();
        const candidates = nodeHosts.length > 0 ? nodeHosts : store.hosts;
        const host = candidates[randomInt(candidates.length)]!;
        if (s.database_limit !== null && store.of(s).length >= s.database_limit) {
          throw new PanelError(
            400,
            'TooManyDatabasesException',
            'Operation aborted: creating a new database would put this server over the defined limit.',
          );
        }
        const id = store.nextId();
        let hashid = pick(ALPHANUMERIC, 8);
        while (store.all.some((d) => d.hashid === hashid)) hashid = pick(ALPHANUMERIC, 8);
        const d: SimDatabase = {
          id,
          hashid,
          server_id: s.id,
          database_host_id: host.id,
          database: storedDatabaseName(String(ctx.input.database), s.id),
          username: `u${s.id}_${pick(ALPHANUMERIC, 10)}`,
          remote: String(ctx.input.remote),
          password: randomPassword(),
          max_connections: 0,
        };
        store.all.push(d);
        return { status: 200, body: transform(d, host, true) };
      },
    },
    {
      method: 'POST',
      path: `${D}/{database}/rotate-password`,
      name: 'api:client:server.databases.rotate-password',
      handler: (ctx) => {
        const s = bind(ctx);
        const d = databaseOf(ctx, s);
        d.password = randomPassword();
        return { status: 200, body: transform(d, hostOf(d), true) };
      },
    },
    {
      method: 'DELETE',
      path: `${D}/{database}`,
      name: 'api:client:server.databases.delete',
      handler: (ctx) => {
        const s = bind(ctx);
        const d = databaseOf(ctx, s);
        store.all = store.all.filter((x) => x !== d);
        return { status: 204 };
      },
    },
  ];
}
