import { panelCalls as panelCallsOf, panelRequests, totalRequests } from '../helpers/panel-requests.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gunzipSync } from 'node:zlib';
import { backupsOf } from '../../dev/panel-sim/backups.ts';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { customer } from '../helpers/customer.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * Server backups (shared/servers/backups.ts) against the panel simulator's BackupController and
 * Wings (dev/panel-sim/backups.ts): create → in_progress → completed and listed, a download link
 * that fetches the real tar.gz, restore (the server is `restoring_backup` meanwhile and the panel's
 * state gate refuses other calls), delete, a locked backup, the panel's throttle, and the limit:
 * the platform setting `backupsPerServer` becomes the panel's `feature_limits.backups` at deploy
 * and at resize. Every operation's panel calls are counted and every change is in the activity log.
 * Backups and restores are held (the simulator's test control) so each state lasts until the test ends it.
 */
let api: TestApi;
let sim: PanelSim;
let token: string;

const requests = () => panelRequests(sim);
const total = totalRequests;
const panelCalls = <T>(fn: () => Promise<T>) => panelCallsOf(sim, fn);

const activity = async (action: string) => {
  const res = await api.call('GET', '/v1/account/logs?limit=100', { token });
  return (
    res.body.data as Array<{ action: string; target: string; result: string; status: number; details?: Record<string, unknown> }>
  ).filter((e) => e.action === action);
};

async function deploy(name: string): Promise<{ id: string; identifier: string }> {
  const created = await api.call('POST', '/v1/servers', { token, body: { name, eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 } });
  expect(created.status, created.text).toBe(201);
  const { id, identifier } = created.body;
  await until(async () => (await api.call('GET', `/v1/servers/${id}`, { token })).body.live?.installStatus === 'installed');
  return { id, identifier };
}

const simServer = (identifier: string) => sim.state.serverByIdentifier(identifier)!;
/** Ends the server's held backups and restores in the simulated Wings. */
const finishWings = (identifier: string) => backupsOf(sim.wings).end(simServer(identifier));

beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 200, transitionMs: 20, resourcesCacheMs: 0 } });
  sim = api.panel!.sim;
  // Backups and restores last until the test ends them (the simulator's `backupMs: 'held'`).
  backupsOf(sim.wings).options.backupMs = 'held';
  ({ token } = await customer(api, 'server-backups@example.com', { grantCents: 10_000 }));
});
afterAll(async () => {
  await api?.call('PUT', '/v1/admin/settings', { body: { backupsPerServer: 3 } });
  await api?.stop();
});

