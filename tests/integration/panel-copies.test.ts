import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { clearCatalogCache } from '../../shared/catalog/index.ts';
import { asKind } from '../../shared/db/items.ts';
import { keys } from '../../shared/db/keys.ts';
import { getRaw, setAttributes } from '../helpers/db.ts';
import { type ApiResponse, expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { customer } from '../helpers/customer.ts';

/**
 * The shared copies of a panel's topology and eggs (shared/catalog) under deploys and catalog
 * reads, against DynamoDB Local and the panel simulator over HTTP with its real 240/720 limits.
 * Panel calls are counted with zero-latency fault rules (a rule only counts the requests it matches).
 * Clearing the catalog's in-process memo stands for "another process": what is left is the table.
 */
// Reads time out fast, so the tests of a silent panel run in seconds. A create gets 3 s: twenty at
// once through the simulator, which shares this busy process, took longer than 300 ms on a loaded
// machine and failed a test about placement with a timeout.
process.env.PANEL_TIMEOUT_MS = '300';
process.env.PANEL_CREATE_TIMEOUT_MS = '3000';

let api: TestApi;
let sim: PanelSim;
let instanceId: string;
beforeAll(async () => {
  // This file tests its own rules, not the panel's call budget (tests/integration/panel-fairness*.test.ts):
  // a burst of 20 deploys by one account would otherwise meet that account's share of the panel's calls.
  api = await startTestApi({
    panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0, rateLimits: { application: 100_000, client: 100_000 } },
  });
  sim = api.panel!.sim;
  instanceId = api.panel!.instanceId;
});
afterAll(async () => api?.stop());

const small = { name: 'copy test', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 };

/** Application API requests that reached the panel while `fn` ran, creates apart. */
async function applicationCallsDuring(fn: () => Promise<unknown>): Promise<{ creates: number; others: number }> {
  const creates = sim.faults.add({ method: 'POST', path: '/api/application/servers', effect: { kind: 'latency', ms: 0 } });
  const others = sim.faults.add({ path: '/api/application/', effect: { kind: 'latency', ms: 0 } });
  try {
    await fn();
    const hits = (id: string) => sim.faults.list().find((f) => f.id === id)!.hits;
    return { creates: hits(creates), others: hits(others) };
  } finally {
    sim.faults.remove(creates);
    sim.faults.remove(others);
  }
}

/** Reads the panel into the topology copy now (as its refresh after the TTL would), so the copy matches the panel. */
async function refreshTopologyCopy(): Promise<void> {
  expect((await api.call('GET', '/v1/regions')).status).toBe(200); // there is a copy
  await setAttributes(keys.panelTopology(instanceId), { freshUntil: 0 });
  clearCatalogCache();
  expect((await api.call('GET', '/v1/regions')).status).toBe(200); // this reader refreshed it
}

const panelServers = () => [...sim.state.servers.values()];
/** Each node's memory capacity with overallocation, and what the panel counts as allocated on it. */
const panelNodes = () =>
  [...sim.state.nodes.values()].map((n) => ({
    capacityMb: Math.floor((n.memory * (100 + n.memory_overallocate)) / 100),
    allocatedMb: sim.state.allocatedResources(n.id).memory,
  }));

const outcome = (r: ApiResponse): string => (r.status === 201 ? '201' : `${r.status} ${r.body?.error?.code}`);
const expectOnly = (responses: ApiResponse[], allowed: string[]) => {
  for (const r of responses) expect(allowed, r.text).toContain(outcome(r));
};

