import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { keys } from '../../shared/db/keys.ts';
import { liftPause } from '../../shared/instances/call-budget.ts';
import { forgetLiveState } from '../../shared/servers/live.ts';
import { getRaw, setAttributes } from '../helpers/db.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * Live server state over the local stack: DynamoDB Local, the panel simulator over HTTP (its faults
 * and its request counter through /__sim/), the API over HTTP. No test waits an interval out or
 * races one: the intervals are long (10 min; 1 min while changing), so "within the interval" holds
 * on any machine, and a test ends one by moving the stored state's asOf back past it (aged()).
 * The panel timeout (3 s) is short enough for the timeout path to run in seconds, and long enough
 * that a busy machine's pauses (the simulator shares the test's process) do not end a normal call.
 */
const TTL_MS = 600_000;
const TRANSITION_TTL_MS = 60_000;
process.env.LIVE_STATE_TTL_MS = String(TTL_MS);
process.env.LIVE_STATE_TRANSITION_TTL_MS = String(TRANSITION_TTL_MS);
process.env.PANEL_TIMEOUT_MS = '3000';

let api: TestApi;
let sim: PanelSim;
beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0 } });
  sim = api.panel!.sim;
});
afterAll(async () => api?.stop());

/**
 * The server's stored state made `ms` older (default: just past the long interval), as if that
 * time had passed; a refresh lease held meanwhile (after a failed refresh) ends with it.
 */
async function aged(server: Deployed, ms = TTL_MS + 1): Promise<void> {
  const item = await getRaw(keys.liveState(server.id));
  if (!item) return;
  await setAttributes(keys.liveState(server.id), {
    ...(item.asOf ? { asOf: new Date(Date.parse(item.asOf as string) - ms).toISOString() } : {}),
    ...(item.refreshingUntil !== undefined ? { refreshingUntil: Number(item.refreshingUntil) - ms } : {}),
  });
}

interface Deployed {
  id: string;
  identifier: string;
  token: string;
  /** The panel's paths for this server: the Application API's and the Client API's usage. */
  appPath: string;
  resourcesPath: string;
}

let customers = 0;

/** Each server under a new customer: the shared call budget caps one account's panel reads a minute (shared/instances/call-budget.ts). */
async function deploy(name: string): Promise<Deployed> {
  const token = await api.session(`live-${++customers}@example.com`);
  const created = await api.call('POST', '/v1/servers', { token, body: { name, eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 } });
  expect(created.status).toBe(201);
  const { id, identifier } = created.body;
  return {
    id,
    identifier,
    token,
    appPath: `/api/application/servers/${sim.server(identifier)!.id}`,
    resourcesPath: `/api/client/servers/${identifier}/resources`,
  };
}

/** Deployed and installed on the panel, with no live state stored yet: its first read asks the panel. */
async function deployInstalled(name = 'live server'): Promise<Deployed> {
  const server = await deploy(name);
  await until(() => sim.server(server.identifier)?.status === null, { what: 'the install' });
  await forgetLiveState(server.id);
  return server;
}

const read = (server: Deployed) => api.call('GET', `/v1/servers/${server.id}`, { token: server.token });

async function requestCounts(): Promise<Record<string, number>> {
  return ((await (await fetch(`${sim.url}/__sim/requests`)).json()) as { requests: Record<string, number> }).requests;
}

/** Panel requests about one server while `fn` ran, by API. */
async function panelCallsDuring(server: Deployed, fn: () => Promise<unknown>): Promise<{ application: number; client: number }> {
  const before = await requestCounts();
  await fn();
  const after = await requestCounts();
  const delta = (path: string) => (after[`GET ${path}`] ?? 0) - (before[`GET ${path}`] ?? 0);
  return { application: delta(server.appPath), client: delta(server.resourcesPath) };
}

async function faultEverything(effect: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${sim.url}/__sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ path: '/api/', effect }),
  });
  expect(res.status).toBe(201);
}

const clearFaults = async () => expect((await fetch(`${sim.url}/__sim/faults`, { method: 'DELETE' })).status).toBe(204);

