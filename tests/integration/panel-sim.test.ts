import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { startPanelSim, SEED_IDS } from '../../dev/panel-sim/index.ts';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { sleep, until, waitFor } from '../helpers/until.ts';

const INSTALL_MS = 150;
const TRANSITION_MS = 100;

interface Res {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

async function call(
  sim: PanelSim,
  key: string | null,
  method: string,
  path: string,
  body?: unknown,
  extra: RequestInit = {},
): Promise<Res> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (key) headers.Authorization = `Bearer ${key}`;
  let payload: string | undefined;
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = typeof body === 'string' ? body : JSON.stringify(body);
  }
  const r = await fetch(`${sim.url}${path}`, {
    method,
    headers: { ...headers, ...((extra.headers as Record<string, string>) ?? {}) },
    body: payload,
    ...(extra.signal ? { signal: extra.signal } : {}),
  });
  const text = await r.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  return { status: r.status, headers: r.headers, text, json };
}

function paperBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'mc-test',
    user: 2,
    egg: SEED_IDS.eggs.paper,
    docker_image: 'ghcr.io/pterodactyl/yolks:java_21',
    startup: 'java -Xms128M -jar {{SERVER_JARFILE}}',
    environment: { MINECRAFT_VERSION: 'latest', SERVER_JARFILE: 'server.jar', BUILD_NUMBER: 'latest', DL_PATH: '' },
    limits: { memory: 2048, swap: 0, disk: 4096, io: 500, cpu: 200, threads: null },
    feature_limits: { databases: 0, allocations: 1, backups: 0 },
    ...overrides,
  };
}

