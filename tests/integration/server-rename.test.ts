import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { keys } from '../../shared/db/keys.ts';
import { customer } from '../helpers/customer.ts';
import { getRaw, setAttributes } from '../helpers/db.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * Rename (PATCH /v1/servers/:id with `name`): the panel's details, the record, the activity log.
 * Over DynamoDB Local and the panel simulator, whose details route writes every field as the panel does.
 */
let api: TestApi;
let sim: PanelSim;
let token: string;
let accountId: string;
let serverId: string;

beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 40 } });
  sim = api.panel!.sim;
  ({ token, id: accountId } = await customer(api, 'rename@example.com', { grantCents: 100_000 }));
  const res = await api.call('POST', '/v1/servers', {
    token,
    body: { name: 'first name', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
  });
  expect(res.status, res.text).toBe(201);
  serverId = res.body.id;
});
afterAll(async () => api?.stop());

const path = () => `/v1/servers/${serverId}`;
const onPanel = () => [...sim.state.servers.values()].find((s) => s.external_id === serverId)!;

/** Panel requests made while `fn` ran, by `METHOD /path` (the simulator's own counts). */
async function panelCalls(fn: () => Promise<void>): Promise<Record<string, number>> {
  const read = async () => ((await (await fetch(`${sim.url}/__sim/requests`)).json()) as { requests: Record<string, number> }).requests;
  const before = await read();
  await fn();
  const after = await read();
  return Object.fromEntries(
    Object.entries(after)
      .map(([route, n]) => [route, n - (before[route] ?? 0)] as const)
      .filter(([, n]) => n > 0),
  );
}