describe('one server through a backup, a restore and deletes (the default setting: 3)', () => {
  let server: { id: string; identifier: string };
  let backupId: string;
  const path = (p = '') => `/v1/servers/${server.id}/backups${p}`;

  it('a deploy sets the panel limit from the setting (default 3)', async () => {
    server = await deploy('backups one');
    expect(simServer(server.identifier).backup_limit).toBe(3);
    expect(
      (await api.call('POST', `/v1/servers/${server.id}/files/write`, { token, body: { file: 'world/level.dat', content: 'v1' } })).status,
    ).toBe(200);
  });

  it('create answers 201 with the backup in_progress: one panel call, an activity entry', async () => {
    const { result: res, calls } = await panelCalls(() =>
      api.call('POST', path(), { token, body: { name: 'before the update', ignored: ['logs'] } }),
    );
    expect(res.status, res.text).toBe(201);
    expect(calls).toEqual({ [`POST /api/client/servers/${server.identifier}/backups`]: 1 });
    expect(res.body).toMatchObject({
      name: 'before the update',
      status: 'in_progress',
      locked: false,
      ignored: ['logs'],
      completedAt: null,
    });
    backupId = res.body.id;
    const [entry] = await activity('servers.backups.create');
    expect(entry).toMatchObject({
      target: `server:${server.id}`,
      result: 'success',
      details: { backupId, name: 'before the update', locked: false, ignored: 1 },
    });
  });

  it('the list shows it in progress, then completed once Wings is done (one panel call per list)', async () => {
    const { result: first, calls } = await panelCalls(() => api.call('GET', path(), { token }));
    expect(first.status, first.text).toBe(200);
    expect(calls).toEqual({ [`GET /api/client/servers/${server.identifier}/backups`]: 1 });
    expect(first.body).toMatchObject({ count: 1, data: [{ id: backupId, status: 'in_progress' }] });
    expect(finishWings(server.identifier)).toBe(1);
    const done = await api.call('GET', path(), { token });
    expect(done.body.data[0]).toMatchObject({ id: backupId, status: 'completed' });
    expect(done.body.data[0].sizeBytes).toBeGreaterThan(0);
    expect(done.body.data[0].checksum).toMatch(/^sha1:[0-9a-f]{40}$/);
    expect(Date.parse(done.body.data[0].completedAt)).not.toBeNaN();
  });

  it('the download link fetches the archive (a tar.gz holding the files), once', async () => {
    const { result: link, calls } = await panelCalls(() => api.call('GET', path(`/${backupId}/download`), { token }));
    expect(link.status, link.text).toBe(200);
    expect(calls).toEqual({ [`GET /api/client/servers/${server.identifier}/backups/${backupId}/download`]: 1 });
    expect(link.body.id).toBe(backupId);
    expect(new URL(link.body.url).pathname).toBe('/download/backup');
    const res = await fetch(link.body.url);
    expect(res.status).toBe(200);
    const tar = gunzipSync(Buffer.from(await res.arrayBuffer())).toString('latin1');
    expect(tar).toContain('world/level.dat');
    expect(tar).toContain('v1');
    expect((await fetch(link.body.url)).status).toBe(404);
    expect((await activity('servers.backups.download'))[0]?.details).toEqual({ backupId });
  });

  it('restore: the server is restoring_backup meanwhile (other calls 409), then has the backup files back', async () => {
    expect(
      (await api.call('POST', `/v1/servers/${server.id}/files/write`, { token, body: { file: 'world/level.dat', content: 'v2' } })).status,
    ).toBe(200);
    expect(
      (await api.call('POST', `/v1/servers/${server.id}/files/write`, { token, body: { file: 'later.txt', content: 'after the backup' } }))
        .status,
    ).toBe(200);
    const { result: res, calls } = await panelCalls(() =>
      api.call('POST', path(`/${backupId}/restore`), { token, body: { truncate: true } }),
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ id: server.id, backupId, truncate: true, restoring: true });
    expect(calls).toEqual({ [`POST /api/client/servers/${server.identifier}/backups/${backupId}/restore`]: 1 });
    expect(sim.server(server.identifier)?.status).toBe('restoring_backup');

    expectEnvelope(await api.call('GET', `/v1/servers/${server.id}/files`, { token }), 409, 'conflict');
    expectEnvelope(await api.call('POST', path(), { token, body: {} }), 409, 'conflict');
    expectEnvelope(await api.call('POST', path(`/${backupId}/restore`), { token, body: {} }), 409, 'conflict');
    const read = await api.call('GET', `/v1/servers/${server.id}`, { token });
    expect(read.status, read.text).toBe(200);
    // The panel has no usage for it meanwhile: the live state says what it knows, not a panel error.
    expect(read.body.live).toMatchObject({ available: true, installStatus: 'installed', powerState: null });

    expect(finishWings(server.identifier)).toBe(1);
    expect(sim.server(server.identifier)?.status).toBeNull();
    expect(sim.readFile(server.identifier, 'world/level.dat')).toBe('v1');
    expect(sim.readFile(server.identifier, 'later.txt')).toBeUndefined();
    const restores = await activity('servers.backups.restore');
    expect(restores.find((e) => e.result === 'success')).toMatchObject({ details: { backupId, truncate: true } });
    expect(restores.find((e) => e.result === 'failure')).toMatchObject({ status: 409, details: { backupId, truncate: false } });
  });

  it('restoring a backup still in progress is 409 conflict', async () => {
    const created = await api.call('POST', path(), { token, body: { name: 'locked one', locked: true } });
    expect(created.status, created.text).toBe(201);
    const res = await api.call('POST', path(`/${created.body.id}/restore`), { token, body: {} });
    expectEnvelope(res, 409, 'conflict');
    expect(res.body.error.message).toMatch(/not completed/);
    finishWings(server.identifier);
  });

  it('the panel throttle (2 backups per 10 minutes per server) is 429 rate_limited with Retry-After', async () => {
    const res = await api.call('POST', path(), { token, body: {} });
    expectEnvelope(res, 429, 'rate_limited');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await activity('servers.backups.create')).some((e) => e.status === 429)).toBe(true);
  });

  it('a locked, completed backup cannot be deleted (409); an unlocked one can (one panel call)', async () => {
    const list = await api.call('GET', path(), { token });
    const locked = list.body.data.find((b: { locked: boolean }) => b.locked);
    expect(locked).toMatchObject({ status: 'completed' });
    const refused = await api.call('DELETE', path(`/${locked.id}`), { token });
    expectEnvelope(refused, 409, 'conflict');
    expect(refused.body.error.message).toMatch(/locked/);

    const { result: res, calls } = await panelCalls(() => api.call('DELETE', path(`/${backupId}`), { token }));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ id: backupId, deleted: true });
    expect(calls).toEqual({ [`DELETE /api/client/servers/${server.identifier}/backups/${backupId}`]: 1 });
    const after = await api.call('GET', path(), { token });
    expect(after.body.data.map((b: { id: string }) => b.id)).toEqual([locked.id]);
    expect((await activity('servers.backups.delete'))[0]).toMatchObject({ result: 'success', details: { backupId } });
    expectEnvelope(await api.call('DELETE', path(`/${backupId}`), { token }), 404, 'not_found');
  });

  it('lock sets the state asked for (the panel only toggles): one panel call to change, two for a no-op; unlocked, it can go', async () => {
    const [locked] = (await api.call('GET', path(), { token })).body.data as Array<{ id: string; locked: boolean }>;
    expect(locked?.locked).toBe(true);
    const lockPath = `POST /api/client/servers/${server.identifier}/backups/${locked!.id}/lock`;
    const same = await panelCalls(() => api.call('POST', path(`/${locked!.id}/lock`), { token, body: { locked: true } }));
    expect(same.result.status, same.result.text).toBe(200);
    expect(same.result.body).toMatchObject({ id: locked!.id, locked: true });
    expect(same.calls).toEqual({ [lockPath]: 2 });
    const { result: res, calls } = await panelCalls(() =>
      api.call('POST', path(`/${locked!.id}/lock`), { token, body: { locked: false } }),
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: locked!.id, locked: false });
    expect(calls).toEqual({ [lockPath]: 1 });
    expect((await activity('servers.backups.lock'))[0]).toMatchObject({
      result: 'success',
      details: { backupId: locked!.id, locked: false },
    });
    expect((await api.call('DELETE', path(`/${locked!.id}`), { token })).status).toBe(200);
    expect((await api.call('GET', path(), { token })).body.data).toEqual([]);
    expectEnvelope(await api.call('POST', path(`/${locked!.id}/lock`), { token, body: { locked: true } }), 404, 'not_found');
  });

  it("bad input is 400 and another account's server 404, neither with a panel call", async () => {
    const before = total(await requests());
    expectEnvelope(await api.call('GET', path('/not-a-uuid/download'), { token }), 400, 'validation_failed');
    expectEnvelope(await api.call('POST', path(), { token, body: { name: 'x'.repeat(192) } }), 400, 'validation_failed');
    expectEnvelope(await api.call('POST', path(), { token, body: { ignored: ['../etc'] } }), 400, 'validation_failed');
    expectEnvelope(await api.call('POST', path(`/${backupId}/restore`), { token, body: { truncate: 'yes' } }), 400, 'validation_failed');
    const other = await customer(api, 'server-backups-other@example.com');
    expectEnvelope(await api.call('GET', path(), { token: other.token }), 404, 'not_found');
    expectEnvelope(await api.call('POST', path(), { token: other.token, body: {} }), 404, 'not_found');
    expectEnvelope(await api.call('DELETE', path(`/${backupId}`), { token: other.token }), 404, 'not_found');
    expect(total(await requests())).toBe(before);
  });
});

