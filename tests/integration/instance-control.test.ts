import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { startPanelSim, type PanelSim } from '../../dev/panel-sim/index.ts';
import { queryPartition } from '../helpers/db.ts';
import { keys } from '../../shared/db/keys.ts';
import { until } from '../helpers/until.ts';

/**
 * `controlAvailable` reflects the last instance test (shared/instances): a client key the panel
 * refuses says false after the test, a good one true, and a change of keys clears the result. The
 * simulator accepts only the keys it issued (401 otherwise) and refuses an application key on the
 * Client API (403).
 */
let api: TestApi;
let sim: PanelSim;
let userToken: string;
let instanceId: string;
const unknownClientKey = `ptlc_${'u'.repeat(43)}`;

beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 100, transitionMs: 20, resourcesCacheMs: 0 } });
  sim = await startPanelSim({ installMs: 100, appKey: `ptla_${'e'.repeat(43)}`, clientKey: `ptlc_${'f'.repeat(43)}` });
  userToken = await api.session('control@example.com');
});
afterAll(async () => {
  await sim?.close();
  await api?.stop();
});

const adminView = async () =>
  (await api.call('GET', '/v1/admin/instances')).body.data.find((i: { id: string }) => i.id === instanceId) as {
    controlAvailable: boolean;
    lastTest: { at: string; ok: boolean; clientKey: string; message: string } | null;
    serviceUserId: number | null;
  };
const catalogFlag = async () =>
  (await api.call('GET', '/v1/instances', { token: userToken })).body.data.find((i: { id: string }) => i.id === instanceId)
    ?.controlAvailable as boolean;
const runTest = () => api.call('POST', `/v1/admin/instances/${instanceId}/test`);
const patch = (body: Record<string, unknown>) => api.call('PATCH', `/v1/admin/instances/${instanceId}`, { body });

describe('controlAvailable follows the last instance test', () => {
  it('is false right after registration: no test has run', async () => {
    const res = await api.call('POST', '/v1/admin/instances', {
      body: { name: 'Refusing panel', baseUrl: sim.url, appApiKey: sim.appKey, clientApiKey: unknownClientKey },
    });
    expect(res.status).toBe(201);
    instanceId = res.body.id;
    expect(res.body).toMatchObject({ hasClientKey: true, controlAvailable: false, lastTest: null });
    expect(await catalogFlag()).toBe(false);
  });

  it('a client key the panel refuses: the test records `refused`, the flag stays false, the key is nowhere', async () => {
    const before = Date.now();
    const report = await runTest();
    expect(report.status).toBe(200);
    expect(report.body.ok).toBe(false);
    expect(report.body.lastTest).toMatchObject({ ok: false, clientKey: 'refused' });
    expect(report.body.lastTest.message).toMatch(/client_api/);
    const view = await adminView();
    expect(view.controlAvailable).toBe(false);
    expect(view.lastTest).toEqual(report.body.lastTest);
    expect(Date.parse(view.lastTest!.at)).toBeGreaterThanOrEqual(before - 5);
    expect(await catalogFlag()).toBe(false);
    const stored = JSON.stringify(await queryPartition({ PK: keys.instancesPartition() }));
    expect(stored).not.toContain(unknownClientKey);
    expect(report.text).not.toContain(unknownClientKey);
    const logs = await api.call('GET', '/v1/admin/logs?limit=100');
    expect(logs.text).not.toContain(unknownClientKey);
    const entry = logs.body.data.find(
      (e: { target: string; details?: { clientKey?: string } }) => e.target === `instance:${instanceId}` && e.details?.clientKey,
    );
    expect(entry.details.clientKey).toBe('refused');
  });

  it('an application key given as the client key is refused too (403 on the Client API)', async () => {
    await patch({ clientApiKey: sim.appKey });
    const report = await runTest();
    expect(report.body.lastTest).toMatchObject({ ok: false, clientKey: 'refused' });
    expect((await adminView()).controlAvailable).toBe(false);
  });

  it('new keys clear the result; a test with a good client key makes the flag true', async () => {
    const changed = await patch({ clientApiKey: sim.clientKey });
    expect(changed.body).toMatchObject({ controlAvailable: false, lastTest: null, serviceUserId: null });
    expect(await catalogFlag()).toBe(false);
    const report = await runTest();
    expect(report.body.ok).toBe(true);
    expect(report.body.lastTest).toMatchObject({ ok: true, clientKey: 'ok' });
    const view = await adminView();
    expect(view).toMatchObject({ controlAvailable: true, serviceUserId: sim.serviceUserId, lastTest: report.body.lastTest });
    expect(await catalogFlag()).toBe(true);
  });

  it('a change of name or priority keeps the result; a change of either key clears it; the same URL again keeps it', async () => {
    await patch({ name: 'Good panel', priority: 20 });
    expect((await adminView()).controlAvailable).toBe(true);

    await patch({ appApiKey: sim.appKey });
    expect(await adminView()).toMatchObject({ controlAvailable: false, lastTest: null });
    expect(await catalogFlag()).toBe(false);
    await runTest();
    expect(await catalogFlag()).toBe(true);

    await patch({ baseUrl: `${sim.url}/` }); // the same URL once normalised: nothing changes
    expect((await adminView()).controlAvailable).toBe(true);
  });

  it('a panel that does not answer the client check: `unreachable`, the flag is false until a test passes again', async () => {
    sim.faults.add({ method: 'GET', path: '/api/client/account', count: 10, effect: { kind: 'status', status: 503 } });
    try {
      const report = await runTest();
      expect(report.body.lastTest).toMatchObject({ ok: false, clientKey: 'unreachable' });
      expect(await catalogFlag()).toBe(false);
    } finally {
      sim.faults.clear();
    }
    await runTest();
    expect(await catalogFlag()).toBe(true);
  });

  it('keys changed while a test runs: its result is not kept', async () => {
    // The test's client check waits on the panel until the keys have changed (held, not a race with a latency).
    sim.faults.add({ method: 'GET', path: '/api/client/account', count: 1, effect: { kind: 'hold' } });
    try {
      const running = runTest();
      await until(() => sim.faults.held() === 1, { what: 'the client check reaching the panel' });
      expect((await patch({ clientApiKey: unknownClientKey })).body.lastTest).toBeNull();
      expect(sim.faults.release()).toBe(1);
      const report = await running;
      expect(report.status).toBe(200);
      expect(report.body.lastTest).toBeNull();
      expect(await adminView()).toMatchObject({ controlAvailable: false, lastTest: null });
    } finally {
      sim.faults.clear();
    }
  });

  it('no client key: the test records `missing`, the flag is false', async () => {
    await patch({ clientApiKey: null });
    const report = await runTest();
    expect(report.body.lastTest).toMatchObject({ clientKey: 'missing' });
    expect(await adminView()).toMatchObject({ controlAvailable: false, lastTest: { clientKey: 'missing' } });
    expect(await catalogFlag()).toBe(false);
  });
});
