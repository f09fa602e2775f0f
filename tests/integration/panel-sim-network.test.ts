import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SEED_IDS, startPanelSim, type PanelSim } from '../../dev/panel-sim/index.ts';
import { clientAllocationsOf } from '../../dev/panel-sim/network.ts';
import { waitFor } from '../helpers/until.ts';

/**
 * The simulator's network routes hold the panel's rules (pterodactyl/panel
 * NetworkAllocationController, FindAssignableAllocationService, Allocation::$validationRules,
 * BuildModificationService::processAllocations), over HTTP as the control plane calls them.
 */
let sim: PanelSim;

async function call(key: string, method: string, path: string, body?: unknown) {
  const r = await fetch(`${sim.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      accept: 'application/json',
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.text();
  return { status: r.status, text, json: text ? JSON.parse(text) : null };
}
const app = (method: string, path: string, body?: unknown) => call(sim.appKey, method, `/api/application${path}`, body);
const client = (method: string, path: string, body?: unknown) => call(sim.clientKey, method, `/api/client${path}`, body);

let server: { id: number; identifier: string };
const N = () => `/servers/${server.identifier}/network/allocations`;
const s = () => sim.state.servers.get(server.id)!;

async function build(changes: { allocations?: number; add?: number[]; remove?: number[]; allocation?: number }, query = '') {
  return app('PATCH', `/servers/${server.id}/build${query}`, {
    allocation: changes.allocation ?? s().allocation_id,
    limits: { memory: 1024, swap: 0, disk: 2048, io: 500, cpu: 100 },
    feature_limits: { databases: 0, backups: 0, allocations: changes.allocations ?? s().allocation_limit },
    ...(changes.add ? { add_allocations: changes.add } : {}),
    ...(changes.remove ? { remove_allocations: changes.remove } : {}),
  });
}

beforeAll(async () => {
  sim = await startPanelSim({ installMs: 50, transitionMs: 20 });
  const free = await app('GET', '/nodes/1/allocations?filter[server_id]=false&per_page=1');
  const account = await client('GET', '/account');
  const created = await app('POST', '/servers', {
    name: 'net',
    user: account.json.attributes.id,
    egg: SEED_IDS.eggs.paper,
    docker_image: 'ghcr.io/pterodactyl/yolks:java_21',
    startup: 'java -jar {{SERVER_JARFILE}}',
    environment: { MINECRAFT_VERSION: 'latest', SERVER_JARFILE: 'server.jar', BUILD_NUMBER: 'latest', DL_PATH: '' },
    limits: { memory: 1024, swap: 0, disk: 2048, io: 500, cpu: 100 },
    feature_limits: { databases: 0, allocations: 1, backups: 0 },
    allocation: { default: free.json.data[0].attributes.id },
  });
  expect(created.status, created.text).toBe(201);
  server = { id: created.json.attributes.id, identifier: created.json.attributes.identifier };
  await waitFor(
    () => sim.server(server.id)?.status,
    (st) => st === null,
  );
});
afterAll(async () => {
  await sim?.close();
});

describe('Client API network allocations', () => {
  it('index lists the primary with is_default', async () => {
    const r = await client('GET', N());
    expect(r.status).toBe(200);
    expect(r.json.data).toHaveLength(1);
    expect(r.json.data[0]).toMatchObject({ object: 'allocation', attributes: { id: s().allocation_id, is_default: true, notes: null } });
  });

  it('store: the limit first (400), then the feature switch (off by default: 400), then a free one on the primary IP', async () => {
    const atLimit = await client('POST', N());
    expect(atLimit.status).toBe(400);
    expect(atLimit.json.errors[0].detail).toMatch(/limit has been reached/);
    expect((await build({ allocations: 3 })).status).toBe(200);
    const off = await client('POST', N());
    expect(off.status).toBe(400);
    expect(off.json.errors[0].code).toBe('AutoAllocationNotEnabledException');
    clientAllocationsOf(sim.state).enabled = true;
    try {
      const on = await client('POST', N());
      expect(on.status, on.text).toBe(200);
      const primary = sim.state.allocations.get(s().allocation_id)!;
      expect(on.json.attributes).toMatchObject({ ip: primary.ip, is_default: false });
      expect(sim.state.allocations.get(on.json.attributes.id)!.server_id).toBe(server.id);
    } finally {
      clientAllocationsOf(sim.state).enabled = false;
    }
  });

  it('update: notes must be present, at most 256 characters; null clears', async () => {
    const other = sim.state.allocationsOfServer(server.id).find((a) => a.id !== s().allocation_id)!;
    expect((await client('POST', `${N()}/${other.id}`, {})).status).toBe(422);
    expect((await client('POST', `${N()}/${other.id}`, { notes: 'x'.repeat(257) })).status).toBe(422);
    const set = await client('POST', `${N()}/${other.id}`, { notes: 'x'.repeat(256) });
    expect(set.status, set.text).toBe(200);
    expect(set.json.attributes.notes).toHaveLength(256);
    expect((await client('POST', `${N()}/${other.id}`, { notes: null })).json.attributes.notes).toBeNull();
  });

  it('primary moves is_default; delete refuses the primary, frees another (204); unknown or foreign ids are 404', async () => {
    const first = s().allocation_id;
    const other = sim.state.allocationsOfServer(server.id).find((a) => a.id !== first)!;
    const made = await client('POST', `${N()}/${other.id}/primary`);
    expect(made.status).toBe(200);
    expect(made.json.attributes.is_default).toBe(true);
    expect(s().allocation_id).toBe(other.id);
    const refused = await client('DELETE', `${N()}/${other.id}`);
    expect(refused.status).toBe(400);
    expect(refused.json.errors[0].detail).toMatch(/primary allocation/);
    expect((await client('DELETE', `${N()}/${first}`)).status).toBe(204);
    expect(sim.state.allocations.get(first)).toMatchObject({ server_id: null, notes: null });
    expect((await client('DELETE', `${N()}/${first}`)).status).toBe(404);
    expect((await client('POST', `${N()}/999999/primary`)).status).toBe(404);
  });

  it('delete with no allocation limit set (0) is refused', async () => {
    const free = sim.state.allocationsOfNode(s().node_id).find((a) => a.server_id === null)!;
    expect((await build({ allocations: 2, add: [free.id] })).status).toBe(200);
    expect((await build({ allocations: 0 })).status).toBe(200);
    const r = await client('DELETE', `${N()}/${free.id}`);
    expect(r.status).toBe(400);
    expect(r.json.errors[0].detail).toMatch(/no allocation limit is set/);
  });
});

describe('Application API build change with allocations', () => {
  it('answers the allocations on include; an added one already assigned is skipped silently', async () => {
    const mine = sim.state.allocationsOfServer(server.id).map((a) => a.id);
    const assigned = [...sim.state.allocations.values()].find((a) => a.server_id !== null && a.server_id !== server.id);
    const free = sim.state.allocationsOfNode(s().node_id).find((a) => a.server_id === null)!;
    const add = [free.id, ...(assigned ? [assigned.id] : [])];
    const r = await build({ allocations: 5, add }, '?include=allocations');
    expect(r.status, r.text).toBe(200);
    const ids = r.json.attributes.relationships.allocations.data.map((d: { attributes: { id: number } }) => d.attributes.id);
    expect(ids.sort()).toEqual([...mine, free.id].sort());
    expect(r.json.attributes.feature_limits.allocations).toBe(5);
  });
});