describe('live state from the table', () => {
  let server: Deployed;
  beforeAll(async () => {
    server = await deployInstalled();
  });

  it('50 concurrent reads after the interval make one Application call and at most one Client call', async () => {
    await read(server);
    await aged(server);
    let answers: Awaited<ReturnType<typeof read>>[] = [];
    const calls = await panelCallsDuring(server, async () => {
      answers = await Promise.all(Array.from({ length: 50 }, () => read(server)));
    });
    expect(calls.application).toBe(1);
    expect(calls.client).toBeLessThanOrEqual(1);
    // The readers that lost the lease show the previous state: well within 3 intervals old.
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.body.live).toMatchObject({ available: true, installStatus: 'installed', asOf: expect.any(String) });
    }
  });

  it('reads within the interval make no panel call and keep the same asOf', async () => {
    await aged(server);
    const first = (await read(server)).body.live;
    const asOfs: string[] = [];
    const calls = await panelCallsDuring(server, async () => {
      for (let i = 0; i < 10; i++) asOfs.push((await read(server)).body.live.asOf);
    });
    expect(calls).toEqual({ application: 0, client: 0 });
    expect(new Set(asOfs)).toEqual(new Set([first.asOf]));
    expect(first).toMatchObject({ available: true, powerState: 'offline', suspendedOnPanel: false, resources: expect.any(Object) });
  });

  it('after the interval a read asks the panel again and asOf moves', async () => {
    const before = (await read(server)).body.live.asOf;
    await aged(server);
    let after = '';
    const calls = await panelCallsDuring(server, async () => {
      after = (await read(server)).body.live.asOf;
    });
    expect(calls).toEqual({ application: 1, client: 1 });
    expect(Date.parse(after)).toBeGreaterThan(Date.parse(before));
  });

  it('one item per server: the answer, asOf, and no lease once the refresh is done', async () => {
    const { asOf } = (await read(server)).body.live;
    const item = await getRaw(keys.liveState(server.id));
    expect(item).toMatchObject({ kind: 'live-state', serverId: server.id, asOf, answer: { installStatus: 'installed' } });
    expect(item).not.toHaveProperty('refreshingUntil');
    expect(item).not.toHaveProperty('leaseId');
  });

  it('while another process holds the lease: the last state if recent, else "refreshing", and no panel call', async () => {
    const live = (await read(server)).body.live;
    const leaseHeldElsewhere = { refreshingUntil: Date.now() + 60_000, leaseId: 'another-process' };
    const calls = await panelCallsDuring(server, async () => {
      await setAttributes(keys.liveState(server.id), { ...leaseHeldElsewhere, asOf: new Date(Date.now() - 2 * TTL_MS).toISOString() });
      expect((await read(server)).body.live).toMatchObject({ available: true, installStatus: 'installed' });
      const tooOld = new Date(Date.now() - 4 * TTL_MS).toISOString();
      await setAttributes(keys.liveState(server.id), { asOf: tooOld });
      expect((await read(server)).body.live).toEqual({ ...live, available: false, reason: 'refreshing', asOf: tooOld });
    });
    expect(calls).toEqual({ application: 0, client: 0 });
    await forgetLiveState(server.id);
  });

  it('forgetLiveState (after our own change) makes the next read ask the panel', async () => {
    const before = (await read(server)).body.live.asOf;
    await forgetLiveState(server.id);
    expect(await getRaw(keys.liveState(server.id))).toBeUndefined();
    let after = '';
    const calls = await panelCallsDuring(server, async () => {
      after = (await read(server)).body.live.asOf;
    });
    expect(calls.application).toBe(1);
    expect(Date.parse(after)).toBeGreaterThan(Date.parse(before));
  });
});

describe('a panel in trouble', () => {
  const cases = [
    { trouble: 'answers 503', effect: { kind: 'status', status: 503 }, reason: 'panel_unreachable' },
    { trouble: 'never answers', effect: { kind: 'timeout' }, reason: 'panel_unreachable' },
    // A 429 pauses every call to the panel for its Retry-After (the shared call budget); each case
    // ends that pause itself (liftPause, as if it had run out) so the tests that follow are not held up.
    { trouble: 'rate limits (429)', effect: { kind: 'rate_limit', retryAfter: 1 }, reason: 'panel_busy' },
  ];
  for (const { trouble, effect, reason } of cases) {
    it(`${trouble}: 200 with the last known state, available false, reason ${reason}; asked once per interval`, async () => {
      const server = await deployInstalled();
      const known = (await read(server)).body.live;
      expect(known).toMatchObject({ available: true, installStatus: 'installed', powerState: 'offline' });
      await aged(server);
      known.asOf = new Date(Date.parse(known.asOf) - TTL_MS - 1).toISOString();
      await faultEverything(effect);
      try {
        const failing = await read(server);
        expect(failing.status).toBe(200);
        expect(failing.body).toMatchObject({ id: server.id, status: 'active', name: 'live server' });
        expect(failing.body.live).toEqual({ ...known, available: false, reason });
        // The reads that follow within the interval say the same without asking the panel again.
        const calls = await panelCallsDuring(server, async () => {
          for (let i = 0; i < 5; i++) {
            const again = await read(server);
            expect(again.status).toBe(200);
            expect(again.body.live).toEqual({ ...known, available: false, reason });
          }
        });
        expect(calls).toEqual({ application: 0, client: 0 });
      } finally {
        await clearFaults();
        await liftPause(api.panel!.instanceId);
      }
      await aged(server);
      const recovered = (await read(server)).body.live;
      expect(recovered).toMatchObject({ available: true, installStatus: 'installed' });
      expect(recovered).not.toHaveProperty('reason');
      expect(Date.parse(recovered.asOf)).toBeGreaterThan(Date.parse(known.asOf));
    });
  }

  it('a server never read before, with the panel down: 200, nothing known, asOf null', async () => {
    const server = await deploy('unseen server');
    await faultEverything({ kind: 'status', status: 503 });
    try {
      const res = await read(server);
      expect(res.status).toBe(200);
      expect(res.body.live).toEqual({
        available: false,
        reason: 'panel_unreachable',
        asOf: null,
        installStatus: null,
        powerState: null,
        suspendedOnPanel: null,
        resources: null,
      });
    } finally {
      await clearFaults();
    }
  });
});

