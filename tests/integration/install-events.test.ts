import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { startRepairLoop } from '../../dev/repair-loop.ts';
import { keys } from '../../shared/db/keys.ts';
import { bucketOf, slotOf } from '../../shared/instances/call-budget-window.ts';
import { panelBudgetId } from '../../shared/instances/call-budget.ts';
import { runAsCaller } from '../../shared/instances/caller.ts';
import { getInstance } from '../../shared/instances/index.ts';
import { forgetLiveState } from '../../shared/servers/live.ts';
import { runInstallWatch } from '../../shared/servers/install-watch.ts';
import { customer } from '../helpers/customer.ts';
import { getRaw, setAttributes } from '../helpers/db.ts';
import { closeServer, listenLocal } from '../helpers/local-server.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * Install lifecycle events (shared/servers/install-watch.ts) and the reinstall route, against the
 * panel simulator (installs held until the test ends them, `failNextInstalls` for a failed one),
 * DynamoDB Local and a real webhook receiver on 127.0.0.1 fed by the dispatcher loop. The install
 * watch runs through the real every-minute loop (dev/repair-loop.ts) in the first test, and is
 * called directly elsewhere, so each test decides when a pass runs.
 */
let api: TestApi;
let sim: PanelSim;
let receiver: Server;
let receiverUrl: string;
const received: Array<{ type: string; data: Record<string, any> }> = [];

beforeAll(async () => {
  // No background repair loop: the tests run the watch themselves (the first one through the loop).
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0 }, repairs: false });
  sim = api.panel!.sim;
  // Every install lasts until the test ends it (sim.endInstall).
  sim.holdInstalls();
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      res.writeHead(200).end('ok');
    });
  });
  receiverUrl = `http://127.0.0.1:${await listenLocal(receiver)}/hook`;
});
afterAll(async () => {
  await closeServer(receiver);
  await api?.stop();
});

interface Deployed {
  id: string;
  identifier: string;
  panelId: number;
}

async function deploy(token: string, name: string): Promise<Deployed> {
  const res = await api.call('POST', '/v1/servers', { token, body: { name, eggId: 1, ramMb: 512, cpuPercent: 50, diskMb: 1024 } });
  expect(res.status, res.text).toBe(201);
  return { id: res.body.id, identifier: res.body.identifier, panelId: sim.server(res.body.identifier)!.id };
}

async function requestCounts(): Promise<Record<string, number>> {
  return ((await (await fetch(`${sim.url}/__sim/requests`)).json()) as { requests: Record<string, number> }).requests;
}

const delta = (before: Record<string, number>, after: Record<string, number>, key: string) => (after[key] ?? 0) - (before[key] ?? 0);
const LIST = 'GET /api/application/servers';

async function eventsOf(token: string, type: string): Promise<Array<{ type: string; data: Record<string, any> }>> {
  const res = await api.call('GET', `/v1/events?type=${type}&limit=100`, { token });
  expect(res.status, res.text).toBe(200);
  return res.body.data;
}

const watchOf = (accountId: string, serverId: string) => getRaw(keys.installWatch(accountId, serverId));

