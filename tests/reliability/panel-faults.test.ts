import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi, type ApiResponse } from '../helpers/stack.ts';
import type { PanelSim, FaultEffect } from '../../dev/panel-sim/index.ts';
import { expectLedgerInvariant, ledgerOf } from '../helpers/money.ts';
import { getRaw, setAttributes } from '../helpers/db.ts';
import { keys } from '../../shared/db/keys.ts';
import { RECENT_MS } from '../../shared/servers/reconcile.ts';
import { liftPause } from '../../shared/instances/call-budget.ts';
import { topologies } from '../../shared/catalog/topology.ts';
import { customer } from '../helpers/customer.ts';

/**
 * The panel misbehaving — timeouts, 5xx, 429, lost answers, maintenance — during deploy, resize,
 * delete, suspend and unsuspend. Every call must end in success or a clear envelope; once the
 * retries and the reconciler have run, the panel and the records agree (no server on the panel
 * without a live record, no live record without its server), and nobody is charged for a server
 * that never ran.
 */
process.env.PANEL_TIMEOUT_MS = '300';
process.env.PANEL_CREATE_TIMEOUT_MS = '300';

let api: TestApi;
let sim: PanelSim;
beforeAll(async () => {
  // Many faulted deploys, resizes, passes and reconciler runs in quick succession: several times
  // what one panel allows a minute (240 / 720). This file is about faults, not the budget
  // (tests/reliability/panel-boundary.test.ts is), so its panel explicitly allows ten times more.
  api = await startTestApi({
    panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0, rateLimits: { application: 2400, client: 7200 } },
  });
  sim = api.panel!.sim;
  // The reconciler removes orphans itself here (what the faults leave behind); holding them for an
  // admin, the default, is tests/integration/panel-identity.test.ts's.
  const hold = await api.call('PUT', '/v1/admin/settings', { body: { holdOrphansForConfirmation: false } });
  if (hold.status !== 200) throw new Error(hold.text);
});
afterAll(async () => api?.stop());
afterEach(async () => {
  sim.faults.clear();
  // A 429 pauses every call to the panel until its Retry-After; the next case starts unpaused.
  await liftPause(api.panel!.instanceId);
  await expectLedgerInvariant();
});

const ALLOWED = new Map<number, string[]>([
  [200, []],
  [201, []],
  [409, ['conflict']],
  [502, ['panel_error']],
  [503, ['no_capacity', 'panel_unavailable']],
  [504, ['panel_timeout']],
]);

/** Success, or one of the errors the contract names for a failing panel — never anything else. */
function expectClearOutcome(res: ApiResponse, what: string): void {
  const codes = ALLOWED.get(res.status);
  if (!codes) throw new Error(`${what}: unexpected ${res.status} ${res.text}`);
  if (res.status >= 400) {
    expect(codes, `${what}: ${res.text}`).toContain(res.body?.error?.code);
    expect(typeof res.body.error.message).toBe('string');
  }
}