describe('panel simulator', () => {
  let sim: PanelSim;
  const app = (method: string, path: string, body?: unknown) => call(sim, sim.appKey, method, `/api/application${path}`, body);
  const client = (method: string, path: string, body?: unknown, key?: string) =>
    call(sim, key ?? sim.clientKey, method, `/api/client${path}`, body);

  /** first unassigned allocation id on a node */
  async function freeAllocation(nodeId: number): Promise<number> {
    const r = await app('GET', `/nodes/${nodeId}/allocations?filter[server_id]=false&per_page=1`);
    expect(r.status).toBe(200);
    return r.json.data[0].attributes.id as number;
  }

  async function createServer(
    overrides: Record<string, unknown> = {},
    nodeId = 1,
  ): Promise<{ id: number; identifier: string; uuid: string }> {
    const allocation = overrides.deploy ? undefined : { default: await freeAllocation(nodeId) };
    const r = await app('POST', '/servers', paperBody({ ...(allocation ? { allocation } : {}), ...overrides }));
    expect(r.status, r.text).toBe(201);
    return { id: r.json.attributes.id, identifier: r.json.attributes.identifier, uuid: r.json.attributes.uuid };
  }

  async function installedServer(overrides: Record<string, unknown> = {}, nodeId = 1) {
    const s = await createServer(overrides, nodeId);
    await waitFor(
      () => sim.server(s.id)?.status,
      (st) => st === null,
    );
    return s;
  }

  beforeAll(async () => {
    sim = await startPanelSim({ installMs: INSTALL_MS, transitionMs: TRANSITION_MS, resourcesCacheMs: 0 });
  });

  afterAll(async () => {
    await sim.close();
  });

  describe('transport and envelopes', () => {
    it('renders list envelopes with pagination meta', async () => {
      const r = await app('GET', '/nodes?per_page=2');
      expect(r.status).toBe(200);
      expect(r.json.object).toBe('list');
      expect(r.json.data).toHaveLength(2);
      expect(r.json.data[0].object).toBe('node');
      expect(r.json.meta.pagination).toEqual({
        total: 3,
        count: 2,
        per_page: 2,
        current_page: 1,
        total_pages: 2,
        links: { next: `${sim.url}/api/application/nodes?page=2` },
      });
      const p2 = await app('GET', '/nodes?per_page=2&page=2');
      expect(p2.json.data).toHaveLength(1);
      expect(p2.json.meta.pagination.links).toEqual({ previous: `${sim.url}/api/application/nodes?page=1` });
      const all = await app('GET', '/locations');
      expect(all.json.meta.pagination.links).toEqual({});
      expect(all.json.data.map((l: { attributes: { short: string } }) => l.attributes.short)).toEqual(['eu-central', 'us-east']);
    });

    it('exposes node capacity fields', async () => {
      const r = await app('GET', `/nodes/${SEED_IDS.nodes.fra2}`);
      expect(r.json.object).toBe('node');
      const n = r.json.attributes;
      expect(n).toMatchObject({
        name: 'fra-2',
        location_id: 1,
        memory: 16384,
        memory_overallocate: 50,
        disk_overallocate: 20,
        maintenance_mode: false,
      });
      expect(n.allocated_resources).toEqual({ memory: 0, disk: 0 });
      expect(n.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    });

    it('lists eggs unpaginated with variables included', async () => {
      const r = await app('GET', `/nests/${SEED_IDS.nests.minecraft}/eggs?include=variables`);
      expect(r.status).toBe(200);
      expect(r.json.meta).toBeUndefined();
      const paper = r.json.data.find((e: { attributes: { name: string } }) => e.attributes.name === 'Paper');
      expect(paper.attributes.docker_images['Java 21']).toBe('ghcr.io/pterodactyl/yolks:java_21');
      expect(paper.attributes.docker_image).toBe('ghcr.io/pterodactyl/yolks:java_21');
      const vars = paper.attributes.relationships.variables;
      expect(vars.object).toBe('list');
      const mv = vars.data.find((v: { attributes: { env_variable: string } }) => v.attributes.env_variable === 'MINECRAFT_VERSION');
      expect(mv.object).toBe('egg_variable');
      expect(mv.attributes).toMatchObject({
        rules: 'required|string|max:20',
        default_value: 'latest',
        user_editable: true,
        user_viewable: true,
      });
      expect(mv.attributes.created_at).toMatch(/\.000000Z$/);
      const dl = vars.data.find((v: { attributes: { env_variable: string } }) => v.attributes.env_variable === 'DL_PATH');
      expect(dl.attributes.user_editable).toBe(false);
    });

    it('scopes eggs to their nest and renders the error envelope', async () => {
      const r = await app('GET', `/nests/${SEED_IDS.nests.minecraft}/eggs/${SEED_IDS.eggs.rust}`);
      expect(r.status).toBe(404);
      expect(r.json).toEqual({
        errors: [{ code: 'NotFoundHttpException', status: '404', detail: 'The requested resource could not be found on the server.' }],
      });
    });

    it('handles auth, key types, Accept header and malformed JSON like the panel', async () => {
      const noAccept = await fetch(`${sim.url}/api/application/servers`, { redirect: 'manual' });
      expect(noAccept.status).toBe(302);
      expect(noAccept.headers.get('location')).toBe(`${sim.url}/auth/login`);
      const unauth = await call(sim, null, 'GET', '/api/application/servers');
      expect(unauth.status).toBe(401);
      expect(unauth.json.errors[0]).toEqual({ code: 'AuthenticationException', status: '401', detail: 'Unauthenticated.' });
      const appOnClient = await client('GET', '', undefined, sim.appKey);
      expect(appOnClient.status).toBe(403);
      expect(appOnClient.json.errors[0].detail).toContain('application API key');
      const clientOnApp = await call(sim, sim.clientKey, 'GET', '/api/application/users');
      expect(clientOnApp.status).toBe(403);
      const bad = await app('POST', '/users', '{not json');
      expect(bad.status).toBe(400);
      expect(bad.json.errors[0].detail).toBe('The JSON data passed in the request appears to be malformed: Syntax error');
      const filter = await app('GET', '/users?filter[nope]=1');
      expect(filter.status).toBe(400);
      expect(filter.json.errors[0].code).toBe('InvalidFilterQuery');
      const r = await app('GET', '/servers');
      expect(r.headers.get('x-ratelimit-limit')).toBe('240');
      expect(Number(r.headers.get('x-ratelimit-remaining'))).toBeLessThan(240);
    });
  });

  describe('users', () => {
    it('filters, looks up by external id and creates users', async () => {
      const byEmail = await app('GET', `/users?filter[email]=${encodeURIComponent('control-plane@panel.local')}`);
      expect(byEmail.json.data).toHaveLength(1);
      expect(byEmail.json.data[0].attributes.id).toBe(sim.serviceUserId);
      const ext = await app('GET', '/users/external/control-plane');
      expect(ext.json.attributes.email).toBe('control-plane@panel.local');
      expect((await app('GET', '/users/external/none')).status).toBe(404);

      const created = await app('POST', '/users', {
        email: 'alice@example.com',
        username: 'Alice_1',
        first_name: 'Alice',
        last_name: 'A',
        external_id: 'cust-alice',
      });
      expect(created.status).toBe(201);
      expect(created.json.attributes.username).toBe('alice_1');
      expect(created.json.meta.resource).toBe(`${sim.url}/api/application/users/${created.json.attributes.id}`);
      const dup = await app('POST', '/users', { email: 'alice@example.com', username: 'alice2', first_name: 'A', last_name: 'B' });
      expect(dup.status).toBe(422);
      expect(dup.json.errors).toEqual([
        {
          code: 'ValidationException',
          status: '422',
          detail: 'The email has already been taken.',
          meta: { source_field: 'email', rule: 'unique' },
        },
      ]);
      const account = await client('GET', '/account');
      expect(account.json).toMatchObject({
        object: 'user',
        attributes: { id: sim.serviceUserId, admin: false, email: 'control-plane@panel.local' },
      });
    });
  });

  describe('server creation validation', () => {
    it('422s on missing limits', async () => {
      const r = await app(
        'POST',
        '/servers',
        paperBody({ allocation: { default: await freeAllocation(1) }, limits: { memory: 1024, swap: 0, disk: 1024, cpu: 100 } }),
      );
      expect(r.status).toBe(422);
      expect(r.json.errors).toEqual([
        {
          code: 'ValidationException',
          status: '422',
          detail: 'The limits.io field is required.',
          meta: { source_field: 'limits.io', rule: 'required' },
        },
      ]);
      const r2 = await app(
        'POST',
        '/servers',
        paperBody({
          allocation: { default: await freeAllocation(1) },
          limits: { memory: 1024, swap: 0, disk: 1024, cpu: 100, io: 5 },
          feature_limits: {},
        }),
      );
      expect(r2.json.errors.map((e: { meta: { source_field: string; rule: string } }) => `${e.meta.source_field}:${e.meta.rule}`)).toEqual([
        'limits.io:between',
        'feature_limits:required',
        'feature_limits.databases:present',
        'feature_limits.backups:present',
      ]);
    });

    it('does not fill egg defaults: a missing required variable is a 422', async () => {
      const r = await app(
        'POST',
        '/servers',
        paperBody({
          allocation: { default: await freeAllocation(1) },
          environment: { MINECRAFT_VERSION: 'latest', BUILD_NUMBER: 'latest' },
        }),
      );
      expect(r.status).toBe(422);
      expect(r.json.errors).toEqual([
        {
          code: 'ValidationException',
          status: '422',
          detail: 'The Server Jar File variable field is required.',
          meta: { source_field: 'environment.SERVER_JARFILE', rule: 'required' },
        },
      ]);
      expect(sim.snapshot().servers).toEqual([]);
    });

    it('422s on values breaking egg variable rules', async () => {
      const a = await freeAllocation(3);
      const r = await app(
        'POST',
        '/servers',
        paperBody({
          allocation: { default: a },
          environment: { MINECRAFT_VERSION: 'x'.repeat(21), SERVER_JARFILE: 'server.zip', BUILD_NUMBER: 'latest' },
        }),
      );
      expect(r.status).toBe(422);
      expect(r.json.errors.map((e: { detail: string; meta: { rule: string } }) => [e.meta.rule, e.detail])).toEqual([
        ['max', 'The Minecraft Version variable may not be greater than 20 characters.'],
        ['regex', 'The Server Jar File variable format is invalid.'],
      ]);
      const rust = await app(
        'POST',
        '/servers',
        paperBody({
          egg: SEED_IDS.eggs.rust,
          allocation: { default: a },
          environment: {
            HOSTNAME: 'x',
            LEVEL: 'Moon',
            WORLD_SIZE: 'big',
            WORLD_SEED: 5,
            MAX_PLAYERS: '50',
            RCON_PASS: 'secret',
            RCON_PORT: '28016',
            FRAMEWORK: 'oxide',
          },
        }),
      );
      expect(rust.status).toBe(422);
      expect(
        rust.json.errors.map((e: { meta: { source_field: string; rule: string } }) => `${e.meta.source_field}:${e.meta.rule}`),
      ).toEqual(['environment.LEVEL:in', 'environment.WORLD_SIZE:integer', 'environment.WORLD_SIZE:between']);
    });

    it('rejects an assigned allocation and a duplicate external_id', async () => {
      const s = await createServer({ external_id: 'dup-1' });
      const primary = sim.server(s.id)!.allocation_id;
      const r = await app('POST', '/servers', paperBody({ external_id: 'dup-1', allocation: { default: primary } }));
      expect(r.status).toBe(422);
      expect(r.json.errors.map((e: { meta: { source_field: string; rule: string } }) => `${e.meta.source_field}:${e.meta.rule}`)).toEqual([
        'external_id:unique',
        'allocation.default:exists',
      ]);
      expect((await app('DELETE', `/servers/${s.id}`)).status).toBe(204);
    });

    it('stores a missing nullable variable as an empty string, not the default', async () => {
      const s = await createServer({
        egg: SEED_IDS.eggs.nodejs,
        environment: { USER_UPLOAD: '0', AUTO_UPDATE: false, JS_FILE: 'index.js', APP_NAME: 'my_app-1' },
      });
      const r = await app('GET', `/servers/${s.id}`);
      expect(r.json.attributes.container.environment).toMatchObject({
        NODE_OPTIONS: '',
        GIT_ADDRESS: '',
        AUTO_UPDATE: '',
        APP_NAME: 'my_app-1',
        P_SERVER_LOCATION: 'eu-central',
      });
      await app('DELETE', `/servers/${s.id}/force`);
    });
  });

  describe('capacity and allocations', () => {
    it('accounts memory/disk on the node and frees allocations on delete', async () => {
      const allocation = await freeAllocation(SEED_IDS.nodes.fra2);
      const r = await app(
        'POST',
        '/servers',
        paperBody({ allocation: { default: allocation }, limits: { memory: 4096, swap: 0, disk: 10240, io: 500, cpu: 100 } }),
      );
      expect(r.status).toBe(201);
      expect(r.json.attributes).toMatchObject({ node: SEED_IDS.nodes.fra2, allocation, status: 'installing', suspended: false });
      expect(r.json.attributes.container.installed).toBe(0);
      const node = await app('GET', `/nodes/${SEED_IDS.nodes.fra2}`);
      expect(node.json.attributes.allocated_resources).toEqual({ memory: 4096, disk: 10240 });
      const allocs = await app('GET', `/nodes/${SEED_IDS.nodes.fra2}/allocations?filter[port]=${25565}`);
      expect(allocs.json.data[0].attributes).toMatchObject({ id: allocation, assigned: true });
      const free = await app('GET', `/nodes/${SEED_IDS.nodes.fra2}/allocations?filter[server_id]=false&per_page=100`);
      expect(free.json.data.map((a: { attributes: { id: number } }) => a.attributes.id)).not.toContain(allocation);

      expect((await app('DELETE', `/servers/${r.json.attributes.id}`)).status).toBe(204);
      const after = await app('GET', `/nodes/${SEED_IDS.nodes.fra2}`);
      expect(after.json.attributes.allocated_resources).toEqual({ memory: 0, disk: 0 });
      const a2 = await app('GET', `/nodes/${SEED_IDS.nodes.fra2}/allocations?filter[port]=25565`);
      expect(a2.json.data[0].attributes.assigned).toBe(false);
      expect((await app('GET', `/servers/${r.json.attributes.id}`)).status).toBe(404);
    });

    it('auto-deploys within capacity (with overallocation) and 400s when no node fits', async () => {
      // fra-2: 16384 MiB * 1.5 = 24576 allowed; fra-1 only 32768 -> 30000 fits only on fra-1 in eu-central
      const big = await createServer({
        deploy: { locations: [SEED_IDS.locations.euCentral], dedicated_ip: false, port_range: ['25565-25570'] },
        limits: { memory: 30000, swap: 0, disk: 1000, io: 500, cpu: 100 },
      });
      expect(sim.server(big.id)!.node_id).toBe(SEED_IDS.nodes.fra1);
      const over = await createServer({
        deploy: { locations: [SEED_IDS.locations.euCentral], dedicated_ip: false, port_range: [] },
        limits: { memory: 24000, swap: 0, disk: 1000, io: 500, cpu: 100 },
      });
      expect(sim.server(over.id)!.node_id).toBe(SEED_IDS.nodes.fra2);
      const none = await app(
        'POST',
        '/servers',
        paperBody({
          deploy: { locations: [SEED_IDS.locations.euCentral], dedicated_ip: false, port_range: [] },
          limits: { memory: 5000, swap: 0, disk: 1000, io: 500, cpu: 100 },
        }),
      );
      expect(none.status).toBe(400);
      expect(none.json.errors[0]).toEqual({
        code: 'NoViableNodeException',
        status: '400',
        detail: 'No nodes satisfying the requirements specified for automatic deployment could be found.',
      });
      const deployable = await app('GET', '/nodes/deployable?memory=5000&disk=10');
      expect(deployable.json.data.map((n: { attributes: { name: string } }) => n.attributes.name)).toEqual(['nyc-1']);
      await app('DELETE', `/servers/${big.id}`);
      await app('DELETE', `/servers/${over.id}`);
    });

    it('PATCH build requires every limit and the allocation', async () => {
      const s = await createServer();
      const primary = sim.server(s.id)!.allocation_id;
      const missing = await app('PATCH', `/servers/${s.id}/build`, {
        limits: { memory: 4096 },
        feature_limits: { databases: 0, backups: 0 },
      });
      expect(missing.status).toBe(422);
      expect(missing.json.errors.map((e: { meta: { source_field: string } }) => e.meta.source_field)).toEqual([
        'allocation',
        'limits.swap',
        'limits.io',
        'limits.cpu',
        'limits.disk',
      ]);
      const ok = await app('PATCH', `/servers/${s.id}/build`, {
        allocation: primary,
        limits: { memory: 3072, swap: 0, disk: 8192, io: 500, cpu: 300, threads: null },
        feature_limits: { databases: 0, allocations: 2, backups: 1 },
      });
      expect(ok.status).toBe(200);
      expect(ok.json.attributes.limits).toMatchObject({ memory: 3072, disk: 8192, cpu: 300 });
      expect(ok.json.attributes.feature_limits).toEqual({ databases: 0, allocations: 2, backups: 1 });
      const foreign = await freeAllocation(1);
      const bad = await app('PATCH', `/servers/${s.id}/build`, {
        allocation: foreign,
        limits: { memory: 3072, swap: 0, disk: 8192, io: 500, cpu: 300 },
        feature_limits: { databases: 0, backups: 1 },
      });
      expect(bad.status).toBe(400);
      expect(bad.json.errors[0].detail).toBe('The requested default allocation is not currently assigned to this server.');

      const details = await app('PATCH', `/servers/${s.id}/details`, { name: 'renamed', user: 2 });
      expect(details.json.attributes).toMatchObject({ name: 'renamed', external_id: null, description: '' });
      const ext = await app('PATCH', `/servers/${s.id}/details`, { name: 'renamed', user: 2, external_id: 'ext-77' });
      expect(ext.status).toBe(200);
      expect((await app('GET', '/servers/external/ext-77')).json.attributes.id).toBe(s.id);
      await app('DELETE', `/servers/${s.id}`);
    });
  });

  describe('lifecycle over the client API', () => {
    it('installs, gating the client API with 409 until installed', async () => {
      // Held: the install lasts until this test ends it, however slow the machine.
      sim.holdInstalls();
      const s = await createServer();
      sim.holdInstalls(false);
      const gated = await client('GET', `/servers/${s.identifier}/resources`);
      expect(gated.status).toBe(409);
      expect(gated.json.errors[0]).toEqual({
        code: 'ServerStateConflictException',
        status: '409',
        detail: 'This server has not yet completed its installation process, please try again later.',
      });
      expect((await client('GET', `/servers/${s.identifier}/websocket`)).status).toBe(409);
      const view = await client('GET', `/servers/${s.identifier}`);
      expect(view.status).toBe(200);
      expect(view.json.attributes).toMatchObject({
        identifier: s.identifier,
        is_installing: true,
        status: 'installing',
        server_owner: true,
      });
      expect(view.json.meta).toEqual({ is_server_owner: true, user_permissions: ['*'] });
      // numeric id is not accepted by the client API
      expect((await client('GET', `/servers/${s.id}`)).status).toBe(404);

      expect(sim.endInstall(s.id)).toBe(true);
      expect(sim.endInstall(s.id)).toBe(false); // nothing left to end
      const done = await app('GET', `/servers/${s.id}`);
      expect(done.json.attributes.status).toBeNull();
      expect(done.json.attributes.container.installed).toBe(1);
      const res = await client('GET', `/servers/${s.identifier}/resources`);
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ object: 'stats', attributes: { current_state: 'offline', is_suspended: false } });
      expect(res.json.attributes.resources).toMatchObject({ memory_bytes: 0, cpu_absolute: 0, uptime: 0, network_rx_bytes: 0 });
      await app('DELETE', `/servers/${s.id}`);
    });

    it('moves through power states (each held until the test ends it) and counts resources while running', async () => {
      const s = await installedServer();
      sim.holdTransitions();
      try {
        const power = (signal: string) => client('POST', `/servers/${s.identifier}/power`, { signal });
        expect((await power('start')).status).toBe(204);
        expect(sim.powerState(s.id)).toBe('starting');
        expect(sim.endTransition(s.id)).toBe(true);
        expect(sim.powerState(s.id)).toBe('running');
        const r1 = await client('GET', `/servers/${s.identifier}/resources`);
        expect(r1.json.attributes.current_state).toBe('running');
        await sleep(30); // uptime and traffic grow with time running
        const r2 = await client('GET', `/servers/${s.identifier}/resources`);
        expect(r2.json.attributes.resources.uptime).toBeGreaterThan(r1.json.attributes.resources.uptime);
        expect(r2.json.attributes.resources.network_rx_bytes).toBeGreaterThan(r1.json.attributes.resources.network_rx_bytes);
        expect(r2.json.attributes.resources.memory_bytes).toBeGreaterThan(0);
        expect(r2.json.attributes.resources.memory_bytes).toBeLessThanOrEqual(2048 * 1_000_000);
        expect(sim.console(s.id).some((l) => l.includes('Done ('))).toBe(true);

        const bad = await power('explode');
        expect(bad.status).toBe(422);
        expect(bad.json.errors[0].meta).toEqual({ source_field: 'signal', rule: 'in' });

        await power('stop');
        expect(sim.powerState(s.id)).toBe('stopping');
        sim.endTransition(s.id);
        expect(sim.powerState(s.id)).toBe('offline');

        await power('start');
        sim.endTransition(s.id);
        expect(sim.powerState(s.id)).toBe('running');
        await power('restart');
        expect(sim.powerState(s.id)).toBe('stopping');
        sim.endTransition(s.id);
        expect(sim.powerState(s.id)).toBe('starting');
        sim.endTransition(s.id);
        expect(sim.powerState(s.id)).toBe('running');
        expect(sim.endTransition(s.id)).toBe(false); // nothing left to end

        await power('kill');
        expect(sim.powerState(s.id)).toBe('offline');
      } finally {
        sim.holdTransitions(false);
      }
      await app('DELETE', `/servers/${s.id}`);
    });

    it('sends commands only to a running server', async () => {
      const s = await installedServer();
      const offline = await client('POST', `/servers/${s.identifier}/command`, { command: 'say hello' });
      expect(offline.status).toBe(502);
      expect(offline.json.errors[0]).toEqual({
        code: 'HttpException',
        status: '502',
        detail: 'Server must be online in order to send commands.',
      });
      await client('POST', `/servers/${s.identifier}/power`, { signal: 'start' });
      await waitFor(
        () => sim.powerState(s.id),
        (p) => p === 'running',
      );
      const ok = await client('POST', `/servers/${s.identifier}/command`, { command: 'say hello' });
      expect(ok.status).toBe(204);
      expect(sim.commands(s.id)).toEqual(['say hello']);
      expect(sim.console(s.id)).toContain('> say hello');
      const empty = await client('POST', `/servers/${s.identifier}/command`, { command: '' });
      expect(empty.status).toBe(422);
      await app('DELETE', `/servers/${s.id}`);
    });

    it('round-trips files and serves single-use download URLs', async () => {
      const s = await installedServer();
      const base = `/servers/${s.identifier}/files`;
      const listing = await client('GET', `${base}/list?directory=/`);
      const names = listing.json.data.map((f: { attributes: { name: string } }) => f.attributes.name);
      expect(names).toEqual(['logs', 'plugins', 'eula.txt', 'server.jar', 'server.properties']);
      expect(listing.json.data[0].object).toBe('file_object');

      const props = await fetch(`${sim.url}/api/client${base}/contents?file=${encodeURIComponent('/server.properties')}`, {
        headers: { Authorization: `Bearer ${sim.clientKey}`, Accept: 'application/json' },
      });
      expect(props.headers.get('content-type')).toBe('text/plain');
      expect(await props.text()).toMatch(/^server-port=\d+$/m);

      const content = 'hello=world\nline two\n';
      const w = await fetch(`${sim.url}/api/client${base}/write?file=${encodeURIComponent('/config/app.cfg')}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${sim.clientKey}`, Accept: 'application/json', 'Content-Type': 'text/plain' },
        body: content,
      });
      expect(w.status).toBe(204);
      expect(sim.readFile(s.id, 'config/app.cfg')).toBe(content);
      const back = await fetch(`${sim.url}/api/client${base}/contents?file=config/app.cfg`, {
        headers: { Authorization: `Bearer ${sim.clientKey}`, Accept: 'application/json' },
      });
      expect(await back.text()).toBe(content);

      const dl = await client('GET', `${base}/download?file=${encodeURIComponent('/config/app.cfg')}`);
      expect(dl.json.object).toBe('signed_url');
      // The node's address, as the real panel answers (Wings serves downloads); this simulator plays the node.
      const nodeUrl = dl.json.attributes.url as string;
      expect(nodeUrl).toMatch(/^https:\/\/[a-z0-9-]+\.nodes\.panel\.local:8080\/download\/file\?token=/);
      const url = nodeUrl.replace(/^https:\/\/[^/]+/, sim.url);
      const first = await fetch(url);
      expect(first.status).toBe(200);
      expect(first.headers.get('content-type')).toBe('application/octet-stream');
      expect(first.headers.get('content-disposition')).toBe('attachment; filename="app.cfg"');
      expect(await first.text()).toBe(content);
      const second = await fetch(url);
      expect(second.status).toBe(404);
      expect(((await second.json()) as { error: string }).error).toBe('The requested resource was not found on this server.');

      const del = await client('POST', `${base}/delete`, { root: '/', files: ['config/app.cfg', 'eula.txt'] });
      expect(del.status).toBe(204);
      expect(sim.readFile(s.id, 'eula.txt')).toBeUndefined();
      const missing = await client('GET', `${base}/contents?file=eula.txt`);
      expect(missing.status).toBe(404);
      expect(missing.json.errors[0].code).toBe('DaemonConnectionException');
      expect(missing.json.errors[0].detail).toMatch(
        /^An error occurred on the remote host: The requested resources was not found on the system\.\. \(request id: /,
      );
      const nullRoot = await client('POST', `${base}/delete`, { root: null, files: ['x'] });
      expect(nullRoot.status).toBe(422);
      expect(nullRoot.json.errors[0].meta).toEqual({ source_field: 'root', rule: 'required' });
      await app('DELETE', `/servers/${s.id}`);
    });

    it('issues short-lived websocket tokens signed per node', async () => {
      const s = await installedServer();
      const r = await client('GET', `/servers/${s.identifier}/websocket`);
      expect(r.status).toBe(200);
      expect(Object.keys(r.json)).toEqual(['data']);
      expect(r.json.data.socket).toBe(`wss://fra-1.nodes.panel.local:8080/api/servers/${s.uuid}/ws`);
      const parts = (r.json.data.token as string).split('.');
      expect(parts).toHaveLength(3);
      const payload = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString());
      expect(payload.exp - payload.iat).toBe(600);
      expect(payload).toMatchObject({ server_uuid: s.uuid, permissions: ['*'], user_id: sim.serviceUserId });
      expect(sim.wings.verifyJwt(r.json.data.token)).not.toBeNull();
      expect(sim.wings.verifyJwt(`${parts[0]}.${parts[1]}.AAAA`)).toBeNull();
      await app('DELETE', `/servers/${s.id}`);
    });

    it('gates suspended servers and stops them', async () => {
      const s = await installedServer();
      await client('POST', `/servers/${s.identifier}/power`, { signal: 'start' });
      await waitFor(
        () => sim.powerState(s.id),
        (p) => p === 'running',
      );
      expect((await app('POST', `/servers/${s.id}/suspend`)).status).toBe(204);
      const detail = await app('GET', `/servers/${s.id}`);
      expect(detail.json.attributes).toMatchObject({ status: 'suspended', suspended: true });
      await waitFor(
        () => sim.powerState(s.id),
        (p) => p === 'offline',
      );
      for (const [method, path, body] of [
        ['GET', 'resources', undefined],
        ['POST', 'power', { signal: 'start' }],
        ['GET', 'files/list', undefined],
      ] as const) {
        const r = await client(method, `/servers/${s.identifier}/${path}`, body);
        expect(r.status).toBe(409);
        expect(r.json.errors[0].detail).toBe('This server is currently suspended and the functionality requested is unavailable.');
      }
      const view = await client('GET', `/servers/${s.identifier}`);
      expect(view.json.attributes.is_suspended).toBe(true);
      expect((await app('POST', `/servers/${s.id}/unsuspend`)).status).toBe(204);
      expect((await client('GET', `/servers/${s.identifier}/resources`)).status).toBe(200);
      await app('DELETE', `/servers/${s.id}`);
    });

    it('hides servers of other users', async () => {
      const s = await installedServer();
      const other = sim.createUser({ email: 'bob@example.com', username: 'bob' });
      const key = sim.createClientKey(other.id);
      const list = await client('GET', '', undefined, key);
      expect(list.json.data).toEqual([]);
      const r = await client('GET', `/servers/${s.identifier}`, undefined, key);
      expect(r.status).toBe(404);
      expect(r.json.errors[0].detail).toBe('The requested resource does not exist on this server.');
      const mine = await client('GET', '');
      expect(mine.json.data.map((x: { attributes: { identifier: string } }) => x.attributes.identifier)).toContain(s.identifier);
      expect(mine.json.meta.pagination.per_page).toBe(50);
      await app('DELETE', `/servers/${s.id}`);
    });
  });

  describe('node maintenance', () => {
    it('409s client calls on servers of a node in maintenance (programmatic and HTTP)', async () => {
      const s = await installedServer({}, SEED_IDS.nodes.nyc1);
      sim.setNodeMaintenance(SEED_IDS.nodes.nyc1, true);
      const r = await client('GET', `/servers/${s.identifier}/resources`);
      expect(r.status).toBe(409);
      expect(r.json.errors[0].detail).toBe(
        'The node of this server is currently under maintenance and the functionality requested is unavailable.',
      );
      const view = await client('GET', `/servers/${s.identifier}`);
      expect(view.status).toBe(200);
      expect(view.json.attributes.is_node_under_maintenance).toBe(true);
      expect((await app('GET', `/nodes/${SEED_IDS.nodes.nyc1}`)).json.attributes.maintenance_mode).toBe(true);
      const off = await fetch(`${sim.url}/__sim/nodes/${SEED_IDS.nodes.nyc1}/maintenance`, {
        method: 'POST',
        body: JSON.stringify({ enabled: false }),
      });
      expect(off.status).toBe(200);
      expect((await client('GET', `/servers/${s.identifier}/resources`)).status).toBe(200);
      await app('DELETE', `/servers/${s.id}`);
    });
  });

  describe('fault injection', () => {
    it('status faults apply to the next N matching requests only', async () => {
      sim.faults.add({ method: 'GET', path: '/api/application/nodes', count: 2, effect: { kind: 'status', status: 503 } });
      const a = await app('GET', '/nodes');
      const b = await app('GET', '/nodes/1');
      const c = await app('GET', '/nodes');
      expect([a.status, b.status, c.status]).toEqual([503, 503, 200]);
      expect(a.json.errors[0]).toEqual({ code: 'HttpException', status: '503', detail: 'Service Unavailable' });
      expect((await app('GET', '/locations')).status).toBe(200);
      expect(sim.faults.list()).toEqual([]);
    });

    it('latency faults delay then answer normally', async () => {
      sim.faults.add({ path: /^\/api\/application\/locations$/, count: 1, effect: { kind: 'latency', ms: 250 } });
      const t0 = Date.now();
      const r = await app('GET', '/locations');
      expect(Date.now() - t0).toBeGreaterThanOrEqual(240);
      expect(r.status).toBe(200);
      expect(r.json.object).toBe('list');
    });

    it('timeout faults hang until the client aborts', async () => {
      sim.faults.add({ method: 'POST', path: '/api/client/servers/', count: 1, effect: { kind: 'timeout' } });
      const t0 = Date.now();
      await expect(
        call(sim, sim.clientKey, 'POST', '/api/client/servers/abcdefgh/power', { signal: 'start' }, { signal: AbortSignal.timeout(200) }),
      ).rejects.toThrow();
      // Only the client's abort ended it (a lower bound: no machine answers sooner than that).
      expect(Date.now() - t0).toBeGreaterThanOrEqual(190);
      // consumed: the next one is answered
      expect((await client('POST', '/servers/abcdefgh/power', { signal: 'start' })).status).toBe(404);
    });

    it('rate_limit faults answer 429 with Retry-After and rate-limit headers', async () => {
      sim.faults.add({ path: '/api/client', count: 1, effect: { kind: 'rate_limit', retryAfter: 7 } });
      const r = await client('GET', '');
      expect(r.status).toBe(429);
      expect(r.headers.get('retry-after')).toBe('7');
      expect(r.headers.get('x-ratelimit-limit')).toBe('720');
      expect(r.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(Number(r.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);
      expect(r.json.errors[0]).toEqual({ code: 'ThrottleRequestsException', status: '429', detail: 'Too Many Attempts.' });
      expect((await client('GET', '')).status).toBe(200);
    });

    it('is controllable over HTTP', async () => {
      const add = await fetch(`${sim.url}/__sim/faults`, {
        method: 'POST',
        body: JSON.stringify({ method: 'GET', pathRegex: '^/api/application/users$', effect: { kind: 'status', status: 500 } }),
      });
      expect(add.status).toBe(201);
      expect((await app('GET', '/users')).status).toBe(500);
      expect((await app('GET', '/users')).json.errors[0].detail).toBe(
        'An unexpected error was encountered while processing this request, please try again.',
      );
      const state = (await (await fetch(`${sim.url}/__sim/state`)).json()) as { faults: unknown[]; nodes: unknown[] };
      expect(state.faults).toHaveLength(1);
      expect(state.nodes).toHaveLength(3);
      expect((await fetch(`${sim.url}/__sim/faults`, { method: 'DELETE' })).status).toBe(204);
      expect((await app('GET', '/users')).status).toBe(200);
    });
  });
});

