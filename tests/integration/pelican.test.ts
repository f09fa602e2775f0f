import ssh2 from 'ssh2';
import type { SFTPWrapper } from 'ssh2';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backupsOf } from '../../dev/panel-sim/backups.ts';
import { startPanelSim, type PanelSim } from '../../dev/panel-sim/index.ts';
import { runPassInProcess } from '../../shared/billing/pass.ts';
import { topologies } from '../../shared/catalog/topology.ts';
import { keys } from '../../shared/db/keys.ts';
import { HOUR_MS, hourStart } from '../../shared/pricing/hours.ts';
import { customer } from '../helpers/customer.ts';
import { getRaw, setAttributes } from '../helpers/db.ts';
import { panelRequests } from '../helpers/panel-requests.ts';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * A Pelican panel (pelican-dev/panel, the fork of Pterodactyl) beside Pterodactyl: the simulator in
 * its Pelican mode (dev/panel-sim/pelican.ts), which answers in Pelican's shapes and refuses, and
 * records, every call Pelican has no route or field for (locations, nests, `oom_disabled`, user
 * names). Registered through the same code as the admin route, detected as Pelican, then driven
 * through the API as customers do: deploy, resize, power, the console websocket, files, startup,
 * backups, SFTP and a billing pass. Pelican's limiter of backup restores (3 per 15 minutes per
 * server) fails that call alone, with its own Retry-After; the panel's budget is not paused.
 */
const { Client } = ssh2;

let api: TestApi;
let sim: PanelSim;
let alice: { token: string; id: string };
let bob: { token: string; id: string };

interface Server {
  id: string;
  identifier: string;
  sftp: { host: string; port: number; username: string };
}
let a1: Server;
let b1: Server;

const deploy = async (token: string, name: string): Promise<Server> => {
  const res = await api.call('POST', '/v1/servers', { token, body: { name, eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 } });
  expect(res.status, res.text).toBe(201);
  await until(async () => (await api.call('GET', `/v1/servers/${res.body.id}`, { token })).body.live?.installStatus === 'installed');
  return res.body;
};

const sockets: WebSocket[] = [];

beforeAll(async () => {
  api = await startTestApi({ panel: { kind: 'pelican', installMs: 100, transitionMs: 20, resourcesCacheMs: 0, sftp: {} } });
  sim = api.panel!.sim;
  alice = await customer(api, 'pelican-alice@example.com', { grantCents: 20_000 });
  bob = await customer(api, 'pelican-bob@example.com', { grantCents: 20_000 });
});
afterAll(async () => {
  for (const ws of sockets) ws.terminate();
  await api?.stop();
});

