import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, expectEnvelope, type TestApi } from '../helpers/stack.ts';
import { startPanelSim, type PanelSim } from '../../dev/panel-sim/index.ts';
import { queryPartition, setAttributes } from '../helpers/db.ts';
import { keys } from '../../shared/db/keys.ts';
import { secretStore } from '../../shared/secrets/index.ts';

/**
 * Instances (admin) and the catalog through the API, against two panel simulators over HTTP:
 * the one the local stack registers, and a second one an admin registers with its keys.
 */
let api: TestApi;
let second: PanelSim;
let userToken: string;
beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 100, transitionMs: 20, resourcesCacheMs: 0 } });
  second = await startPanelSim({ installMs: 100, appKey: `ptla_${'b'.repeat(43)}`, clientKey: `ptlc_${'c'.repeat(43)}` });
  userToken = await api.session('customer@example.com');
});
afterAll(async () => {
  await second?.close();
  await api?.stop();
});

const register = (body: Record<string, unknown>) => api.call('POST', '/v1/admin/instances', { body });

describe('registering a panel', () => {
  let instanceId: string;

  it('stores the keys in the secret store, never in the table or a response', async () => {
    const res = await register({
      name: 'Second panel',
      baseUrl: `${second.url}/`,
      appApiKey: second.appKey,
      clientApiKey: second.clientKey,
      priority: 50,
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: 'Second panel',
      baseUrl: second.url,
      priority: 50,
      enabled: true,
      hasClientKey: true,
      serviceUserId: null,
      wingsOrigin: null,
      serverCount: 0,
    });
    instanceId = res.body.id;
    expect(res.text).not.toContain(second.appKey);
    expect(res.text).not.toContain(second.clientKey);
    const table = JSON.stringify(await queryPartition({ PK: keys.instancesPartition() }));
    expect(table).not.toContain(second.appKey);
    expect(table).not.toContain(second.clientKey);
    expect(await secretStore().get(instanceId)).toEqual({ appApiKey: second.appKey, clientApiKey: second.clientKey });
    const listed = await api.call('GET', '/v1/admin/instances');
    expect(listed.text).not.toContain(second.appKey);
    expect(listed.body.data.map((i: { id: string }) => i.id)).toContain(instanceId);
    const logs = await api.call('GET', '/v1/admin/logs?limit=100');
    expect(logs.text).not.toContain(second.appKey);
  });

  it('the test lists nodes with their region tags and caches the service user', async () => {
    const res = await api.call('POST', `/v1/admin/instances/${instanceId}/test`);
    expect(res.status).toBe(200);
    expect(res.body.ok).toBe(true);
    expect(res.body.nodes.map((n: { name: string; region: string }) => `${n.name}@${n.region}`).sort()).toEqual([
      'fra-1@eu-central',
      'fra-2@eu-central',
      'nyc-1@us-east',
    ]);
    expect(res.body.serviceUser).toMatchObject({ id: second.serviceUserId, username: 'control-plane', admin: false });
    const instance = (await api.call('GET', '/v1/admin/instances')).body.data.find((i: { id: string }) => i.id === instanceId);
    expect(instance.serviceUserId).toBe(second.serviceUserId);
    expect(res.body.warnings).toEqual([]);
  });

  it("warns when the client key is a root admin's (its console tokens carry admin.websocket.*), from the same account read", async () => {
    const adminKey = second.createClientKey(second.adminUserId);
    expect((await api.call('PATCH', `/v1/admin/instances/${instanceId}`, { body: { clientApiKey: adminKey } })).status).toBe(200);
    // the simulator's request counter (GET /__sim/requests): the warning costs no panel call
    const panelCalls = async () =>
      ((await (await fetch(`${second.url}/__sim/requests`)).json()) as { requests: Record<string, number> }).requests;
    const before = await panelCalls();
    const res = await api.call('POST', `/v1/admin/instances/${instanceId}/test`);
    expect(res.status).toBe(200);
    expect(res.body.serviceUser).toMatchObject({ id: second.adminUserId, admin: true });
    expect(res.body.warnings).toEqual([{ code: 'client_key_is_root_admin', message: expect.stringContaining('non-admin service user') }]);
    expect(res.text).not.toContain(adminKey);
    const after = await panelCalls();
    const total = (r: Record<string, number>) => Object.values(r).reduce((a, n) => a + n, 0);
    // the kind's re-check (nests: the kind it was registered as), locations, nodes, account: as without the warning
    expect(total(after) - total(before)).toBe(4);
    for (const route of ['GET /api/application/nests', 'GET /api/client/account'])
      expect((after[route] ?? 0) - (before[route] ?? 0), route).toBe(1);
    expect(after['GET /api/application/eggs'] ?? 0).toBe(before['GET /api/application/eggs'] ?? 0);
    const back = await api.call('PATCH', `/v1/admin/instances/${instanceId}`, { body: { clientApiKey: second.clientKey } });
    expect(back.status).toBe(200);
    expect((await api.call('POST', `/v1/admin/instances/${instanceId}/test`)).body.warnings).toEqual([]);
  });

  it('the catalog shows both panels: instances, regions with stock, eggs', async () => {
    const instances = await api.call('GET', '/v1/instances', { token: userToken });
    expect(instances.body.data.map((i: { name: string }) => i.name).sort()).toEqual(['Local panel (simulator)', 'Second panel']);
    expect(instances.text).not.toContain('baseUrl');
    const regions = await api.call('GET', '/v1/regions', { token: userToken });
    expect(regions.body.unavailableInstances).toEqual([]);
    const eu = regions.body.data.find((r: { region: string }) => r.region === 'eu-central');
    expect(eu.instances).toHaveLength(2);
    expect(eu.nodes).toBe(4);
    // fra-1 32768 + fra-2 16384 × 1.5, on each of the two panels.
    expect(eu.freeMemoryMb).toBe(2 * (32768 + 24576));
    const eggs = await api.call('GET', '/v1/eggs', { token: userToken });
    expect(eggs.body.data.filter((e: { name: string }) => e.name === 'Paper')).toHaveLength(2);
  });

  it('egg detail has env, default, editable, rules and the docker images; unknown eggs are 404', async () => {
    const res = await api.call('GET', `/v1/eggs/${instanceId}/3`, { token: userToken });
    expect(res.status).toBe(200);
    const rcon = res.body.variables.find((v: { env: string }) => v.env === 'RCON_PORT');
    expect(rcon).toMatchObject({ editable: false, rules: 'required|integer' });
    const level = res.body.variables.find((v: { env: string }) => v.env === 'LEVEL');
    expect(level).toMatchObject({ editable: true, default: expect.any(String) });
    expect(Object.values(res.body.dockerImages)).toContain(res.body.defaultDockerImage);
    const paper = await api.call('GET', `/v1/eggs/${instanceId}/1`, { token: userToken });
    expect(paper.body.variables.find((v: { env: string }) => v.env === 'DL_PATH').default).toBeNull(); // not viewable
    expectEnvelope(await api.call('GET', `/v1/eggs/${instanceId}/999`, { token: userToken }), 404, 'not_found');
    expectEnvelope(await api.call('GET', '/v1/eggs/00000000-0000-4000-8000-000000000000/1', { token: userToken }), 404, 'not_found');
    expectEnvelope(await api.call('GET', `/v1/eggs/${instanceId}/abc`, { token: userToken }), 400, 'validation_failed');
  });

  it('panel reads are cached: a second listing does not reach the panel', async () => {
    second.faults.add({ method: 'GET', path: '/api/application/nests', count: 1, effect: { kind: 'status', status: 500 } });
    const res = await api.call('GET', '/v1/eggs', { token: userToken });
    expect(res.body.unavailableInstances).toEqual([]);
    expect(second.faults.list().filter((f) => f.path === '/api/application/nests')).toHaveLength(1);
    second.faults.clear();
  });

  it('disabling hides the instance from the catalog; removing the client key clears the service user', async () => {
    const off = await api.call('PATCH', `/v1/admin/instances/${instanceId}`, { body: { enabled: false } });
    expect(off.body.enabled).toBe(false);
    expect((await api.call('GET', '/v1/instances', { token: userToken })).body.data.map((i: { id: string }) => i.id)).not.toContain(
      instanceId,
    );
    const eggs = await api.call('GET', '/v1/eggs', { token: userToken });
    expect(eggs.body.data.some((e: { instanceId: string }) => e.instanceId === instanceId)).toBe(false);
    expectEnvelope(await api.call('GET', `/v1/eggs/${instanceId}/1`, { token: userToken }), 404, 'not_found');

    const noClient = await api.call('PATCH', `/v1/admin/instances/${instanceId}`, {
      body: { clientApiKey: null, enabled: true, priority: 5 },
    });
    expect(noClient.body).toMatchObject({ hasClientKey: false, serviceUserId: null, priority: 5, enabled: true });
    expect(noClient.text).not.toContain(second.appKey);
    expect(await secretStore().get(instanceId)).toEqual({ appApiKey: second.appKey });
    const report = await api.call('POST', `/v1/admin/instances/${instanceId}/test`);
    expect(report.body.ok).toBe(false);
    expect(report.body.checks.find((c: { name: string }) => c.name === 'client_api').ok).toBe(false);
    const logs = await api.call('GET', '/v1/admin/logs?limit=100');
    const update = logs.body.data.find(
      (e: { action: string; details?: { changed: string[] } }) =>
        e.action === 'instances.update' && e.details?.changed.includes('clientApiKey'),
    );
    expect(update.details.changed.sort()).toEqual(['clientApiKey', 'enabled', 'priority']);
  });

  it('a wrong application key shows in the report, without the key', async () => {
    await api.call('PATCH', `/v1/admin/instances/${instanceId}`, { body: { appApiKey: `ptla_${'z'.repeat(43)}` } });
    const report = await api.call('POST', `/v1/admin/instances/${instanceId}/test`);
    expect(report.status).toBe(200);
    const app = report.body.checks.find((c: { name: string }) => c.name === 'application_api');
    expect(app.ok).toBe(false);
    expect(app.message).toMatch(/401/);
    expect(report.text).not.toContain('zzzz');
    await api.call('PATCH', `/v1/admin/instances/${instanceId}`, { body: { appApiKey: second.appKey } });
  });

  it('an unreachable panel is listed as unavailable, the rest of the catalog still answers', async () => {
    const dead = await register({ name: 'Dead panel', baseUrl: 'http://127.0.0.1:9', appApiKey: `ptla_${'d'.repeat(43)}` });
    const regions = await api.call('GET', '/v1/regions', { token: userToken });
    expect(regions.status).toBe(200);
    expect(regions.body.unavailableInstances).toEqual([dead.body.id]);
    expect(regions.body.data.length).toBeGreaterThan(0);
    expect((await api.call('DELETE', `/v1/admin/instances/${dead.body.id}`)).status).toBe(200);
  });

  it('refuses to delete an instance that hosts servers, then deletes it and its keys', async () => {
    await setAttributes(keys.instance(instanceId), { serverCount: 2 }); // as the servers module keeps it
    const refused = await api.call('DELETE', `/v1/admin/instances/${instanceId}`);
    expectEnvelope(refused, 409, 'conflict');
    expect(refused.body.error.details).toEqual({ serverCount: 2 });
    await setAttributes(keys.instance(instanceId), { serverCount: 0 });
    const res = await api.call('DELETE', `/v1/admin/instances/${instanceId}`);
    expect(res.body).toEqual({ id: instanceId, deleted: true });
    expect(await secretStore().get(instanceId)).toBeUndefined();
    expectEnvelope(await api.call('DELETE', `/v1/admin/instances/${instanceId}`), 404, 'not_found');
    expectEnvelope(await api.call('POST', `/v1/admin/instances/${instanceId}/test`), 404, 'not_found');
  });
});