describe('a deploy raises server.installed by itself', () => {
  let owner: { token: string; id: string };
  let server: Deployed;

  it('reaches a webhook receiver through the every-minute loop, with no client call about the server in between', async () => {
    owner = await customer(api, 'install-owner@example.com', { grantCents: 100_000 });
    const hook = await api.call('POST', '/v1/webhook-endpoints', {
      token: owner.token,
      body: { url: receiverUrl, events: ['server.installed', 'server.install_failed', 'server.reinstalled'] },
    });
    expect(hook.status, hook.text).toBe(201);
    server = await deploy(owner.token, 'watched');
    expect(sim.server(server.identifier)?.status).toBe('installing');
    const before = await requestCounts();
    const loop = startRepairLoop({ intervalMs: 50, installCheckIntervalMs: 50 });
    try {
      // The watch checks the server while it installs, and raises nothing yet.
      await until(async () => Number((await watchOf(owner.id, server.id))?.checks ?? 0) >= 2, { what: 'two checks while installing' });
      expect(received).toEqual([]);
      expect(sim.endInstall(server.identifier)).toBe(true);
      await until(() => received.some((e) => e.type === 'server.installed' && e.data.id === server.id), { what: 'server.installed' });
    } finally {
      await loop.stop();
    }
    const after = await requestCounts();
    // Only the watch's listing calls: nobody asked the panel about this one server.
    for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
      if (key.includes(`/api/application/servers/${server.panelId}`) || key.includes(`/api/client/servers/${server.identifier}`)) {
        expect(delta(before, after, key), key).toBe(0);
      }
    }
    // Two checks while installing (the second may be the one that saw the end), each one listing call.
    expect(delta(before, after, LIST)).toBeGreaterThanOrEqual(2);
    const event = received.find((e) => e.type === 'server.installed')!;
    expect(event.data).toMatchObject({ id: server.id, status: 'active', install: { kind: 'deploy', startedAt: expect.any(String) } });
    expect(event.data.install.reason).toBeUndefined();
    // The watch ended with the install: gone, and one event.
    expect(await watchOf(owner.id, server.id)).toBeUndefined();
    expect(await eventsOf(owner.token, 'server.installed')).toHaveLength(1);
  });

  it('reinstall: 202, the panel installs again (files kept), the activity log says so, and server.reinstalled follows', async () => {
    await api.call('POST', `/v1/servers/${server.id}/files/write`, { token: owner.token, body: { file: 'kept.txt', content: 'mine' } });
    const before = await requestCounts();
    const res = await api.call('POST', `/v1/servers/${server.id}/reinstall`, { token: owner.token });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toEqual({ id: server.id, installStatus: 'installing', watchedUntil: expect.any(String) });
    expect(Date.parse(res.body.watchedUntil) - Date.now()).toBeGreaterThan(55 * 60_000);
    // On the panel: one reinstall call, and the server installing.
    const after = await requestCounts();
    expect(delta(before, after, `POST /api/application/servers/${server.panelId}/reinstall`)).toBe(1);
    expect(sim.server(server.identifier)?.status).toBe('installing');
    expect(sim.readFile(server.identifier, 'kept.txt')).toBe('mine');
    // Another reinstall while it installs: 409 (on the panel's word, fresh-gate.ts), no reinstall call.
    expectEnvelope(await api.call('POST', `/v1/servers/${server.id}/reinstall`, { token: owner.token }), 409, 'conflict');
    expect(delta(after, await requestCounts(), `POST /api/application/servers/${server.panelId}/reinstall`)).toBe(0);
    // The activity log.
    const logs = await api.call('GET', '/v1/account/logs?limit=10', { token: owner.token });
    const entry = logs.body.data.find((l: { action: string; result?: string }) => l.action === 'servers.reinstall');
    expect(entry).toMatchObject({ action: 'servers.reinstall', target: `server:${server.id}` });

    // Still installing: a pass raises nothing.
    expect(await runInstallWatch()).toMatchObject({ checked: 1, ended: 0 });
    expect(sim.endInstall(server.identifier)).toBe(true);
    expect(await runInstallWatch(new Date(Date.now() + 60_000))).toMatchObject({ checked: 1, ended: 1, panelCalls: 1 });
    const [event] = await eventsOf(owner.token, 'server.reinstalled');
    expect(event?.data).toMatchObject({ id: server.id, install: { kind: 'reinstall' } });
    await until(() => received.some((e) => e.type === 'server.reinstalled'), { what: 'server.reinstalled delivered' });
  });

  it('a failed reinstall raises server.install_failed (kind reinstall); a reinstall then is allowed again', async () => {
    sim.failNextInstalls(1);
    expect((await api.call('POST', `/v1/servers/${server.id}/reinstall`, { token: owner.token })).status).toBe(202);
    sim.endInstall(server.identifier);
    expect(sim.server(server.identifier)?.status).toBe('reinstall_failed');
    await runInstallWatch();
    const [event] = await eventsOf(owner.token, 'server.install_failed');
    expect(event?.data).toMatchObject({ id: server.id, install: { kind: 'reinstall', reason: 'failed' } });
    expect(await watchOf(owner.id, server.id)).toBeUndefined();
    expect((await api.call('POST', `/v1/servers/${server.id}/reinstall`, { token: owner.token })).status).toBe(202);
    sim.endInstall(server.identifier);
    await runInstallWatch();
  });

  it('while a power action runs Wings refuses (409 conflict) and the watch is disarmed: a reinstall after it goes', async () => {
    sim.holdTransitions();
    try {
      expect((await api.call('POST', `/v1/servers/${server.id}/power`, { token: owner.token, body: { signal: 'start' } })).status).toBe(
        200,
      );
      expect(sim.powerState(server.identifier)).toBe('starting');
      expectEnvelope(await api.call('POST', `/v1/servers/${server.id}/reinstall`, { token: owner.token }), 409, 'conflict');
      expect(sim.server(server.identifier)?.status).toBeNull();
      expect(await watchOf(owner.id, server.id)).toBeUndefined();
      sim.endTransition(server.identifier);
    } finally {
      sim.holdTransitions(false);
    }
    expect((await api.call('POST', `/v1/servers/${server.id}/reinstall`, { token: owner.token })).status).toBe(202);
    sim.endInstall(server.identifier);
    expect(await runInstallWatch()).toMatchObject({ ended: 1 });
  });

  it('a deleted server is 409 (no panel call); another account’s is 404', async () => {
    const other = await customer(api, 'install-other@example.com', { grantCents: 100_000 });
    expectEnvelope(await api.call('POST', `/v1/servers/${server.id}/reinstall`, { token: other.token }), 404, 'not_found');
    const gone = await deploy(owner.token, 'gone');
    sim.endInstall(gone.identifier);
    expect((await api.call('DELETE', `/v1/servers/${gone.id}`, { token: owner.token })).status).toBe(200);
    const before = await requestCounts();
    expectEnvelope(await api.call('POST', `/v1/servers/${gone.id}/reinstall`, { token: owner.token }), 409, 'conflict');
    expect(delta(before, await requestCounts(), `POST /api/application/servers/${gone.panelId}/reinstall`)).toBe(0);
    // Its deploy's watch ends without an event (the server is gone).
    await runInstallWatch();
    expect(await watchOf(owner.id, gone.id)).toBeUndefined();
    expect((await eventsOf(owner.token, 'server.installed')).map((e) => e.data.id)).not.toContain(gone.id);
  });
});

