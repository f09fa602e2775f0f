import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_APP_KEY, type PanelSim } from '../../dev/panel-sim/index.ts';
import { clientAllocationsOf } from '../../dev/panel-sim/network.ts';
import { customer } from '../helpers/customer.ts';
import { panelCalls as panelCallsOf, totalRequests } from '../helpers/panel-requests.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * Extra ports (shared/servers/network.ts) against the simulator's Application build change and
 * Client API network routes (dev/panel-sim/network.ts), with the panel as operators leave it
 * (client allocations off): the limit (`feature_limits.allocations`, the primary included) is
 * raised as an operator would, by the Application API build PATCH; an add costs two panel calls,
 * the others one; the server view's `addresses` and `address` follow; concurrent adds never share
 * an allocation nor pass the limit.
 */
let api: TestApi;
let sim: PanelSim;
let token: string;
let other: string;

const panelCalls = <T>(fn: () => Promise<T>) => panelCallsOf(sim, fn);

async function deploy(name: string): Promise<{ id: string; identifier: string }> {
  const created = await api.call('POST', '/v1/servers', { token, body: { name, eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 } });
  expect(created.status, created.text).toBe(201);
  const { id, identifier } = created.body;
  await until(async () => (await api.call('GET', `/v1/servers/${id}`, { token })).body.live?.installStatus === 'installed');
  return { id, identifier };
}

const simServer = (identifier: string) => sim.state.serverByIdentifier(identifier)!;