/** Our servers on the panel vs our live records: they must be the same set. */
async function disagreements(): Promise<{ panelOnly: string[]; recordOnly: string[] }> {
  const live = new Set<string>();
  let cursor: string | null = null;
  do {
    const page = await api.call('GET', `/v1/admin/servers?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
    for (const s of page.body.data) if (s.status !== 'deleted') live.add(s.id);
    cursor = page.body.nextCursor;
  } while (cursor);
  const onPanel = new Set(
    (sim.snapshot() as { servers: { external_id: string | null }[] }).servers
      .map((s) => s.external_id)
      .filter((e): e is string => Boolean(e)),
  );
  return { panelOnly: [...onPanel].filter((e) => !live.has(e)), recordOnly: [...live].filter((e) => !onPanel.has(e)) };
}

/** Runs the reconciler as if RECENT_MS had passed (panel servers younger than that are left alone). */
async function reconcileLater(): Promise<Record<string, number>> {
  for (const s of (sim.snapshot() as { servers: { id: number }[] }).servers)
    sim.state.servers.get(s.id)!.created_at = new Date(Date.now() - RECENT_MS - 1000);
  return (await api.call('POST', '/dev/reconcile', { token: null })).body;
}

/** A 429 pauses the panel's calls until its Retry-After (up to 60 s): the test lets that time pass. */
const waitOutPause = () => liftPause(api.panel!.instanceId);

const FUNDED = { grantCents: 10_000, grantBy: 'admin' } as const;

const body = { name: 'faulty', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 };
const FAULTS: [string, FaultEffect][] = [
  ['timeout', { kind: 'timeout' }],
  ['lost answer', { kind: 'lost_response' }],
  ['500', { kind: 'status', status: 500 }],
  ['503', { kind: 'status', status: 503 }],
  ['429 short', { kind: 'rate_limit', retryAfter: 0 }],
  ['429 long', { kind: 'rate_limit', retryAfter: 60 }],
  ['slow', { kind: 'latency', ms: 200 }],
];

describe('deploy under panel faults', () => {
  for (const [name, effect] of FAULTS) {
    it(`${name} on create`, async () => {
      const { token, id } = await customer(api, `deploy-${name.replace(/\W/g, '')}@example.com`, FUNDED);
      sim.faults.add({ method: 'POST', path: '/api/application/servers', count: 1, effect });
      const res = await api.call('POST', '/v1/servers', { token, body });
      expectClearOutcome(res, `deploy with ${name}`);
      if (res.status !== 201) {
        // Nothing recorded, nothing charged, nothing burning.
        expect(await getRaw(keys.account(id))).toMatchObject({ serverCount: 0, burnCentsPerHour: 0 });
      }
      await reconcileLater();
      expect(await disagreements()).toEqual({ panelOnly: [], recordOnly: [] });
    });
  }

  it('faults on every read the deploy makes (nodes, eggs, allocations)', async () => {
    const { token } = await customer(api, 'deploy-reads@example.com', FUNDED);
    for (const path of ['/api/application/nodes', '/api/application/locations', '/api/application/nests', /\/allocations$/]) {
      sim.faults.add({ method: 'GET', path, count: 5, effect: { kind: 'status', status: 502 } });
      expectClearOutcome(await api.call('POST', '/v1/servers', { token, body }), `deploy with ${String(path)} failing`);
      sim.faults.clear();
    }
    expect(await disagreements()).toEqual({ panelOnly: [], recordOnly: [] });
  });

  it('every node in maintenance: 503 no_capacity naming each node', async () => {
    const { token } = await customer(api, 'deploy-maint@example.com', FUNDED);
    for (const node of [1, 2, 3]) sim.setNodeMaintenance(node, true);
    // The shared topology copy sees the panel at its next read (within a minute); make that now.
    await topologies.markStale(api.panel!.instanceId);
    try {
      const res = await api.call('POST', '/v1/servers', { token, body });
      expectClearOutcome(res, 'deploy in maintenance');
      expect(res.status).toBe(503);
      expect(res.body.error.details.candidates.map((c: { reason: string }) => c.reason)).toEqual([
        'maintenance',
        'maintenance',
        'maintenance',
      ]);
    } finally {
      for (const node of [1, 2, 3]) sim.setNodeMaintenance(node, false);
      await topologies.markStale(api.panel!.instanceId);
    }
  });
});

describe('resize and delete under panel faults', () => {
  for (const [name, effect] of FAULTS) {
    it(`${name} on the build update, then on delete`, async () => {
      const { token, id } = await customer(api, `resize-${name.replace(/\W/g, '')}@example.com`, FUNDED);
      const server = (await api.call('POST', '/v1/servers', { token, body })).body;
      sim.faults.add({ method: 'PATCH', path: /\/build$/, count: 3, effect });
      const resized = await api.call('PATCH', `/v1/servers/${server.id}`, { token, body: { ramMb: 2048, cpuPercent: 100, diskMb: 4096 } });
      expectClearOutcome(resized, `resize with ${name}`);
      sim.faults.clear();
      await waitOutPause();
      const record = (await api.call('GET', `/v1/servers/${server.id}`, { token })).body;
      // The reconciler puts the panel back to what the record says (what the customer pays for).
      await reconcileLater();
      expect(sim.server(server.identifier)).toMatchObject({ memory: record.resources.ramMb, disk: record.resources.diskMb });

      sim.faults.add({ method: 'DELETE', path: '/api/application/servers/', count: 1, effect });
      const deleted = await api.call('DELETE', `/v1/servers/${server.id}`, { token });
      expectClearOutcome(deleted, `delete with ${name}`);
      sim.faults.clear();
      await waitOutPause();
      if (deleted.status !== 200) {
        // Still recorded and still on the panel: the retry finishes it.
        expect((await api.call('DELETE', `/v1/servers/${server.id}`, { token })).status).toBe(200);
      }
      expect(sim.server(server.identifier)).toBeUndefined();
      expect(await getRaw(keys.account(id))).toMatchObject({ serverCount: 0, burnCentsPerHour: 0 });
      expect(await disagreements()).toEqual({ panelOnly: [], recordOnly: [] });
    });
  }
});

describe('suspend and unsuspend under panel faults', () => {
  for (const [name, effect] of FAULTS.filter(([n]) => n !== 'slow')) {
    it(`${name}: retried by each pass until the panel confirms`, async () => {
      const { token, id } = await customer(api, `susp-${name.replace(/\W/g, '')}@example.com`, FUNDED);
      const server = (await api.call('POST', '/v1/servers', { token, body })).body;
      await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: -10_600, note: 'overdrawn' } });

      sim.faults.add({ method: 'POST', path: /\/suspend$/, count: 3, effect });
      const first = await api.call('POST', '/dev/billing/run', { token: null, body: {} });
      expect(first.status).toBe(200);
      const afterFirst = (await api.call('GET', `/v1/servers/${server.id}`, { token })).body.status;
      sim.faults.clear();
      await waitOutPause();
      await api.call('POST', '/dev/billing/run', { token: null, body: {} });
      expect((await api.call('GET', `/v1/servers/${server.id}`, { token })).body.status).toBe('suspended');
      expect(sim.server(server.identifier)!.status).toBe('suspended');
      expect(['active', 'suspended']).toContain(afterFirst);

      sim.faults.add({ method: 'POST', path: /\/unsuspend$/, count: 3, effect });
      const grant = await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: 5_000, note: 'paid' } });
      expect(grant.status).toBe(200); // the credit lands even when the panel does not answer
      sim.faults.clear();
      await waitOutPause();
      await api.call('POST', '/dev/billing/run', { token: null, body: {} });
      expect((await api.call('GET', `/v1/servers/${server.id}`, { token })).body.status).toBe('active');
      expect(sim.server(server.identifier)!.status).not.toBe('suspended');
    });
  }
});

describe('the reconciler', () => {
  it('removes a panel server that has no live record, and closes a record whose server vanished', async () => {
    const { token, id } = await customer(api, 'recon@example.com', FUNDED);
    const kept = (await api.call('POST', '/v1/servers', { token, body })).body;
    const vanishingRes = await api.call('POST', '/v1/servers', { token, body });
    expect(vanishingRes.status, vanishingRes.text).toBe(201);
    const vanishing = vanishingRes.body;
    // An orphan: on the panel with one of our ids, but nothing recorded (a lost create never settled).
    const orphanId = '11111111-2222-4333-8444-555555555555';
    const sessionless = await fetch(`${sim.url}/api/application/servers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sim.appKey}`, accept: 'application/json', 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'orphan',
        external_id: orphanId,
        user: sim.serviceUserId,
        egg: 1,
        docker_image: 'ghcr.io/pterodactyl/yolks:java_21',
        startup: 'java -jar server.jar',
        environment: { MINECRAFT_VERSION: 'latest', SERVER_JARFILE: 'server.jar', BUILD_NUMBER: 'latest' },
        limits: { memory: 512, swap: 0, disk: 1024, io: 500, cpu: 50, threads: null },
        feature_limits: { databases: 0, allocations: 1, backups: 0 },
        deploy: { locations: [1], dedicated_ip: false, port_range: [] },
      }),
    });
    expect(sessionless.status).toBe(201);
    // The vanishing one is deleted on the panel by hand.
    await fetch(`${sim.url}/api/application/servers/${sim.server(vanishing.identifier)!.id}/force`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${sim.appKey}`, accept: 'application/json' },
    });
    expect(await disagreements()).toEqual({ panelOnly: [orphanId], recordOnly: [vanishing.id] });
    const young = (await api.call('POST', '/dev/reconcile', { token: null })).body;
    // A young orphan is left alone (a deploy may still be recording it); a record is written only
    // after its panel server exists, so the vanished one is closed in this first pass.
    expect(young).toMatchObject({ orphansRemoved: 0, recordsClosed: 1, errors: 0 });
    // Old enough for the reconciler to act on (it leaves panel servers younger than RECENT_MS alone).
    const report = await reconcileLater();
    expect(report).toMatchObject({ orphansRemoved: 1, recordsClosed: 0, errors: 0 });
    expect(await disagreements()).toEqual({ panelOnly: [], recordOnly: [] });
    expect((await api.call('GET', `/v1/servers/${vanishing.id}`, { token })).body.status).toBe('deleted');
    expect((await api.call('GET', `/v1/servers/${kept.id}`, { token })).body.status).toBe('active');
    expect(await getRaw(keys.account(id))).toMatchObject({ serverCount: 1 });
  });

  it('a panel that does not answer closes nothing: its servers are not known to be gone', async () => {
    const { token, id } = await customer(api, 'recon-down@example.com', FUNDED);
    const server = (await api.call('POST', '/v1/servers', { token, body })).body;
    await setAttributes(keys.server(id, server.id), { createdAt: new Date(Date.now() - RECENT_MS - 1000).toISOString() });
    sim.faults.add({ method: 'GET', path: '/api/application/servers', count: 20, effect: { kind: 'status', status: 503 } });
    const report = (await api.call('POST', '/dev/reconcile', { token: null })).body;
    expect(report).toMatchObject({ recordsClosed: 0, orphansRemoved: 0 });
    expect(report.errors).toBeGreaterThanOrEqual(1);
    const read = await api.call('GET', `/v1/servers/${server.id}`, { token });
    expect(read.body.status, read.text).toBe('active');
  });

  it('nobody is charged for a server that never ran', async () => {
    const { token, id } = await customer(api, 'never@example.com', FUNDED);
    sim.faults.add({ method: 'POST', path: '/api/application/servers', count: 1, effect: { kind: 'timeout' } });
    const failed = await api.call('POST', '/v1/servers', { token, body });
    expect(failed.status).toBe(504);
    await api.call('POST', '/dev/billing/run', { token: null, body: { at: new Date(Date.now() + 3 * 3_600_000).toISOString() } });
    expect((await ledgerOf(id)).filter((e) => e.type === 'charge')).toEqual([]);
    await setAttributes(keys.billingWatermark(), { lastCompletedHour: new Date(0).toISOString() });
  });
});