describe('panel simulator: rate limits and shutdown', () => {
  it('throttles per user with the configured limit', async () => {
    const sim = await startPanelSim({ seed: 'empty', rateLimits: { client: 3 } });
    try {
      const statuses: number[] = [];
      let last: Response | undefined;
      for (let i = 0; i < 4; i++) {
        last = await fetch(`${sim.url}/api/client`, { headers: { Accept: 'application/json', Authorization: `Bearer ${sim.clientKey}` } });
        statuses.push(last.status);
        if (i < 3) await last.text();
      }
      expect(statuses).toEqual([200, 200, 200, 429]);
      expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(Number(last!.headers.get('retry-after'))).toBeLessThanOrEqual(60);
      const body = (await last!.json()) as { errors: Array<{ code: string }> };
      expect(body.errors[0]!.code).toBe('ThrottleRequestsException');
      // the application API has its own bucket
      const a = await fetch(`${sim.url}/api/application/nodes`, {
        headers: { Accept: 'application/json', Authorization: `Bearer ${sim.appKey}` },
      });
      expect(a.status).toBe(200);
      expect((await a.json()) as { data: unknown[] }).toMatchObject({ data: [] });
    } finally {
      await sim.close();
    }
  });

  it('close() releases requests hanging on a timeout fault', async () => {
    const sim = await startPanelSim({ seed: 'empty' });
    sim.faults.add({ path: '/api/application', effect: { kind: 'timeout' } });
    const pending = fetch(`${sim.url}/api/application/nodes`, {
      headers: { Accept: 'application/json', Authorization: `Bearer ${sim.appKey}` },
    });
    await until(() => sim.faults.list()[0]!.hits === 1, { what: 'the request reaching the simulator' });
    // close() resolving at all is the outcome (a hanging request would keep it open until the test times out).
    await sim.close();
    await expect(pending).rejects.toThrow();
  });
});