describe('a reinstall right after an install ends (gates that refuse read fresh state)', () => {
  it('still installing on the panel: 409 after one read of it, no reinstall call', async () => {
    const c = await customer(api, 'install-fresh-1@example.com', { grantCents: 100_000 });
    const server = await deploy(c.token, 'fresh gate installing');
    const before = await requestCounts();
    expectEnvelope(await api.call('POST', `/v1/servers/${server.id}/reinstall`, { token: c.token }), 409, 'conflict');
    const after = await requestCounts();
    expect(delta(before, after, `GET /api/application/servers/${server.panelId}`)).toBe(1);
    expect(delta(before, after, `POST /api/application/servers/${server.panelId}/reinstall`)).toBe(0);
    expect(await watchOf(c.id, server.id)).toBeDefined();
    sim.endInstall(server.identifier);
    await runInstallWatch();
  });

  it('ended on the panel, the watch not yet checked: accepted at once, server.installed raised once', async () => {
    const c = await customer(api, 'install-fresh-2@example.com', { grantCents: 100_000 });
    const server = await deploy(c.token, 'fresh gate ended');
    expect(sim.endInstall(server.identifier)).toBe(true);
    // The watch still says installing: no pass has run since the install ended.
    expect(await watchOf(c.id, server.id)).toMatchObject({ installKind: 'deploy' });
    const before = await requestCounts();
    const res = await api.call('POST', `/v1/servers/${server.id}/reinstall`, { token: c.token });
    expect(res.status, res.text).toBe(202);
    const after = await requestCounts();
    expect(delta(before, after, `GET /api/application/servers/${server.panelId}`)).toBe(1);
    expect(delta(before, after, `POST /api/application/servers/${server.panelId}/reinstall`)).toBe(1);
    expect(await watchOf(c.id, server.id)).toMatchObject({ installKind: 'reinstall' });
    // The deploy's install ended with its event, raised by the gate; the next pass raises no second one.
    expect((await eventsOf(c.token, 'server.installed')).map((e) => e.data.id)).toEqual([server.id]);
    expect(sim.endInstall(server.identifier)).toBe(true);
    await runInstallWatch(new Date(Date.now() + 60_000));
    expect((await eventsOf(c.token, 'server.installed')).map((e) => e.data.id)).toEqual([server.id]);
    expect((await eventsOf(c.token, 'server.reinstalled')).map((e) => e.data.id)).toEqual([server.id]);
  });
});

