import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPanelSim, type PanelSim } from '../../dev/panel-sim/index.ts';
import { type CallBudget, PanelClient } from '../../shared/panel/client.ts';
import { detectPanelKind } from '../../shared/panel/detect.ts';
import { PelicanClient } from '../../shared/panel/pelican.ts';
import { panelRequests } from '../helpers/panel-requests.ts';
import { PanelRequestError } from '../../shared/panel/errors.ts';
import type { CreateServerBody } from '../../shared/panel/types.ts';
import { until } from '../helpers/until.ts';

/** The panel client against the simulator over real HTTP, including every fault it can inject. */
let sim: PanelSim;
let client: PanelClient;
beforeAll(async () => {
  // Wings' addresses (downloads, the console) point at the simulator, so the links resolve here.
  sim = await startPanelSim({ installMs: 150, transitionMs: 50, resourcesCacheMs: 0, wingsAddress: 'simulator' });
  client = new PanelClient({ baseUrl: sim.url, appKey: sim.appKey, clientKey: sim.clientKey, timeoutMs: 400, baseBackoffMs: 20 });
});
afterAll(async () => sim?.close());

let n = 0;
async function serverBody(overrides: Partial<CreateServerBody> = {}): Promise<CreateServerBody> {
  const egg = (await client.listEggs(1)).find((e) => e.id === 1)!;
  const environment = Object.fromEntries(
    egg.relationships!.variables!.data.map((v) => [v.attributes.env_variable, v.attributes.default_value ?? '']),
  );
  const [allocation] = await client.listFreeAllocations(1);
  n++;
  return {
    name: `test-${n}`,
    external_id: `ext-${n}-${Date.now()}`,
    user: sim.serviceUserId,
    egg: 1,
    docker_image: egg.docker_image,
    startup: egg.startup,
    environment,
    limits: { memory: 1024, swap: 0, disk: 2048, io: 500, cpu: 100, threads: null },
    feature_limits: { databases: 0, allocations: 1, backups: 0 },
    allocation: { default: allocation!.id },
    ...overrides,
  };
}

const errorOf = async (p: Promise<unknown>): Promise<PanelRequestError> => {
  try {
    await p;
  } catch (e) {
    return e as PanelRequestError;
  }
  throw new Error('expected a failure');
};

describe('application API', () => {
  it('reads locations, nodes with allocated resources, nests, eggs with variables', async () => {
    const [locations, nodes, nests] = await Promise.all([client.listLocations(), client.listNodes(), client.listNests()]);
    expect(locations.map((l) => l.short).sort()).toEqual(['eu-central', 'us-east']);
    expect(nodes).toHaveLength(3);
    expect(nodes[0]!.allocated_resources).toEqual({ memory: expect.any(Number), disk: expect.any(Number) });
    expect(nests.length).toBeGreaterThanOrEqual(2);
    const eggs = await client.listEggs(1);
    expect(eggs.map((e) => e.name)).toContain('Paper');
    expect(eggs[0]!.relationships!.variables!.data.length).toBeGreaterThan(0);
  });

  it('creates, finds by external id, resizes, suspends, unsuspends and deletes a server', async () => {
    const body = await serverBody();
    const created = await client.createServer(body);
    expect(created.status).toBe('installing');
    expect(created.identifier).toHaveLength(8);
    expect((await client.getServerByExternalId(body.external_id))?.id).toBe(created.id);
    expect(await client.getServerByExternalId('no-such-external-id')).toBeNull();

    const resized = await client.updateBuild(created.id, {
      allocation: created.allocation,
      limits: { ...body.limits, memory: 2048 },
      feature_limits: body.feature_limits,
    });
    expect(resized.limits.memory).toBe(2048);
    expect((await client.getNode(1)).allocated_resources.memory).toBeGreaterThanOrEqual(2048);

    await client.suspendServer(created.id);
    await client.suspendServer(created.id); // no-op when already suspended
    expect((await client.getServer(created.id)).suspended).toBe(true);
    await client.unsuspendServer(created.id);
    expect((await client.getServer(created.id)).suspended).toBe(false);

    await client.deleteServer(created.id);
    await client.deleteServer(created.id); // already gone counts as done
    expect(await client.getServerByExternalId(body.external_id)).toBeNull();
  });

  it("carries the panel's 422 field errors in details, and creates nothing", async () => {
    const body = await serverBody();
    delete body.environment.MINECRAFT_VERSION;
    const err = await errorOf(client.createServer(body));
    expect(err).toBeInstanceOf(PanelRequestError);
    expect(err.code).toBe('panel_error');
    expect(err.statusCode).toBe(502);
    expect(err.panelStatus).toBe(422);
    expect((err.details as { fieldErrors: { field: string; rule: string }[] }).fieldErrors).toContainEqual(
      expect.objectContaining({ field: 'environment.MINECRAFT_VERSION', rule: 'required' }),
    );
    expect(await client.getServerByExternalId(body.external_id)).toBeNull();
  });
});