describe('rename', () => {
  it('renames on the panel and in the record: GET, the list and the panel agree; two panel calls, no price change', async () => {
    const before = onPanel();
    const was = { owner: before.owner_id, externalId: before.external_id, description: before.description, memory: before.memory };
    const priced = (await api.call('GET', path(), { token })).body.priceMillicentsPerHour;
    const panelId = before.id;
    const calls = await panelCalls(async () => {
      const res = await api.call('PATCH', path(), { token, body: { name: 'second name' } });
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({ id: serverId, name: 'second name', resources: { ramMb: 1024, cpuPercent: 100, diskMb: 2048 } });
      expect(res.body.priceMillicentsPerHour).toBe(priced);
    });
    // The read (owner, external id and description as they are) and the details change; nothing else.
    expect(calls).toEqual({
      [`GET /api/application/servers/${panelId}`]: 1,
      [`PATCH /api/application/servers/${panelId}/details`]: 1,
    });
    const after = onPanel();
    expect(after.name).toBe('second name');
    // Every other detail the panel re-writes is what it was: owner, external id, description; the build untouched.
    expect({ owner: after.owner_id, externalId: after.external_id, description: after.description, memory: after.memory }).toEqual(was);

    const app = await fetch(`${sim.url}/api/application/servers/${panelId}`, {
      headers: { authorization: `Bearer ${sim.appKey}`, accept: 'application/json' },
    });
    expect(((await app.json()) as { attributes: { name: string } }).attributes.name).toBe('second name');

    expect((await api.call('GET', path(), { token })).body.name).toBe('second name');
    const list = await api.call('GET', '/v1/servers?limit=100', { token });
    expect(list.body.data.find((s: { id: string }) => s.id === serverId).name).toBe('second name');
    expect((await getRaw(keys.server(accountId, serverId)))!.name).toBe('second name');
  });

  it('the activity log says servers.rename, old → new', async () => {
    const logs = await api.call('GET', '/v1/account/logs?limit=100', { token });
    const entry = logs.body.data.find((e: { action: string }) => e.action === 'servers.rename');
    expect(entry).toMatchObject({
      action: 'servers.rename',
      target: `server:${serverId}`,
      result: 'success',
      details: { name: { from: 'first name', to: 'second name' } },
    });
  });

  it('rename and resize together: one request, both applied, logged as a resize that names the rename', async () => {
    const res = await api.call('PATCH', path(), { token, body: { name: 'third name', ramMb: 2048, cpuPercent: 100, diskMb: 2048 } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ name: 'third name', resources: { ramMb: 2048, cpuPercent: 100, diskMb: 2048 } });
    expect(onPanel()).toMatchObject({ name: 'third name', memory: 2048 });
    const logs = await api.call('GET', '/v1/account/logs?limit=100', { token });
    const entry = logs.body.data.find((e: { action: string; details?: { name?: unknown } }) => e.action === 'servers.resize');
    expect(entry.details).toMatchObject({ resources: { ramMb: 2048 }, name: { from: 'second name', to: 'third name' } });
  });

  it('a resize alone still works as before (no name in its log entry)', async () => {
    const res = await api.call('PATCH', path(), { token, body: { ramMb: 1024, cpuPercent: 100, diskMb: 2048 } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ name: 'third name', resources: { ramMb: 1024 } });
    const logs = await api.call('GET', '/v1/account/logs?limit=100', { token });
    const resizes = logs.body.data.filter((e: { action: string }) => e.action === 'servers.resize');
    expect(resizes[0].details.name).toBeUndefined();
  });

  it('bad bodies: 400 naming the field, nothing changed and no panel call', async () => {
    const bodies: [unknown, string][] = [
      [{ name: 'ab' }, 'body.name'],
      [{ name: 'x'.repeat(61) }, 'body.name'],
      [{ name: 'line\nbreak' }, 'body.name'],
      [{ name: 'ok name', ramMb: 2048 }, 'body.cpuPercent'],
      [{ ramMb: 2048, cpuPercent: 100 }, 'body.diskMb'],
      [{}, 'body'],
      [{ name: 'ok name', owner: 3 }, 'body'],
    ];
    const calls = await panelCalls(async () => {
      for (const [body, field] of bodies) {
        const res = await api.call('PATCH', path(), { token, body });
        expectEnvelope(res, 400, 'validation_failed');
        expect(JSON.stringify(res.body.error.details), JSON.stringify(body)).toContain(field);
      }
    });
    expect(calls).toEqual({});
    expect(onPanel().name).toBe('third name');
    expect((await getRaw(keys.server(accountId, serverId)))!.name).toBe('third name');
  });

  it('a rename while a resize holds the server: 409 operation_in_progress, nothing changed', async () => {
    const panelId = onPanel().id;
    const held = sim.faults.add({ method: 'PATCH', path: `/api/application/servers/${panelId}/build`, count: 1, effect: { kind: 'hold' } });
    const resize = api.call('PATCH', path(), { token, body: { ramMb: 1536, cpuPercent: 100, diskMb: 2048 } });
    try {
      await until(() => sim.faults.held() === 1, { what: 'the resize to reach the panel' });
      const res = await api.call('PATCH', path(), { token, body: { name: 'fourth name' } });
      expectEnvelope(res, 409, 'operation_in_progress');
      expect(res.body.error.details.operation).toBe('resize');
    } finally {
      sim.faults.release();
    }
    expect((await resize).status).toBe(200);
    sim.faults.remove(held);
    expect(onPanel().name).toBe('third name');
    expect((await api.call('GET', path(), { token })).body.name).toBe('third name');
  });

  it('a suspended server cannot be renamed: 409 conflict, no panel call', async () => {
    await setAttributes(keys.server(accountId, serverId), { status: 'suspended' });
    try {
      const calls = await panelCalls(async () => {
        expectEnvelope(await api.call('PATCH', path(), { token, body: { name: 'fifth name' } }), 409, 'conflict');
      });
      expect(calls).toEqual({});
    } finally {
      await setAttributes(keys.server(accountId, serverId), { status: 'active' });
    }
    expect(onPanel().name).toBe('third name');
  });

  it('a details answer lost: the change is sent again (the same details twice change nothing), the rename recorded', async () => {
    const panelId = onPanel().id;
    // The panel makes the change and the answer never comes back; the client's timeout, then its second attempt.
    const lost = sim.faults.add({
      method: 'PATCH',
      path: `/api/application/servers/${panelId}/details`,
      count: 1,
      effect: { kind: 'lost_response' },
    });
    try {
      const calls = await panelCalls(async () => {
        const res = await api.call('PATCH', path(), { token, body: { name: 'lost answer' } });
        expect(res.status, res.text).toBe(200);
        expect(res.body.name).toBe('lost answer');
      });
      expect(calls).toEqual({
        [`GET /api/application/servers/${panelId}`]: 1,
        [`PATCH /api/application/servers/${panelId}/details`]: 2,
      });
    } finally {
      sim.faults.remove(lost);
    }
    expect(onPanel().name).toBe('lost answer');
    expect((await getRaw(keys.server(accountId, serverId)))!.name).toBe('lost answer');
    expect((await api.call('PATCH', path(), { token, body: { name: 'third name' } })).status).toBe(200);
  });

  it("the simulator's details route answers as the panel: every field written, its own field names in messages", async () => {
    const panelId = onPanel().id;
    const patch = (body: unknown) =>
      fetch(`${sim.url}/api/application/servers/${panelId}/details`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${sim.appKey}`, accept: 'application/json', 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const refused = await patch({ name: '' });
    expect(refused.status).toBe(422);
    const details = ((await refused.json()) as { errors: { detail: string }[] }).errors.map((e) => e.detail);
    expect(details).toEqual(['The Server Name field is required.', 'The User ID field is required.']);
    const was = onPanel();
    const saved = { name: was.name, owner: was.owner_id, externalId: was.external_id, description: was.description };
    // Only name and user: the external id becomes null and the description '' (DetailsModificationService).
    expect((await patch({ name: 'bare details', user: was.owner_id })).status).toBe(200);
    expect(sim.state.servers.get(panelId)).toMatchObject({ name: 'bare details', external_id: null, description: '' });
    expect(
      (await patch({ name: saved.name, user: saved.owner, external_id: saved.externalId, description: saved.description })).status,
    ).toBe(200);
  });

  it("another account's server is 404 and keeps its name", async () => {
    const other = await customer(api, 'rename-other@example.com', { grantCents: 10_000 });
    expectEnvelope(await api.call('PATCH', path(), { token: other.token, body: { name: 'stolen name' } }), 404, 'not_found');
    expect(onPanel().name).toBe('third name');
  });
});
