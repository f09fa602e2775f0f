import { panelCalls as panelCallsOf, panelRequests, totalRequests } from '../helpers/panel-requests.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { customer } from '../helpers/customer.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * POST /v1/servers/:id/files/chmod (shared/servers/files.ts `chmodFiles`) against the panel
 * simulator over real HTTP: the modes change on the simulated Wings' filesystem in one panel call,
 * the listing shows them, bad input (the panel's ChmodFilesRequest rules, and octal modes) costs no
 * panel call, and another account's server is 404.
 */
let api: TestApi;
let sim: PanelSim;
let token: string;
let serverId: string;
let identifier: string;

const call = (method: string, path: string, body?: unknown) =>
  api.call(method, `/v1/servers/${serverId}${path}`, { token, ...(body === undefined ? {} : { body }) });
const modes = async (directory: string) => {
  const res = await api.call('GET', `/v1/servers/${serverId}/files?directory=${encodeURIComponent(directory)}`, { token });
  return Object.fromEntries((res.body.data as Array<{ name: string; mode: string }>).map((f) => [f.name, f.mode]));
};

beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 200, transitionMs: 20, resourcesCacheMs: 0 } });
  sim = api.panel!.sim;
  ({ token } = await customer(api, 'server-files-chmod@example.com', { grantCents: 10_000 }));
  const created = await api.call('POST', '/v1/servers', {
    token,
    body: { name: 'chmod', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
  });
  expect(created.status, created.text).toBe(201);
  serverId = created.body.id;
  identifier = created.body.identifier;
  await until(async () => (await api.call('GET', `/v1/servers/${serverId}`, { token })).body.live?.installStatus === 'installed');
  expect((await call('POST', '/files/write', { file: 'start.sh', content: '#!/bin/sh\n' })).status).toBe(200);
  expect((await call('POST', '/files/write', { file: 'config/secret.properties', content: 'a=b\n' })).status).toBe(200);
});
afterAll(async () => api?.stop());

describe('chmod', () => {
  it('changes the modes of several files in one panel call; the listing shows them; logged', async () => {
    expect((await modes('/'))['start.sh']).toBe('-rw-r--r--');
    const { result: res, calls } = await panelCallsOf(sim, () =>
      call('POST', '/files/chmod', {
        files: [
          { file: '/start.sh', mode: '755' },
          { file: 'config', mode: '0700' },
        ],
      }),
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      root: '/',
      changed: [
        { file: 'start.sh', mode: '755' },
        { file: 'config', mode: '0700' },
      ],
    });
    expect(calls).toEqual({ [`POST /api/client/servers/${identifier}/files/chmod`]: 1 });
    expect(await modes('/')).toMatchObject({ 'start.sh': '-rwxr-xr-x', config: 'drwx------' });

    const within = await call('POST', '/files/chmod', { root: '/config', files: [{ file: 'secret.properties', mode: '600' }] });
    expect(within.status, within.text).toBe(200);
    expect((await modes('/config'))['secret.properties']).toBe('-rw-------');

    const logs = await api.call('GET', '/v1/account/logs?limit=100', { token });
    const entry = (logs.body.data as Array<{ action: string; target: string; result: string; details?: unknown }>).find(
      (e) => e.action === 'servers.files.chmod' && e.result === 'success',
    );
    expect(entry).toMatchObject({ target: `server:${serverId}` });
  });

  it('a missing file is 404, nothing changed (Wings checks every path first)', async () => {
    const res = await call('POST', '/files/chmod', {
      files: [
        { file: 'start.sh', mode: '700' },
        { file: 'nope.txt', mode: '700' },
      ],
    });
    expectEnvelope(res, 404, 'not_found');
    expect((await modes('/'))['start.sh']).toBe('-rwxr-xr-x');
  });

  it('the rules (files present, each with a file and an octal mode) are checked before any panel call', async () => {
    const before = totalRequests(await panelRequests(sim));
    for (const body of [
      {},
      { files: [] },
      { files: [{ file: 'start.sh' }] },
      { files: [{ mode: '644' }] },
      { files: [{ file: 'start.sh', mode: 'rwxr-xr-x' }] },
      { files: [{ file: 'start.sh', mode: '999' }] },
      { files: [{ file: 'start.sh', mode: 644 }] },
      { files: [{ file: 'start.sh', mode: '64' }] },
      { files: [{ file: '../escape', mode: '644' }] },
      { files: [{ file: 'start.sh', mode: '644', extra: 1 }] },
      { root: 5, files: [{ file: 'start.sh', mode: '644' }] },
    ]) {
      const res = await call('POST', '/files/chmod', body);
      expectEnvelope(res, 400, 'validation_failed');
    }
    expect(totalRequests(await panelRequests(sim))).toBe(before);
    expect((await modes('/'))['start.sh']).toBe('-rwxr-xr-x');
  });

  it("another account's server is 404 with no panel call, and its files keep their modes", async () => {
    const other = await customer(api, 'server-files-chmod-other@example.com');
    const before = totalRequests(await panelRequests(sim));
    const res = await api.call('POST', `/v1/servers/${serverId}/files/chmod`, {
      token: other.token,
      body: { files: [{ file: 'start.sh', mode: '777' }] },
    });
    expectEnvelope(res, 404, 'not_found');
    expect(totalRequests(await panelRequests(sim))).toBe(before);
    expect((await modes('/'))['start.sh']).toBe('-rwxr-xr-x');
  });
});