describe('the limit: the setting at deploy, a changed setting at resize', () => {
  let server: { id: string; identifier: string };
  const path = (p = '') => `/v1/servers/${server.id}/backups${p}`;

  it('a server deployed with backupsPerServer 1 cannot make a second backup: 422 limit_exceeded', async () => {
    expect((await api.call('PUT', '/v1/admin/settings', { body: { backupsPerServer: 1 } })).status).toBe(200);
    server = await deploy('backups limited');
    expect(simServer(server.identifier).backup_limit).toBe(1);
    expect((await api.call('POST', path(), { token, body: {} })).status).toBe(201);
    const second = await api.call('POST', path(), { token, body: {} });
    expectEnvelope(second, 422, 'limit_exceeded');
    expect(second.body.error.message).toMatch(/limit of 1 backups/);
    expect(second.body.error.details).toEqual({ limit: 1 });
    // The list carries the limit beside the count ("1 of 1"), without asking the panel for it.
    const { result: list, calls } = await panelCalls(() => api.call('GET', path(), { token }));
    expect(list.body).toMatchObject({ count: 1, limit: 1 });
    expect(calls).toEqual({ [`GET /api/client/servers/${server.identifier}/backups`]: 1 });
  });

  it('a resize applies the changed setting to the panel', async () => {
    expect((await api.call('PUT', '/v1/admin/settings', { body: { backupsPerServer: 2 } })).status).toBe(200);
    const resized = await api.call('PATCH', `/v1/servers/${server.id}`, { token, body: { ramMb: 1024, cpuPercent: 100, diskMb: 3072 } });
    expect(resized.status, resized.text).toBe(200);
    expect(simServer(server.identifier).backup_limit).toBe(2);
    expect(simServer(server.identifier).disk).toBe(3072);
    expect((await api.call('GET', path(), { token })).body.limit).toBe(2);
    expect((await api.call('POST', path(), { token, body: {} })).status).toBe(201);
  });

  it('0 means no backups at all', async () => {
    expect((await api.call('PUT', '/v1/admin/settings', { body: { backupsPerServer: 0 } })).status).toBe(200);
    const none = await deploy('backups none');
    const res = await api.call('POST', `/v1/servers/${none.id}/backups`, { token, body: {} });
    expectEnvelope(res, 422, 'limit_exceeded');
    expect(res.body.error.message).toMatch(/not available/);
  });
});
