import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { getRaw } from '../helpers/db.ts';
import { keys } from '../../shared/db/keys.ts';
import { customer } from '../helpers/customer.ts';
import { WINGS_DOWN_RETRY_S } from '../../shared/servers/delete.ts';

/**
 * What a real panel does that its UI does not say, against the simulator over HTTP: a delete
 * while the server's node (Wings) is down, and a server deleted by hand on the panel. (The `-1`
 * overallocation rule is table-tested in tests/unit/placement.test.ts.)
 */
let api: TestApi;
let sim: PanelSim;
beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0 } });
  sim = api.panel!.sim;
});
afterAll(async () => api?.stop());
afterEach(() => sim.faults.clear());

const FUNDED = { grantCents: 10_000, grantBy: 'admin' } as const;
const body = { name: 'facts', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 };
const appHeaders = () => ({ authorization: `Bearer ${sim.appKey}`, accept: 'application/json' });

describe('delete while Wings is down', () => {
  it('answers 503 panel_unavailable with Retry-After after one panel call; the server stays live and billed', async () => {
    const { token, id } = await customer(api, 'wings-down@example.com', FUNDED);
    const server = (await api.call('POST', '/v1/servers', { token, body })).body;
    const panelId = sim.server(server.identifier)!.id;
    // The panel's non-forced delete when it cannot reach Wings: 504 DaemonConnectionException
    // (the simulator's default body for a 504), the server kept. The forced route is not faulted.
    const fault = sim.faults.add({
      method: 'DELETE',
      path: new RegExp(`^/api/application/servers/${panelId}$`),
      effect: { kind: 'status', status: 504 },
    });

    const refused = await api.call('DELETE', `/v1/servers/${server.id}`, { token });
    expect(refused.status, refused.text).toBe(503);
    expect(refused.body.error.code).toBe('panel_unavailable');
    expect(refused.headers.get('retry-after')).toBe(String(WINGS_DOWN_RETRY_S));
    expect(refused.body.error.details).toMatchObject({ retryAfterSeconds: WINGS_DOWN_RETRY_S, panelStatus: 504 });
    // One panel call: the panel already waited on Wings, asking again at once only spends budget.
    expect(sim.faults.list().find((f) => f.id === fault)?.hits).toBe(1);

    // Nothing changed: on the panel, live in our records, still counted and billed.
    expect(sim.server(server.identifier)).toBeDefined();
    expect((await api.call('GET', `/v1/servers/${server.id}`, { token })).body.status).toBe('active');
    expect(await getRaw(keys.account(id))).toMatchObject({ serverCount: 1 });

    // Wings back: the same delete goes through.
    sim.faults.clear();
    const deleted = await api.call('DELETE', `/v1/servers/${server.id}`, { token });
    expect(deleted.status, deleted.text).toBe(200);
    expect(sim.server(server.identifier)).toBeUndefined();
    expect(await getRaw(keys.account(id))).toMatchObject({ serverCount: 0, burnCentsPerHour: 0 });
  });

  it('a 504 that is not Wings (a gateway timeout) stays panel_timeout: the delete may have happened', async () => {
    const { token } = await customer(api, 'gateway@example.com', FUNDED);
    const server = (await api.call('POST', '/v1/servers', { token, body })).body;
    sim.faults.add({
      method: 'DELETE',
      path: '/api/application/servers/',
      count: 3,
      effect: { kind: 'status', status: 504, code: 'HttpException', detail: 'Gateway Timeout' },
    });
    const res = await api.call('DELETE', `/v1/servers/${server.id}`, { token });
    expect(res.status, res.text).toBe(504);
    expect(res.body.error.code).toBe('panel_timeout');
    sim.faults.clear();
    expect((await api.call('DELETE', `/v1/servers/${server.id}`, { token })).status).toBe(200);
  });
});

describe('a server deleted by hand on the panel', () => {
  it('is closed by one reconciler pass, young or not; then its instance can be deleted', async () => {
    const { token, id } = await customer(api, 'by-hand@example.com', FUNDED);
    const server = (await api.call('POST', '/v1/servers', { token, body })).body;
    const instanceId = server.instanceId as string;
    const hosted = Number((await getRaw(keys.instance(instanceId)))?.serverCount);
    expect(hosted).toBeGreaterThanOrEqual(1);
    // An operator deletes it in the panel (the non-forced route, Wings up), minutes after the deploy.
    const byHand = await fetch(`${sim.url}/api/application/servers/${sim.server(server.identifier)!.id}`, {
      method: 'DELETE',
      headers: appHeaders(),
    });
    expect(byHand.status).toBe(204);

    const report = (await api.call('POST', '/dev/reconcile', { token: null })).body;
    expect(report).toMatchObject({ recordsClosed: 1, errors: 0 });
    const read = (await api.call('GET', `/v1/servers/${server.id}`, { token })).body;
    expect(read.status).toBe('deleted');
    expect(await getRaw(keys.account(id))).toMatchObject({ serverCount: 0, burnCentsPerHour: 0 });
    expect((await getRaw(keys.instance(instanceId)))?.serverCount).toBe(hosted - 1);

    const removed = await api.call('DELETE', `/v1/admin/instances/${instanceId}`);
    expect(removed.status, removed.text).toBe(200);
    expect(removed.body).toEqual({ id: instanceId, deleted: true });
  });
});