describe('client API', () => {
  it('resolves the service user, drives power, console and files of an installed server', async () => {
    expect((await client.getAccount()).id).toBe(sim.serviceUserId);
    const created = await client.createServer(await serverBody());
    const id = created.identifier;

    const gated = await errorOf(client.getResources(id));
    expect(gated.code).toBe('conflict');
    expect(gated.statusCode).toBe(409);
    await until(async () => (await client.getServer(created.id)).status === null);

    expect((await client.getResources(id)).current_state).toBe('offline');
    const offlineCommand = await errorOf(client.sendCommand(id, 'say hi'));
    expect(offlineCommand.panelStatus).toBe(502);

    await client.power(id, 'start');
    await until(async () => (await client.getResources(id)).current_state === 'running');
    await client.sendCommand(id, 'say hello world');
    expect(sim.console(id).join('\n')).toContain('say hello world');

    const ws = await client.websocket(id);
    expect(ws.socket).toMatch(/^wss?:\/\/.+\/api\/servers\/[0-9a-f-]{36}\/ws$/);
    expect(ws.token.split('.')).toHaveLength(3);

    await client.writeFile(id, '/notes/hello.txt', 'line one\nline two');
    expect(await client.fileContents(id, '/notes/hello.txt')).toBe('line one\nline two');
    expect((await client.listFiles(id, '/notes')).map((f) => f.name)).toEqual(['hello.txt']);
    const url = await client.downloadUrl(id, '/notes/hello.txt');
    expect(await (await fetch(url)).text()).toBe('line one\nline two');
    expect((await fetch(url)).status).not.toBe(200); // single use
    await client.deleteFiles(id, '/', ['notes/hello.txt']);
    expect(await client.listFiles(id, '/notes')).toEqual([]);

    await client.power(id, 'kill');
    await until(async () => (await client.getResources(id)).current_state === 'offline');
  });

  it('node maintenance turns control into 409', async () => {
    const created = await client.createServer(await serverBody());
    await until(async () => (await client.getServer(created.id)).status === null);
    sim.setNodeMaintenance(1, true);
    try {
      const err = await errorOf(client.power(created.identifier, 'start'));
      expect(err.code).toBe('conflict');
    } finally {
      sim.setNodeMaintenance(1, false);
    }
  });
});