describe('registration detects the panel', () => {
  it('the local panel is Pelican: kind, its default limits (256 and 256), keys papp_/pacc_', async () => {
    expect(sim.appKey.startsWith('papp_') && sim.clientKey.startsWith('pacc_')).toBe(true);
    const res = await api.call('GET', '/v1/admin/instances');
    expect(res.status).toBe(200);
    const instance = res.body.data.find((i: { id: string }) => i.id === api.panel!.instanceId);
    expect(instance).toMatchObject({ panelKind: 'pelican', panelRateLimits: { applicationPerMinute: 256, clientPerMinute: 256 } });
  });

  it('the instance test checks the kind again and lists the nodes with their tags as regions', async () => {
    const res = await api.call('POST', `/v1/admin/instances/${api.panel!.instanceId}/test`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ ok: true, panelKind: 'pelican' });
    expect(res.body.nodes.length).toBeGreaterThan(0);
    expect(res.body.nodes.every((n: { region: string | null }) => typeof n.region === 'string')).toBe(true);
    expect(res.body.nodes.map((n: { region: string }) => n.region)).toContain('eu-central');
  });

  it('POST /v1/admin/instances: a Pelican panel is registered as pelican, a Pterodactyl one as pterodactyl; the operator may set limits', async () => {
    const pelican = await startPanelSim({ kind: 'pelican', seed: 'empty' });
    const pterodactyl = await startPanelSim({ seed: 'empty' });
    try {
      const one = await api.call('POST', '/v1/admin/instances', {
        body: { name: 'Second Pelican', baseUrl: pelican.url, appApiKey: pelican.appKey, clientApiKey: pelican.clientKey },
      });
      expect(one.status, one.text).toBe(201);
      expect(one.body).toMatchObject({ panelKind: 'pelican', panelRateLimits: { applicationPerMinute: 256, clientPerMinute: 256 } });
      const two = await api.call('POST', '/v1/admin/instances', {
        body: {
          name: 'A Pterodactyl',
          baseUrl: pterodactyl.url,
          appApiKey: pterodactyl.appKey,
          panelRateLimits: { applicationPerMinute: 100, clientPerMinute: 200 },
        },
      });
      expect(two.status, two.text).toBe(201);
      expect(two.body).toMatchObject({ panelKind: 'pterodactyl', panelRateLimits: { applicationPerMinute: 100, clientPerMinute: 200 } });
      // Detection asks Pelican's route first: Pelican is never asked for nests; Pterodactyl answers eggs 404, then nests.
      expect(await panelRequests(pelican)).toMatchObject({ 'GET /api/application/eggs': 1 });
      expect((await panelRequests(pelican))['GET /api/application/nests']).toBeUndefined();
      expect(pelican.refused()).toEqual([]);
      expect(await panelRequests(pterodactyl)).toMatchObject({ 'GET /api/application/eggs': 1, 'GET /api/application/nests': 1 });
      for (const id of [one.body.id, two.body.id]) expect((await api.call('DELETE', `/v1/admin/instances/${id}`)).status).toBe(200);
    } finally {
      await pelican.close();
      await pterodactyl.close();
    }
  });
});