/** The operator raises the server's allocation limit on the panel (Application API, as the add-ons part will). */
async function setAllocationLimit(identifier: string, allocations: number): Promise<void> {
  const s = simServer(identifier);
  const res = await fetch(`${sim.url}/api/application/servers/${s.id}/build`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${DEFAULT_APP_KEY}`, accept: 'application/json', 'content-type': 'application/json' },
    body: JSON.stringify({
      allocation: s.allocation_id,
      limits: { memory: s.memory, swap: s.swap, disk: s.disk, io: s.io, cpu: s.cpu },
      feature_limits: { databases: s.database_limit, backups: s.backup_limit, allocations },
    }),
  });
  expect(res.status, await res.text()).toBe(200);
}

const activity = async (action: string) => {
  const res = await api.call('GET', '/v1/account/logs?limit=100', { token });
  return (res.body.data as Array<{ action: string; target: string; result: string; details?: Record<string, unknown> }>).filter(
    (e) => e.action === action,
  );
};

beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 200, transitionMs: 20, resourcesCacheMs: 0 } });
  sim = api.panel!.sim;
  ({ token } = await customer(api, 'server-network@example.com', { grantCents: 10_000 }));
  ({ token: other } = await customer(api, 'server-network-other@example.com', { grantCents: 1_000 }));
});
afterAll(async () => {
  await api?.stop();
});

describe('one server: list, add within the limit, note, primary, remove', () => {
  let server: { id: string; identifier: string };
  let primaryId: number;
  let addedId: number;
  const path = (p = '') => `/v1/servers/${server.id}/allocations${p}`;

  it('the list shows the primary alone and the limit (1 at deploy): one panel call', async () => {
    server = await deploy('network one');
    expect(clientAllocationsOf(sim.state).enabled).toBe(false);
    const { result: res, calls } = await panelCalls(() => api.call('GET', path(), { token }));
    expect(res.status, res.text).toBe(200);
    expect(totalRequests(calls)).toBe(1);
    expect(res.body.limit).toBe(1);
    expect(res.body.data).toHaveLength(1);
    primaryId = simServer(server.identifier).allocation_id;
    expect(res.body.data[0]).toMatchObject({ id: primaryId, primary: true, notes: null });
    const view = (await api.call('GET', `/v1/servers/${server.id}`, { token })).body;
    expect(view.addresses).toHaveLength(1);
    expect(view.addresses[0]).toMatchObject({ id: primaryId, primary: true, port: view.address.port });
  });

  it('an add at the limit is 422 limit_exceeded after one read, nothing assigned', async () => {
    const { result: res, calls } = await panelCalls(() => api.call('POST', path(), { token, body: {} }));
    expectEnvelope(res, 422, 'limit_exceeded');
    expect(res.body.error.details).toMatchObject({ limit: 1, held: 1 });
    expect(totalRequests(calls)).toBe(1);
    expect(sim.state.allocationsOfServer(simServer(server.identifier).id)).toHaveLength(1);
  });

  it('with the limit raised to 2 by the operator, an add takes a free port of the node: two panel calls', async () => {
    await setAllocationLimit(server.identifier, 2);
    const { result: res, calls } = await panelCalls(() => api.call('POST', path(), { token, body: {} }));
    expect(res.status, res.text).toBe(201);
    const s = simServer(server.identifier);
    expect(calls).toEqual({ [`GET /api/application/servers/${s.id}`]: 1, [`PATCH /api/application/servers/${s.id}/build`]: 1 });
    addedId = res.body.id;
    expect(res.body).toMatchObject({ primary: false, notes: null });
    const onPanel = sim.state.allocations.get(addedId)!;
    expect(onPanel.server_id).toBe(s.id);
    expect(onPanel.node_id).toBe(s.node_id);
    expect(res.body.port).toBe(onPanel.port);
    // The build sent back unchanged: the limits and the other feature limits stay.
    expect(s.allocation_limit).toBe(2);
    expect(s.memory).toBe(1024);
    expect(s.allocation_id).toBe(primaryId);
    const [entry] = await activity('servers.network.add');
    expect(entry).toMatchObject({
      target: `server:${server.id}`,
      result: 'success',
      details: { allocationId: addedId, port: onPanel.port },
    });
  });

  it('the server view lists both addresses, the primary first; address stays the primary', async () => {
    const view = (await api.call('GET', `/v1/servers/${server.id}`, { token })).body;
    expect(view.addresses.map((a: { id: number }) => a.id)).toEqual([primaryId, addedId]);
    expect(view.address.port).toBe(sim.state.allocations.get(primaryId)!.port);
    expect(view.ports.map((p: { port: number }) => p.port)).toEqual([sim.state.allocations.get(addedId)!.port]);
    const list = (await api.call('GET', path(), { token })).body;
    expect(list.data.map((a: { id: number; primary: boolean }) => [a.id, a.primary])).toEqual([
      [primaryId, true],
      [addedId, false],
    ]);
  });

  it('a third add passes the limit of 2: 422', async () => {
    expectEnvelope(await api.call('POST', path(), { token, body: {} }), 422, 'limit_exceeded');
  });

  it('a note (max 255) is set with one panel call and shown in the list', async () => {
    const { result: res, calls } = await panelCalls(() => api.call('PATCH', path(`/${addedId}`), { token, body: { notes: 'voice chat' } }));
    expect(res.status, res.text).toBe(200);
    expect(calls).toEqual({ [`POST /api/client/servers/${server.identifier}/network/allocations/${addedId}`]: 1 });
    expect(res.body).toMatchObject({ id: addedId, notes: 'voice chat', primary: false });
    expect(sim.state.allocations.get(addedId)!.notes).toBe('voice chat');
    const view = (await api.call('GET', `/v1/servers/${server.id}`, { token })).body;
    expect(view.addresses[1].notes).toBe('voice chat');
    expectEnvelope(await api.call('PATCH', path(`/${addedId}`), { token, body: { notes: 'x'.repeat(256) } }), 400, 'validation_failed');
    expectEnvelope(await api.call('PATCH', path(`/${addedId}`), { token, body: {} }), 400, 'validation_failed');
  });

  it('removing the primary is 409 with no panel call', async () => {
    const { result: res, calls } = await panelCalls(() => api.call('DELETE', path(`/${primaryId}`), { token }));
    expectEnvelope(res, 409, 'conflict');
    expect(totalRequests(calls)).toBe(0);
  });

  it('making the added one primary moves address (one panel call); SFTP stays', async () => {
    const before = (await api.call('GET', `/v1/servers/${server.id}`, { token })).body;
    const { result: res, calls } = await panelCalls(() => api.call('PATCH', path(`/${addedId}`), { token, body: { primary: true } }));
    expect(res.status, res.text).toBe(200);
    expect(calls).toEqual({ [`POST /api/client/servers/${server.identifier}/network/allocations/${addedId}/primary`]: 1 });
    expect(simServer(server.identifier).allocation_id).toBe(addedId);
    const view = (await api.call('GET', `/v1/servers/${server.id}`, { token })).body;
    expect(view.address.port).toBe(sim.state.allocations.get(addedId)!.port);
    expect(view.addresses.map((a: { id: number }) => a.id)).toEqual([addedId, primaryId]);
    expect(view.addresses[0]).toMatchObject({ primary: true, notes: 'voice chat' });
    expect(view.sftp).toEqual(before.sftp);
  });

  it('the old primary is removed: one panel call, freed on the panel, gone from the view', async () => {
    const { result: res, calls } = await panelCalls(() => api.call('DELETE', path(`/${primaryId}`), { token }));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ id: primaryId, deleted: true });
    expect(calls).toEqual({ [`DELETE /api/client/servers/${server.identifier}/network/allocations/${primaryId}`]: 1 });
    expect(sim.state.allocations.get(primaryId)!.server_id).toBeNull();
    const view = (await api.call('GET', `/v1/servers/${server.id}`, { token })).body;
    expect(view.addresses.map((a: { id: number }) => a.id)).toEqual([addedId]);
    expect(view.ports).toEqual([]);
  });

  it('an allocation of another server is 404; another account cannot see the list', async () => {
    const taken = [...sim.state.allocations.values()].find((a) => a.server_id !== null && a.server_id !== simServer(server.identifier).id);
    if (taken) expectEnvelope(await api.call('DELETE', path(`/${taken.id}`), { token }), 404, 'not_found');
    expectEnvelope(await api.call('PATCH', path('/999999'), { token, body: { notes: 'x' } }), 404, 'not_found');
    expectEnvelope(await api.call('GET', path(), { token: other }), 404, 'not_found');
    expectEnvelope(await api.call('POST', path(), { token: other, body: {} }), 404, 'not_found');
  });
});

describe('a server whose ports never changed through us', () => {
  it('a note on its primary reads its list once (two panel calls), then the view shows the note', async () => {
    const server = await deploy('network note');
    const primaryId = simServer(server.identifier).allocation_id;
    const N = `/api/client/servers/${server.identifier}/network/allocations`;
    const { result: res, calls } = await panelCalls(() =>
      api.call('PATCH', `/v1/servers/${server.id}/allocations/${primaryId}`, { token, body: { notes: 'game' } }),
    );
    expect(res.status, res.text).toBe(200);
    expect(calls).toEqual({ [`POST ${N}/${primaryId}`]: 1, [`GET ${N}`]: 1 });
    expect(res.body).toMatchObject({ id: primaryId, primary: true, notes: 'game' });
    const view = (await api.call('GET', `/v1/servers/${server.id}`, { token })).body;
    expect(view.addresses).toEqual([expect.objectContaining({ id: primaryId, primary: true, notes: 'game', port: view.address.port })]);
    // Making the primary primary again: one call, nothing moves.
    const again = await panelCalls(() =>
      api.call('PATCH', `/v1/servers/${server.id}/allocations/${primaryId}`, { token, body: { primary: true } }),
    );
    expect(again.result.status).toBe(200);
    expect(totalRequests(again.calls)).toBe(1);
  });
});

describe('the copy lags behind the panel', () => {
  it('an allocation taken on the panel meanwhile is skipped by the panel: the node is read again and another taken', async () => {
    const server = await deploy('network lag');
    await setAllocationLimit(server.identifier, 2);
    const s = simServer(server.identifier);
    // Every free allocation the copy knows is taken behind our back; one new one is created on the panel.
    const taken = sim.state.allocationsOfNode(s.node_id).filter((a) => a.server_id === null);
    for (const a of taken) a.server_id = 424_242;
    const fresh = {
      id: sim.state.nextId('allocations'),
      node_id: s.node_id,
      ip: taken[0]!.ip,
      ip_alias: null,
      port: 30_001,
      server_id: null,
      notes: null,
    };
    sim.state.allocations.set(fresh.id, fresh);
    try {
      const { result: res, calls } = await panelCalls(() => api.call('POST', `/v1/servers/${server.id}/allocations`, { token, body: {} }));
      expect(res.status, res.text).toBe(201);
      expect(res.body).toMatchObject({ id: fresh.id, port: 30_001 });
      expect(fresh.server_id).toBe(s.id);
      // The read, the skipped change, the node's listing, the change that took.
      expect(calls[`PATCH /api/application/servers/${s.id}/build`]).toBe(2);
      expect(totalRequests(calls)).toBe(4);
    } finally {
      for (const a of taken) if (a.server_id === 424_242) a.server_id = null;
    }
  });
});

describe('concurrent adds', () => {
  it('two servers adding at once never take the same allocation; one server never passes its limit', async () => {
    // An account of its own: the earlier tests' install polling (longer on a loaded machine) may have
    // spent the first account's fair share of the panel's reads for this minute (a 503 by design).
    ({ token } = await customer(api, 'server-network-burst@example.com', { grantCents: 10_000 }));
    const a = await deploy('network two');
    const b = await deploy('network three');
    await setAllocationLimit(a.identifier, 3);
    await setAllocationLimit(b.identifier, 3);
    const add = (id: string) => api.call('POST', `/v1/servers/${id}/allocations`, { token, body: {} });
    const across = await Promise.all([add(a.id), add(b.id), add(a.id), add(b.id), add(a.id), add(b.id)]);
    for (const res of across) expect([201, 409, 422], res.text).toContain(res.status);
    for (const s of [a, b]) expect(sim.state.allocationsOfServer(simServer(s.identifier).id).length).toBeLessThanOrEqual(3);
    // Fill both up serially: each ends at exactly its limit, never above.
    for (const s of [a, b]) {
      while (sim.state.allocationsOfServer(simServer(s.identifier).id).length < 3) expect((await add(s.id)).status).toBe(201);
      expectEnvelope(await add(s.id), 422, 'limit_exceeded');
      const ids = (await api.call('GET', `/v1/servers/${s.id}`, { token })).body.addresses.map((x: { id: number }) => x.id);
      expect(ids).toHaveLength(3);
    }
    const all = [
      ...sim.state.allocationsOfServer(simServer(a.identifier).id),
      ...sim.state.allocationsOfServer(simServer(b.identifier).id),
    ];
    expect(new Set(all.map((x) => x.id)).size).toBe(6);
  });
});