describe('faults', () => {
  it('latency within the timeout is just slower', async () => {
    sim.faults.add({ method: 'GET', path: '/api/application/locations', count: 1, effect: { kind: 'latency', ms: 150 } });
    const t0 = Date.now();
    expect(await client.listLocations()).toHaveLength(2);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
  });

  it('an idempotent read is retried through a passing 5xx', async () => {
    sim.faults.add({ method: 'GET', path: '/api/application/nodes', count: 2, effect: { kind: 'status', status: 503 } });
    expect(await client.listNodes()).toHaveLength(3);
    expect(sim.faults.list().filter((f) => f.path === '/api/application/nodes')).toHaveLength(0);
  });

  it('a lasting 5xx ends in panel_error 502 after the attempts', async () => {
    sim.faults.add({ method: 'GET', path: '/api/application/nests', count: 5, effect: { kind: 'status', status: 500 } });
    const err = await errorOf(client.listNests());
    expect(err.code).toBe('panel_error');
    expect(err.statusCode).toBe(502);
    expect(err.panelStatus).toBe(500);
    const left = sim.faults.list().find((f) => f.path === '/api/application/nests');
    expect(left?.remaining).toBe(2); // 3 attempts used
    sim.faults.clear();
  });

  it('a non-idempotent create is not retried on 5xx and leaves nothing behind', async () => {
    const body = await serverBody();
    sim.faults.add({ method: 'POST', path: '/api/application/servers', count: 1, effect: { kind: 'status', status: 500 } });
    const err = await errorOf(client.createServer(body));
    expect(err.code).toBe('panel_error');
    expect(await client.getServerByExternalId(body.external_id)).toBeNull();
  });

  it('a timeout ends in panel_timeout 504; reads retry, then give up', async () => {
    sim.faults.add({ method: 'GET', path: '/api/application/locations', count: 3, effect: { kind: 'timeout' } });
    const t0 = Date.now();
    const err = await errorOf(client.listLocations());
    expect(err.code).toBe('panel_timeout');
    expect(err.statusCode).toBe(504);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(3 * 400);
  });

  it('a create whose answer is lost is ambiguous: panel_timeout, and the external id tells it happened', async () => {
    const body = await serverBody();
    sim.faults.add({ method: 'POST', path: '/api/application/servers', count: 1, effect: { kind: 'lost_response' } });
    const hurried = new PanelClient({ baseUrl: sim.url, appKey: sim.appKey, timeoutMs: 300 });
    const err = await errorOf(hurried.createServer(body, 300));
    expect(err.code).toBe('panel_timeout');
    expect((await client.getServerByExternalId(body.external_id))?.name).toBe(body.name);
  });

  it('429 is retried after Retry-After, even for a non-idempotent call', async () => {
    const created = await client.createServer(await serverBody());
    await until(async () => (await client.getServer(created.id)).status === null);
    sim.faults.add({
      method: 'POST',
      path: `/api/client/servers/${created.identifier}/power`,
      count: 1,
      effect: { kind: 'rate_limit', retryAfter: 0 },
    });
    await client.power(created.identifier, 'start');
    await until(async () => sim.powerState(created.identifier) === 'running');
  });

  it('a 429 asking for a long wait fails fast: 503 panel_unavailable with that Retry-After', async () => {
    sim.faults.add({ method: 'GET', path: '/api/application/locations', count: 1, effect: { kind: 'rate_limit', retryAfter: 60 } });
    const err = await errorOf(client.listLocations());
    expect(err.code).toBe('panel_unavailable');
    expect(err.statusCode).toBe(503);
    expect(err.panelStatus).toBe(429);
    expect(err.headers['Retry-After']).toBe('60');
  });

  it('a panel answering 502 or 503 (down, or behind a proxy that cannot reach it) is panel_unavailable, not a bug of ours', async () => {
    for (const status of [502, 503]) {
      sim.faults.add({ method: 'GET', path: '/api/application/nodes', count: 3, effect: { kind: 'status', status } });
      const err = await errorOf(client.listNodes());
      expect(err.code).toBe('panel_unavailable');
      expect(Number(err.headers['Retry-After'])).toBeGreaterThan(0);
      sim.faults.clear();
    }
  });

  it('a wrong key is a clear panel_error that never shows a key', async () => {
    const bad = new PanelClient({
      baseUrl: sim.url,
      appKey: 'ptla_wrongwrongwrongwrongwrongwrongwrongwrong0000',
      clientKey: 'ptlc_wrongwrongwrongwrongwrongwrongwrongwrong0000',
    });
    const app = await errorOf(bad.listNodes());
    const cli = await errorOf(bad.getAccount());
    for (const err of [app, cli]) {
      expect(err.code).toBe('panel_error');
      expect(err.panelStatus).toBe(401);
      const shown = JSON.stringify({ message: err.message, details: err.details, stack: err.stack });
      expect(shown).not.toContain('wrongwrong');
      expect(shown).not.toContain(sim.appKey);
    }
  });

  it('an unreachable panel is 503 panel_unavailable with Retry-After (or a timeout), not a crash', async () => {
    const gone = new PanelClient({ baseUrl: 'http://127.0.0.1:9', appKey: 'x'.repeat(48), timeoutMs: 300, baseBackoffMs: 5 });
    const err = await errorOf(gone.listNodes());
    expect(['panel_unavailable', 'panel_timeout']).toContain(err.code);
    if (err.code === 'panel_unavailable') expect(Number(err.headers['Retry-After'])).toBeGreaterThan(0);
  });
});

describe("limiters of one route and one server (a 429 that is not the panel's request rate)", () => {
  /** A call budget that keeps what it is told: the pauses a 429 asks of every process. */
  const recording = () => {
    const paused: string[] = [];
    const budget: CallBudget = { spend: async () => {}, observe: async () => {}, pause: async (api) => void paused.push(api) };
    return {
      paused,
      client: new PanelClient({ baseUrl: sim.url, appKey: sim.appKey, clientKey: sim.clientKey, budget, baseBackoffMs: 20 }),
    };
  };

  it("Pterodactyl's files/pull throttle (10 per 5 min): that call fails alone, 429 rate_limited with its Retry-After, no pause", async () => {
    const { paused, client: budgeted } = recording();
    const created = await client.createServer(await serverBody());
    const path = `/api/client/servers/${created.identifier}/files/pull`;
    sim.faults.add({ method: 'POST', path, count: 1, effect: { kind: 'rate_limit', limit: 10, retryAfter: 240 } });
    const err = await errorOf(
      budgeted.serverCall(created.identifier, 'POST', '/files/pull', { json: { url: 'https://x.test/a' }, idempotent: false }),
    );
    expect(err.code).toBe('rate_limited');
    expect(err.statusCode).toBe(429);
    expect(err.headers['Retry-After']).toBe('240');
    expect(paused).toEqual([]);
  });

  it("the same route refused by the panel-wide limiter (its limit, 720) pauses the panel's budget", async () => {
    const { paused, client: budgeted } = recording();
    const created = await client.createServer(await serverBody());
    const path = `/api/client/servers/${created.identifier}/files/pull`;
    sim.faults.add({ method: 'POST', path, count: 1, effect: { kind: 'rate_limit', limit: 720, retryAfter: 60 } });
    const err = await errorOf(
      budgeted.serverCall(created.identifier, 'POST', '/files/pull', { json: { url: 'https://x.test/a' }, idempotent: false }),
    );
    expect(err.code).toBe('panel_unavailable');
    expect(paused).toEqual(['client']);
  });
});