describe('deploys place from the shared copy', () => {
  it('after one warm-up deploy, a deploy makes one Application call (the create), in this process and in another', async () => {
    const { token } = await customer(api, 'steady@example.com', { grantCents: 10_000 });
    expect((await api.call('POST', '/v1/servers', { token, body: small })).status).toBe(201);

    const warm = await applicationCallsDuring(async () => {
      expect((await api.call('POST', '/v1/servers', { token, body: small })).status).toBe(201);
    });
    expect(warm.creates).toBe(1);
    expect(warm.creates + warm.others).toBeLessThanOrEqual(2);

    clearCatalogCache(); // another process: nothing in memory, the copies in the table
    const elsewhere = await applicationCallsDuring(async () => {
      expect((await api.call('POST', '/v1/servers', { token, body: small })).status).toBe(201);
    });
    expect(elsewhere.creates).toBe(1);
    expect(elsewhere.creates + elsewhere.others).toBeLessThanOrEqual(2);
  });

  it('the catalog reads the same copies: no panel call once warm, and regions count our own placements at once', async () => {
    const { token } = await customer(api, 'catalog@example.com', { grantCents: 10_000 });
    const before = (await api.call('GET', '/v1/regions', { token })).body.data;
    const calls = await applicationCallsDuring(async () => {
      expect((await api.call('GET', '/v1/eggs', { token })).status).toBe(200);
      expect((await api.call('GET', `/v1/eggs/${instanceId}/1`, { token })).status).toBe(200);
      const deployed = await api.call('POST', '/v1/servers', { token, body: { ...small, ramMb: 2048 } });
      expect(deployed.status).toBe(201);
      const after = (await api.call('GET', '/v1/regions', { token })).body.data;
      const free = (data: { region: string; freeMemoryMb: number }[]) => data.find((r) => r.region === deployed.body.region)!.freeMemoryMb;
      expect(free(before) - free(after)).toBe(2048);
    });
    expect(calls).toEqual({ creates: 1, others: 0 });
  });

  it('a stale copy is refreshed by one reader; while another holds the refresh lease, the stale copy is served', async () => {
    const { token } = await customer(api, 'stale@example.com');
    await setAttributes(keys.panelTopology(instanceId), { freshUntil: 0, refreshingUntil: Date.now() + 15_000 });
    clearCatalogCache();
    const leased = await applicationCallsDuring(async () => {
      const res = await api.call('GET', '/v1/regions', { token });
      expect(res.body).toMatchObject({ unavailableInstances: [] });
      expect(res.body.data.length).toBeGreaterThan(0);
    });
    expect(leased).toEqual({ creates: 0, others: 0 });

    await setAttributes(keys.panelTopology(instanceId), { refreshingUntil: 0 });
    clearCatalogCache();
    const refreshed = await applicationCallsDuring(async () => {
      await Promise.all([1, 2, 3, 4, 5].map(() => api.call('GET', '/v1/regions', { token })));
    });
    // One refresh: locations, nodes, and the free allocations of each of the three nodes.
    expect(refreshed).toEqual({ creates: 0, others: 5 });
    const copy = await getRaw(keys.panelTopology(instanceId));
    expect(copy!.freshUntil).toBeGreaterThan(Date.now());
    expect(copy!.refreshingUntil).toBeUndefined();
  });

  it('concurrent large deploys never overfill a node: the copy reserves memory before each create', async () => {
    await refreshTopologyCopy();
    const big = { ...small, ramMb: 16384, cpuPercent: 400, diskMb: 20480 };
    const fits = panelNodes().reduce((n, node) => n + Math.floor((node.capacityMb - node.allocatedMb) / 16384), 0);
    const accounts = await Promise.all([1, 2, 3, 4].map((i) => customer(api, `big${i}@example.com`, { grantCents: 100_000 })));
    const deploys = Array.from({ length: fits + 4 }, (_, i) => accounts[i % 4]!);
    const results = await Promise.all(deploys.map(({ token }) => api.call('POST', '/v1/servers', { token, body: big })));
    expectOnly(results, ['201', '503 no_capacity']);
    expect(results.filter((r) => r.status === 201)).toHaveLength(fits);
    for (const node of panelNodes()) expect(node.allocatedMb).toBeLessThanOrEqual(node.capacityMb);
    // Free the nodes again for the tests below (the copy learns it at its next read).
    for (const [i, created] of results.entries()) {
      if (created.status !== 201) continue;
      expect((await api.call('DELETE', `/v1/servers/${created.body.id}`, { token: deploys[i]!.token })).status).toBe(200);
    }
  });

  it('20 concurrent deploys onto few free allocations: each 201 or 503 no_capacity, every created server on its own allocation', async () => {
    await refreshTopologyCopy(); // the copy holds every free allocation
    // Then most of them go (another tool took them): the copy offers allocations the panel refuses.
    const keep = 2;
    const removed = [1, 2, 3].flatMap((node) =>
      [...sim.state.allocations.values()].filter((a) => a.node_id === node && a.server_id === null).slice(keep),
    );
    for (const allocation of removed) sim.state.allocations.delete(allocation.id);
    try {
      const accounts = await Promise.all([1, 2, 3, 4].map((i) => customer(api, `few${i}@example.com`)));
      const serversBefore = panelServers().length;
      let results: ApiResponse[] = [];
      const calls = await applicationCallsDuring(async () => {
        results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => api.call('POST', '/v1/servers', { token: accounts[i % 4]!.token, body: small })),
        );
      });
      expectOnly(results, ['201', '503 no_capacity']);
      // Each refused create is a wasted Application call; a refusal makes the sets read before it be read again.
      expect(calls.creates + calls.others).toBeLessThan(2.5 * 20);
      const created = results.filter((r) => r.status === 201);
      expect(created).toHaveLength(3 * keep);
      const ours = panelServers().slice(serversBefore);
      expect(ours.map((s) => s.external_id).sort()).toEqual(created.map((r) => r.body.id).sort());
      expect(new Set(ours.map((s) => s.allocation_id)).size).toBe(ours.length);
      // The allocations the panel refused are gone from the copy.
      const copy = asKind((await getRaw(keys.panelTopology(instanceId)))!, 'panel-topology');
      const offered = Object.values(copy.freeAllocations).flatMap((set) => [...set]);
      expect(offered.filter((id) => removed.some((a) => a.id === id))).toEqual([]);
    } finally {
      for (const allocation of removed) sim.state.allocations.set(allocation.id, allocation);
      await refreshTopologyCopy(); // the copy marked the nodes full; the allocations are back
    }
  });
});