describe('the watch', () => {
  it('a failed install raises server.install_failed (kind deploy, reason failed)', async () => {
    const c = await customer(api, 'install-failed@example.com', { grantCents: 100_000 });
    sim.failNextInstalls(1);
    const s = await deploy(c.token, 'fails');
    sim.endInstall(s.identifier);
    expect(sim.server(s.identifier)?.status).toBe('install_failed');
    await runInstallWatch();
    const events = await eventsOf(c.token, 'server.install_failed');
    expect(events).toHaveLength(1);
    expect(events[0]?.data).toMatchObject({ id: s.id, install: { kind: 'deploy', reason: 'failed' } });
    expect(await eventsOf(c.token, 'server.installed')).toEqual([]);
  });

  it('one listing call per panel and pass covers every watched server; concurrent passes raise each event once', async () => {
    const c = await customer(api, 'install-many@example.com', { grantCents: 100_000 });
    const servers = [await deploy(c.token, 'one'), await deploy(c.token, 'two'), await deploy(c.token, 'three')];
    let before = await requestCounts();
    expect(await runInstallWatch()).toMatchObject({ due: 3, checked: 3, ended: 0, panelCalls: 1 });
    expect(delta(before, await requestCounts(), LIST)).toBe(1);
    // Checked at most once per interval: a pass right after finds nothing due and calls nothing.
    before = await requestCounts();
    expect(await runInstallWatch()).toMatchObject({ due: 0, panelCalls: 0 });
    expect(delta(before, await requestCounts(), LIST)).toBe(0);

    for (const s of servers) sim.endInstall(s.identifier);
    // Two passes over the same watches: the first one's listing call is held, so a second, with its
    // clock five minutes on, finds the first one's claims due again, claims, checks and ends them;
    // then the first gets its answer, sees the same ended installs, and raises nothing.
    sim.faults.add({ method: 'GET', path: /^\/api\/application\/servers$/, count: 1, effect: { kind: 'hold' } });
    const slow = runInstallWatch(new Date(Date.now() + 60_000));
    await until(() => sim.faults.held() === 1, { what: 'the first pass held at the panel' });
    expect(await runInstallWatch(new Date(Date.now() + 5 * 60_000))).toMatchObject({ checked: 3, ended: 3 });
    expect(sim.faults.release()).toBe(1);
    expect(await slow).toMatchObject({ checked: 3, ended: 0, panelCalls: 1 });
    const events = await eventsOf(c.token, 'server.installed');
    expect(events.map((e) => e.data.id).sort()).toEqual(servers.map((s) => s.id).sort());
    for (const s of servers) expect(await watchOf(c.id, s.id)).toBeUndefined();
  });

  it('stops at its limit: still installing then is server.install_failed (reason timeout), and no call after', async () => {
    const c = await customer(api, 'install-slow@example.com', { grantCents: 100_000 });
    const s = await deploy(c.token, 'slow');
    await runInstallWatch();
    expect(await eventsOf(c.token, 'server.install_failed')).toEqual([]);
    // The limit passes: its time moved back, not waited out.
    await setAttributes(keys.installWatch(c.id, s.id), { until: new Date(Date.now() - 1000).toISOString() });
    expect(await runInstallWatch(new Date(Date.now() + 60_000))).toMatchObject({ checked: 1, ended: 1, panelCalls: 1 });
    const [event] = await eventsOf(c.token, 'server.install_failed');
    expect(event?.data).toMatchObject({ id: s.id, install: { kind: 'deploy', reason: 'timeout' } });
    expect(await watchOf(c.id, s.id)).toBeUndefined();
    const before = await requestCounts();
    expect(await runInstallWatch(new Date(Date.now() + 10 * 60_000))).toMatchObject({ due: 0, panelCalls: 0 });
    expect(delta(before, await requestCounts(), LIST)).toBe(0);
    sim.endInstall(s.identifier);
  });
});

describe('the watch spends the system share of the call budget', () => {
  it('with the Application budget filled to the customers’ ceiling, a customer’s read is refused and the watch’s call still goes', async () => {
    const c = await customer(api, 'install-flood@example.com', { grantCents: 100_000 });
    const s = await deploy(c.token, 'flooded');
    const instance = await getInstance(api.panel!.instanceId);
    const window = keys.panelCallBudget(panelBudgetId(instance.baseUrl), 'application');
    // 200 calls in the current bucket: past what customers may fill (235 less the system reserve of 36:
    // shared/instances/call-budget-window.ts, the panel's 240 a minute), under the system's 235.
    const cur = bucketOf(Date.now());
    await setAttributes(window, { cur, total: 200, [`s${slotOf(cur)}`]: 200 });
    try {
      await forgetLiveState(s.id);
      const read = await api.call('GET', `/v1/servers/${s.id}`, { token: c.token });
      expect(read.body.live).toMatchObject({ available: false, reason: 'panel_busy' });
      const before = await requestCounts();
      // Even run from inside a customer's context, the watch's calls are the platform's.
      expect(await runAsCaller(c.id, () => runInstallWatch())).toMatchObject({ checked: 1, panelCalls: 1 });
      expect(delta(before, await requestCounts(), LIST)).toBe(1);
    } finally {
      await setAttributes(window, { total: 0, [`s${slotOf(cur)}`]: 0 });
      sim.endInstall(s.identifier);
    }
  });
});