describe('the Pelican adapter against the simulator in its Pelican mode', () => {
  let pelican: PanelSim;
  let p: PelicanClient;
  beforeAll(async () => {
    pelican = await startPanelSim({ kind: 'pelican', installMs: 50, transitionMs: 20, resourcesCacheMs: 0 });
    p = new PelicanClient({ baseUrl: pelican.url, appKey: pelican.appKey, clientKey: pelican.clientKey, timeoutMs: 2000 });
  });
  afterAll(async () => pelican?.close());

  it('detection: pelican here, pterodactyl on the other simulator', async () => {
    expect(await detectPanelKind(p)).toBe('pelican');
    expect(await detectPanelKind(client)).toBe('pterodactyl');
  });

  it('regions from node tags; eggs without nests, their rules as lists', async () => {
    const { locations, nodes } = await p.topology();
    expect(locations.map((l) => l.short).sort()).toEqual([...new Set(locations.map((l) => l.short))].sort());
    const shortOf = new Map(locations.map((l) => [l.id, l.short]));
    expect(nodes.every((n) => typeof shortOf.get(n.location_id) === 'string')).toBe(true);
    expect(nodes.map((n) => shortOf.get(n.location_id))).toContain('eu-central');
    const eggs = await p.listAllEggs();
    expect(eggs.length).toBeGreaterThan(0);
    const variables = eggs.flatMap(({ egg }) => egg.relationships?.variables?.data.map((d) => d.attributes) ?? []);
    expect(variables.length).toBeGreaterThan(0);
    expect(variables.every((v) => Array.isArray(v.rules) && v.rules.every((r) => typeof r === 'string' && !r.includes('|')))).toBe(true);
  });

  it('create and build carry oom_killer (inverted), users carry no names; nothing is refused', async () => {
    const egg = (await p.listAllEggs()).find(({ egg }) => egg.id === 1)!.egg;
    const environment = Object.fromEntries(
      egg.relationships!.variables!.data.map((v) => [v.attributes.env_variable, v.attributes.default_value ?? '']),
    );
    const [allocation] = await p.listFreeAllocations(1);
    const user = await p.createUser({
      email: 'pelican-user@example.com',
      username: 'pelicanuser',
      external_id: 'pelican-user',
      first_name: 'A',
      last_name: 'B',
    });
    expect(user).not.toHaveProperty('first_name');
    const created = await p.createServer({
      name: 'pelican adapter',
      external_id: `pelican-${Date.now()}`,
      user: pelican.serviceUserId,
      egg: 1,
      docker_image: egg.docker_image,
      startup: egg.startup,
      environment,
      limits: { memory: 1024, swap: 0, disk: 2048, io: 500, cpu: 100, threads: null },
      feature_limits: { databases: 0, allocations: 1, backups: 0 },
      allocation: { default: allocation!.id },
      oom_disabled: false,
    });
    expect(pelican.state.servers.get(created.id)!.oom_disabled).toBe(false);
    expect(created.limits.oom_disabled).toBe(false);
    const built = await p.updateBuild(created.id, {
      allocation: created.allocation,
      limits: { ...created.limits, memory: 2048 },
      feature_limits: created.feature_limits,
      oom_disabled: true,
    });
    expect(built.limits.memory).toBe(2048);
    expect(pelican.state.servers.get(created.id)!.oom_disabled).toBe(true);
    expect(pelican.refused()).toEqual([]);
  });

  it("Pelican's websocket limiter (5 a minute a server) is that call's own 429; credentials are kept, so it is not reached", async () => {
    const [server] = [...pelican.state.servers.values()];
    const id = server!.uuidShort;
    await until(() => pelican.server(id)?.status === null);
    for (let i = 0; i < 8; i++) await p.websocket(id);
    expect((await panelRequests(pelican))[`GET /api/client/servers/${id}/websocket`]).toBe(1);
    // Straight to the panel, past the cache: the 6th in the minute is refused by its own limiter.
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${pelican.url}/api/client/servers/${id}/websocket`, {
        headers: { authorization: `Bearer ${pelican.clientKey}`, accept: 'application/json' },
      });
      statuses.push(res.status);
      if (res.status === 429) expect(res.headers.get('x-ratelimit-limit')).toBe('5');
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
  });
});