describe('customers on a Pelican panel', () => {
  it('the catalog lists its eggs (no nests) with their rules; startup settings read and change', async () => {
    const egg = await api.call('GET', `/v1/eggs/${api.panel!.instanceId}/1`, { token: alice.token });
    expect(egg.status, egg.text).toBe(200);
    expect(egg.body.variables.length).toBeGreaterThan(0);
    expect(egg.body.variables.every((v: { rules: unknown }) => typeof v.rules === 'string' && v.rules.length > 0)).toBe(true);

    a1 = await deploy(alice.token, 'pelican one');
    b1 = await deploy(bob.token, 'pelican two');
    const startup = await api.call('GET', `/v1/servers/${a1.id}/startup`, { token: alice.token });
    expect(startup.status, startup.text).toBe(200);
    const editable = startup.body.variables.find((v: { editable: boolean }) => v.editable);
    expect(editable).toBeDefined();
    // A value the egg's rules refuse is refused before the panel, as on Pterodactyl.
    const refused = await api.call('PUT', `/v1/servers/${a1.id}/startup`, {
      token: alice.token,
      body: { variables: { [editable.env]: 'x'.repeat(70_000) } },
    });
    expect(refused.status).toBe(400);
  });

  it('resize sends the build with oom_killer (the strict panel refuses oom_disabled)', async () => {
    const before = sim.server(a1.identifier)!;
    const resized = await api.call('PATCH', `/v1/servers/${a1.id}`, {
      token: alice.token,
      body: { ramMb: 2048, cpuPercent: 100, diskMb: 4096 },
    });
    expect(resized.status, resized.text).toBe(200);
    expect(sim.server(a1.identifier)).toMatchObject({ memory: 2048, disk: 4096 });
    expect(before.memory).toBe(1024);
    // The OOM setting the panel had is the one it keeps.
    expect(sim.state.servers.get(before.id)!.oom_disabled).toBe(true);
  });

  it('power, files and the console websocket; the console credentials come from one panel call', async () => {
    const started = await api.call('POST', `/v1/servers/${a1.id}/power`, { token: alice.token, body: { signal: 'start' } });
    expect(started.status, started.text).toBe(200);
    await until(() => sim.powerState(a1.identifier) === 'running');

    const wrote = await api.call('POST', `/v1/servers/${a1.id}/files/write`, {
      token: alice.token,
      body: { file: 'notes.txt', content: 'from the API' },
    });
    expect(wrote.status, wrote.text).toBe(200);
    const read = await api.call('GET', `/v1/servers/${a1.id}/files/contents?file=notes.txt`, { token: alice.token });
    expect(read.text).toContain('from the API');

    const wsPath = `GET /api/client/servers/${a1.identifier}/websocket`;
    const before = (await panelRequests(sim))[wsPath] ?? 0;
    const creds = [];
    // More consoles than Pelican's 5 a minute a server: kept credentials, one panel call.
    for (let i = 0; i < 7; i++) {
      const res = await api.call('GET', `/v1/servers/${a1.id}/console`, { token: alice.token });
      expect(res.status, res.text).toBe(200);
      creds.push(res.body as { socket: string; token: string; origin: string });
    }
    expect(((await panelRequests(sim))[wsPath] ?? 0) - before).toBe(1);

    const ws = new WebSocket(creds[0]!.socket, { origin: creds[0]!.origin });
    sockets.push(ws);
    const frames: { event: string; args?: string[] }[] = [];
    ws.on('message', (data) => frames.push(JSON.parse(data.toString())));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    ws.send(JSON.stringify({ event: 'auth', args: [creds[6]!.token] }));
    await until(() => frames.some((f) => f.event === 'auth success'));
    ws.send(JSON.stringify({ event: 'send command', args: ['say hello pelican'] }));
    await until(() => sim.commands(a1.identifier).includes('say hello pelican'));
  });

  it('SFTP: the account panel user is made without names, added as a subuser, and logs in', async () => {
    const set = await api.call('POST', '/v1/account/sftp-password', { token: alice.token, body: {} });
    expect(set.status, set.text).toBe(200);
    const entry = set.body.servers.find((s: { serverId: string }) => s.serverId === a1.id);
    expect(entry).toMatchObject({ enabled: true });
    const names = await new Promise<string[]>((resolve, reject) => {
      const client = new Client();
      client.on('error', reject);
      client.on('ready', () =>
        client.sftp((err, sftp: SFTPWrapper) => {
          if (err) return reject(err);
          sftp.readdir('/', (e, list) => {
            client.end();
            return e ? reject(e) : resolve(list.map((f) => f.filename));
          });
        }),
      );
      client.connect({ host: entry.host, port: entry.port, username: entry.username, password: set.body.password, readyTimeout: 15_000 });
    });
    expect(names).toContain('notes.txt');
  });

  it("backups: the 4th restore in 15 minutes fails alone (429, its Retry-After); another customer's power still goes", async () => {
    backupsOf(sim.wings).options.backupMs = 'held';
    const created = await api.call('POST', `/v1/servers/${a1.id}/backups`, { token: alice.token, body: { name: 'pelican backup' } });
    expect(created.status, created.text).toBe(201);
    const server = sim.state.serverByIdentifier(a1.identifier)!;
    backupsOf(sim.wings).end(server);
    await until(
      async () => (await api.call('GET', `/v1/servers/${a1.id}/backups`, { token: alice.token })).body.data[0]?.status === 'completed',
    );
    for (let i = 0; i < 3; i++) {
      const restored = await api.call('POST', `/v1/servers/${a1.id}/backups/${created.body.id}/restore`, { token: alice.token, body: {} });
      expect(restored.status, restored.text).toBe(200);
      backupsOf(sim.wings).end(server);
      await until(() => sim.state.serverByIdentifier(a1.identifier)!.status === null);
    }
    const fourth = await api.call('POST', `/v1/servers/${a1.id}/backups/${created.body.id}/restore`, { token: alice.token, body: {} });
    expect(fourth.status, fourth.text).toBe(429);
    expect(fourth.body.error.code).toBe('rate_limited');
    const retryAfter = Number(fourth.headers.get('retry-after'));
    // The panel's window of 15 minutes, not the panel-wide minute.
    expect(retryAfter).toBeGreaterThan(60);
    expect(retryAfter).toBeLessThanOrEqual(900);

    // Bob, on the same panel, right after: his power signal goes, and the panel's budget was not paused.
    const power = await api.call('POST', `/v1/servers/${b1.id}/power`, { token: bob.token, body: { signal: 'start' } });
    expect(power.status, power.text).toBe(200);
    await until(() => sim.powerState(b1.identifier) === 'running');
    const listed = await api.call('GET', '/v1/admin/instances');
    const budget = listed.body.data.find((i: { id: string }) => i.id === api.panel!.instanceId).callBudget;
    expect(budget.client.pausedUntil).toBeNull();
    expect(budget.application.pausedUntil).toBeNull();
  });

  it('a billing pass charges the hours and suspends on the panel at zero; a grant unsuspends', async () => {
    const broke = await customer(api, 'pelican-broke@example.com');
    const server = await deploy(broke.token, 'pelican billed');
    const created = hourStart(Date.now()) - 3 * HOUR_MS;
    const view = (await api.call('GET', `/v1/servers/${server.id}`, { token: broke.token })).body;
    await setAttributes(keys.server(broke.id, server.id), {
      createdAt: new Date(created).toISOString(),
      history: [{ at: new Date(created).toISOString(), status: 'active', priceCentsPerHour: view.priceCentsPerHour }],
    });
    const balance = Number((await getRaw(keys.account(broke.id)))!.balanceCents);
    const deducted = await api.call('POST', `/v1/admin/users/${broke.id}/credits`, {
      body: { amountCents: -(balance - 1), note: 'test: leave 1 cent' },
    });
    expect(deducted.status, deducted.text).toBe(200);
    const summary = await runPassInProcess(new Date(hourStart(Date.now()) + 5 * 60_000));
    expect(summary.errors).toBe(0);
    expect(summary.suspended).toBeGreaterThanOrEqual(1);
    expect(Number((await getRaw(keys.account(broke.id)))!.balanceCents)).toBeLessThanOrEqual(0);
    expect(sim.server(server.identifier)!.status).toBe('suspended');
    const granted = await api.call('POST', `/v1/admin/users/${broke.id}/credits`, { body: { amountCents: 1_000, note: 'test: top up' } });
    expect(granted.status, granted.text).toBe(200);
    await until(() => sim.server(server.identifier)!.status !== 'suspended');
  });

  it("a node's CPU capacity counts, as Pelican's Node::isViable counts it: a quote past every node's free CPU is refused", async () => {
    for (const node of sim.state.nodes.values()) sim.setNodeCpu(node.id, 150);
    await topologies.markStale(api.panel!.instanceId);
    const body = { name: 'cpu quote', eggId: 1, ramMb: 1024, diskMb: 2048 };
    const over = await api.call('POST', '/v1/servers/quote', { token: alice.token, body: { ...body, cpuPercent: 200 } });
    expect(over.status, over.text).toBe(200);
    expect(over.body.deployable).toBe(false);
    const reasons = new Set(over.body.placement.rejected.map((r: { reason: string }) => r.reason));
    expect(reasons).toContain('insufficient_cpu');
    const within = await api.call('POST', '/v1/servers/quote', { token: alice.token, body: { ...body, cpuPercent: 25 } });
    expect(within.body.deployable, within.text).toBe(true);
    for (const node of sim.state.nodes.values()) sim.setNodeCpu(node.id, 0);
    await topologies.markStale(api.panel!.instanceId);
  });

  it('the strict Pelican stand-in refused no call: no locations, nests, oom_disabled or user names were sent', () => {
    expect(sim.refused(), JSON.stringify(sim.refused())).toEqual([]);
  });
});