describe('eggs', () => {
  it('a create refused on a variable the copy did not know marks the eggs copy stale; the next deploy sends it', async () => {
    const { token } = await customer(api, 'eggs@example.com');
    const now = new Date();
    const id = sim.state.nextId('egg_variables');
    sim.state.eggVariables.set(id, {
      id,
      egg_id: 1,
      name: 'Difficulty',
      description: 'Added on the panel after the copy was read.',
      env_variable: 'DIFFICULTY',
      default_value: 'normal',
      user_viewable: true,
      user_editable: true,
      rules: 'required|string|in:peaceful,easy,normal,hard',
      created_at: now,
      updated_at: now,
    });
    try {
      const refused = await api.call('POST', '/v1/servers', { token, body: small });
      expectEnvelope(refused, 502, 'panel_error');
      expect(refused.body.error.details.fieldErrors.map((f: { field: string }) => f.field)).toContain('environment.DIFFICULTY');
      expect((await getRaw(keys.panelEggs(instanceId)))!.freshUntil).toBeLessThanOrEqual(Date.now());
      const retried = await api.call('POST', '/v1/servers', { token, body: small });
      expect(retried.status).toBe(201);
      expect(sim.server(retried.body.identifier)!.environment).toMatchObject({ DIFFICULTY: 'normal' });
    } finally {
      sim.state.eggVariables.delete(id);
    }
  });
});

describe('a panel that does not answer', () => {
  /** Deploys while the panel misbehaves: 503 panel_unavailable with Retry-After; nothing recorded, charged or created. */
  async function expectUnavailableDeploy(email: string): Promise<ApiResponse> {
    const { token, id } = await customer(api, email);
    const balance = (await api.call('GET', '/v1/account', { token })).body.balanceCents;
    const serversBefore = panelServers().length;
    const res = await api.call('POST', '/v1/servers', { token, body: small });
    sim.faults.clear();
    expectEnvelope(res, 503, 'panel_unavailable');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(res.body.error.details.instances.map((i: { instanceId: string }) => i.instanceId)).toEqual([instanceId]);
    expect((await api.call('GET', '/v1/servers', { token })).body.data).toEqual([]);
    expect((await api.call('GET', '/v1/account', { token })).body.balanceCents).toBe(balance);
    expect(await getRaw(keys.account(id))).toMatchObject({ serverCount: 0, burnCentsPerHour: 0 });
    expect(panelServers()).toHaveLength(serversBefore);
    return res;
  }

  it('down (503 to every call) during a deploy: 503 panel_unavailable, nothing recorded, charged or created', async () => {
    sim.faults.add({ path: '/api/', effect: { kind: 'status', status: 503 } });
    await expectUnavailableDeploy('down@example.com');
  });

  it('not answering at all (timeouts) during a deploy: the same', async () => {
    sim.faults.add({ path: '/api/', effect: { kind: 'timeout' } });
    await expectUnavailableDeploy('silent@example.com');
  });

  it('down with no copy at all: deploy is 503 panel_unavailable and regions list the instance as unavailable', async () => {
    // A copy of another panel URL counts as none.
    await setAttributes(keys.panelTopology(instanceId), { baseUrl: 'http://127.0.0.1:9' });
    await setAttributes(keys.panelEggs(instanceId), { baseUrl: 'http://127.0.0.1:9' });
    clearCatalogCache();
    sim.faults.add({ path: '/api/', effect: { kind: 'status', status: 503 } });
    const regions = await api.call('GET', '/v1/regions');
    expect(regions.body).toEqual({ data: [], unavailableInstances: [instanceId] });
    await expectUnavailableDeploy('cold@example.com');
  });

  // Last: a 429 pauses every call to this panel for its Retry-After (shared/instances/call-budget.ts).
  it('rate limiting (429, Retry-After 60) during a deploy: 503 panel_unavailable with Retry-After 60', async () => {
    const { token } = await customer(api, 'warm-again@example.com');
    expect((await api.call('POST', '/v1/servers', { token, body: small })).status).toBe(201); // copies warm again
    sim.faults.add({ path: '/api/application/', effect: { kind: 'rate_limit', retryAfter: 60 } });
    const res = await expectUnavailableDeploy('limited@example.com');
    expect(res.headers.get('retry-after')).toBe('60');
  });
});