describe('panel simulator: test controls that hold a state until the test ends it', () => {
  it("installMs 'held': an install stays installing until endInstall, also when asked over HTTP (/__sim)", async () => {
    const sim = await startPanelSim({ installMs: 'held', transitionMs: 'held' });
    try {
      const free = await call(sim, sim.appKey, 'GET', '/api/application/nodes/1/allocations?filter[server_id]=false&per_page=2');
      const [first, second] = free.json.data.map((a: { attributes: { id: number } }) => a.attributes.id);
      const create = async (allocation: number) =>
        (await call(sim, sim.appKey, 'POST', '/api/application/servers', paperBody({ allocation: { default: allocation } }))).json
          .attributes as { id: number; identifier: string };
      const a = await create(first);
      // However long the machine takes, nothing ends it but the test.
      await sleep(50);
      expect(sim.server(a.id)!.status).toBe('installing');
      const end = await fetch(`${sim.url}/__sim/servers/${a.identifier}/end-install`, { method: 'POST' });
      expect(await end.json()).toEqual({ ended: true });
      expect(sim.server(a.id)!.status).toBeNull();
      // Power transitions are held too: starting until ended.
      await call(sim, sim.clientKey, 'POST', `/api/client/servers/${a.identifier}/power`, { signal: 'start' });
      await sleep(50);
      expect(sim.powerState(a.id)).toBe('starting');
      const ended = await fetch(`${sim.url}/__sim/servers/${a.id}/end-transition`, { method: 'POST' });
      expect(await ended.json()).toEqual({ ended: true });
      expect(sim.powerState(a.id)).toBe('running');
      // Holds off: the next install ends by its timer (the default 3 s) or early at endInstall.
      const holds = await fetch(`${sim.url}/__sim/holds`, { method: 'POST', body: JSON.stringify({ installs: false }) });
      expect(await holds.json()).toEqual({ installs: false, transitions: true, archives: false });
      const b = await create(second);
      expect(sim.server(b.id)!.status).toBe('installing');
      expect(sim.endInstall(b.identifier)).toBe(true);
      expect(sim.server(b.id)!.status).toBeNull();
      expect(sim.endInstall(b.identifier)).toBe(false);
    } finally {
      await sim.close();
    }
  });

  it('held archives: a compress waits, as Wings on a long archive, until the test ends it (also over HTTP)', async () => {
    const sim = await startPanelSim({ installMs: 20 });
    try {
      const free = await call(sim, sim.appKey, 'GET', '/api/application/nodes/1/allocations?filter[server_id]=false&per_page=1');
      const allocation = free.json.data[0].attributes.id as number;
      const created = (await call(sim, sim.appKey, 'POST', '/api/application/servers', paperBody({ allocation: { default: allocation } })))
        .json.attributes as { identifier: string };
      await until(() => sim.server(created.identifier)?.status === null, { what: 'the install' });
      const files = `/api/client/servers/${created.identifier}/files`;
      expect(
        (await call(sim, sim.clientKey, 'POST', `${files}/write?file=a.txt`, 'hello', { headers: { 'Content-Type': 'text/plain' } }))
          .status,
      ).toBe(204);
      const holds = await fetch(`${sim.url}/__sim/holds`, { method: 'POST', body: JSON.stringify({ archives: true }) });
      expect(await holds.json()).toMatchObject({ archives: true });
      let answered = false;
      const pending = call(sim, sim.clientKey, 'POST', `${files}/compress`, { root: '/', files: ['a.txt'] }).then((r) => {
        answered = true;
        return r;
      });
      await until(() => sim.heldArchives() === 1, { what: 'the compress held' });
      expect(answered).toBe(false);
      expect(Object.keys(sim.files(created.identifier)).some((p) => p.endsWith('.tar.gz'))).toBe(false);
      const ended = await fetch(`${sim.url}/__sim/archives/end`, { method: 'POST' });
      expect(await ended.json()).toEqual({ ended: 1 });
      const res = await pending;
      expect(res.status).toBe(200);
      expect(Object.keys(sim.files(created.identifier)).some((p) => p.endsWith('.tar.gz'))).toBe(true);
    } finally {
      await sim.close();
    }
  });

  it("a 'hold' fault keeps a panel request unanswered until the test releases it, then answers it normally", async () => {
    const sim = await startPanelSim();
    try {
      sim.faults.add({ method: 'GET', path: '/api/application/locations', count: 1, effect: { kind: 'hold' } });
      let answered = false;
      const pending = call(sim, sim.appKey, 'GET', '/api/application/locations').then((r) => {
        answered = true;
        return r;
      });
      await until(() => sim.faults.held() === 1, { what: 'the request held' });
      await sleep(50);
      expect(answered).toBe(false);
      const released = await fetch(`${sim.url}/__sim/faults/release`, { method: 'POST' });
      expect(await released.json()).toEqual({ released: 1 });
      const r = await pending;
      expect(r.status).toBe(200);
      expect(r.json.object).toBe('list');
      expect(sim.faults.held()).toBe(0);
    } finally {
      await sim.close();
    }
  });

  it('close() lets held requests go and does not wait for them', async () => {
    const sim = await startPanelSim({ seed: 'empty' });
    sim.faults.add({ path: '/api/application', effect: { kind: 'hold' } });
    const pending = call(sim, sim.appKey, 'GET', '/api/application/nodes').catch((e: unknown) => e);
    await until(() => sim.faults.held() === 1, { what: 'the request held' });
    await sim.close();
    await pending;
    expect(sim.faults.held()).toBe(0);
  });
});