describe('bad input and access', () => {
  it('refuses bad registrations with the field named and stores nothing', async () => {
    const before = (await api.call('GET', '/v1/admin/instances')).body.data.length;
    const cases: [Record<string, unknown>, string][] = [
      [{ name: 'x', baseUrl: 'ftp://panel', appApiKey: 'k'.repeat(48) }, 'body.baseUrl'],
      [{ name: 'x', baseUrl: 'https://user:pw@panel.example.com', appApiKey: 'k'.repeat(48) }, 'body.baseUrl'],
      [{ name: 'x', baseUrl: 'https://panel.example.com' }, 'body.appApiKey'],
      [{ name: '', baseUrl: 'https://panel.example.com', appApiKey: 'k'.repeat(48) }, 'body.name'],
      [{ name: 'x', baseUrl: 'https://panel.example.com', appApiKey: 'k'.repeat(48), priority: 1.5 }, 'body.priority'],
      [{ name: 'x', baseUrl: 'https://panel.example.com', appApiKey: 'k'.repeat(48), color: 'red' }, 'body'],
    ];
    for (const [body, field] of cases) {
      const res = await register(body);
      expectEnvelope(res, 400, 'validation_failed');
      expect(res.body.error.details.issues.map((i: { field: string }) => i.field)).toContain(field);
      expect(res.text).not.toContain('k'.repeat(48));
    }
    expect((await api.call('GET', '/v1/admin/instances')).body.data.length).toBe(before);
  });

  it('customers cannot manage instances; the catalog needs a credential', async () => {
    expectEnvelope(await api.call('GET', '/v1/admin/instances', { token: userToken }), 403, 'forbidden');
    expectEnvelope(
      await register({ name: 'x', baseUrl: 'https://p.example.com', appApiKey: 'k'.repeat(48) }).then(() =>
        api.call('POST', '/v1/admin/instances', { token: userToken, body: {} }),
      ),
      403,
      'forbidden',
    );
    expectEnvelope(await api.call('GET', '/v1/regions', { token: null }), 401, 'unauthorized');
  });
});