describe('GET /v1/servers/:id/resources', () => {
  const usage = (server: Deployed) => api.call('GET', `/v1/servers/${server.id}/resources`, { token: server.token });

  it("carries the specification's attributes.current_state and attributes.resources beside the fields named like `live`", async () => {
    const server = await deployInstalled('usage shape');
    const res = await usage(server);
    expect(res.status, res.text).toBe(200);
    const { attributes, powerState, suspendedOnPanel, resources } = res.body;
    expect(attributes.current_state).toBe('offline');
    expect(attributes.current_state).toBe(powerState);
    expect(attributes.is_suspended).toBe(suspendedOnPanel);
    expect(attributes.resources).toEqual({
      memory_bytes: resources.memoryBytes,
      cpu_absolute: resources.cpuAbsolute,
      disk_bytes: resources.diskBytes,
      network_rx_bytes: resources.networkRxBytes,
      network_tx_bytes: resources.networkTxBytes,
      uptime: resources.uptimeMs,
    });
    expect(res.body.asOf).toEqual(expect.any(String));
  });

  it('refused as installing only on fresh state: an install that just ended answers at once, one refresh later', async () => {
    sim.holdInstalls();
    let server: Deployed;
    try {
      server = await deploy('usage after install');
    } finally {
      sim.holdInstalls(false);
    }
    // The copy says installing, and stays current for the short interval (a minute here).
    expect((await read(server)).body.live).toMatchObject({ available: true, installStatus: 'installing' });
    await aged(server, 2_000);
    // Still installing on the panel: refused after one fresh read of it.
    const refused = await panelCallsDuring(server, async () => expectEnvelope(await usage(server), 409, 'conflict'));
    expect(refused.application).toBe(1);
    expect(sim.endInstall(server.identifier)).toBe(true);
    await aged(server, 2_000);
    // Ended on the panel, the copy still says installing: read again, and answered.
    let res: Awaited<ReturnType<typeof usage>> | undefined;
    const calls = await panelCallsDuring(server, async () => {
      res = await usage(server);
    });
    expect(res!.status, res!.text).toBe(200);
    expect(res!.body.attributes.current_state).toBe('offline');
    expect(calls).toEqual({ application: 1, client: 1 });
  });
});

describe('the short interval, deleted servers, lists', () => {
  it('a server that is installing is refreshed at the short interval', async () => {
    sim.holdInstalls();
    let server: Deployed;
    try {
      server = await deploy('installing server');
    } finally {
      sim.holdInstalls(false);
    }
    expect((await read(server)).body.live).toMatchObject({ available: true, installStatus: 'installing' });
    expect(sim.endInstall(server.identifier)).toBe(true);
    // Within the short interval the read still shows what is stored; just past it, the panel is asked.
    await aged(server, TRANSITION_TTL_MS - 5_000);
    expect((await read(server)).body.live).toMatchObject({ available: true, installStatus: 'installing' });
    await aged(server, 5_001);
    expect((await read(server)).body.live).toMatchObject({ available: true, installStatus: 'installed' });
    // Installed, the long interval applies: a short one's worth of age asks nothing.
    const calls = await panelCallsDuring(server, async () => {
      await aged(server, TRANSITION_TTL_MS + 1);
      await read(server);
    });
    expect(calls).toEqual({ application: 0, client: 0 });
  });

  it('a deleted server and the list: no panel call', async () => {
    const server = await deployInstalled();
    expect((await api.call('DELETE', `/v1/servers/${server.id}`, { token: server.token })).status).toBe(200);
    const before = await requestCounts();
    const res = await read(server);
    expect(res.status).toBe(200);
    expect(res.body.live).toEqual({
      available: false,
      reason: 'deleted',
      asOf: null,
      installStatus: null,
      powerState: null,
      suspendedOnPanel: null,
      resources: null,
    });
    expect((await api.call('GET', '/v1/servers', { token: server.token })).status).toBe(200);
    expect(await requestCounts()).toEqual(before);
  });
});
