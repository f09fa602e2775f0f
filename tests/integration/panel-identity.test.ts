import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type PanelSim, startPanelSim } from '../../dev/panel-sim/index.ts';
import { keys } from '../../shared/db/keys.ts';
import { forgetProcessState } from '../../shared/instances/call-budget.ts';
import { RECENT_MS, reconcileAll } from '../../shared/servers/reconcile.ts';
import { secretStore } from '../../shared/secrets/index.ts';
import { clearSettingsCache } from '../../shared/settings/index.ts';
import { customer } from '../helpers/customer.ts';
import { getRaw, setAttributes } from '../helpers/db.ts';
import { captureMetrics } from '../helpers/metrics.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * One panel, one registration (shared/instances/identity.ts): a panel is known by its nodes'
 * uuids, so a second registration under the same or another spelling of its URL is refused; and
 * the reconciler never removes a panel server that a record on any instance holds, holds the
 * unclaimed ones for an admin (shared/servers/orphans.ts), and counts each step. The simulator's
 * nodes get their uuids when it starts and keep them while it runs, as a panel's do.
 */
let api: TestApi;
let sim: PanelSim;
let instanceId: string;
let capture: ReturnType<typeof captureMetrics> | undefined;
beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20 } });
  sim = api.panel!.sim;
  instanceId = api.panel!.instanceId;
});
afterAll(async () => api?.stop());
afterEach(() => {
  capture?.stop();
  capture = undefined;
});

const FUNDED = { grantCents: 1_000_000 };
const body = { name: 'claimed', eggId: 1, ramMb: 256, cpuPercent: 25, diskMb: 512 };
const instances = async () => (await api.call('GET', '/v1/admin/instances')).body.data as Record<string, unknown>[];
const register = (baseUrl: string, keysOf: PanelSim = sim) =>
  api.call('POST', '/v1/admin/instances', {
    body: { name: 'Again', baseUrl, appApiKey: keysOf.appKey, clientApiKey: keysOf.clientKey },
  });
const setHold = async (on: boolean) => {
  const res = await api.call('PUT', '/v1/admin/settings', { body: { holdOrphansForConfirmation: on } });
  expect(res.status, res.text).toBe(200);
  clearSettingsCache();
};
/** Every panel server as if RECENT_MS had passed (the reconciler leaves younger ones alone). */
const ageAllPanelServers = () => {
  for (const s of sim.state.servers.values()) s.created_at = new Date(Date.now() - RECENT_MS - 1000);
};
async function installedServer(token: string): Promise<{ id: string; identifier: string }> {
  const created = await api.call('POST', '/v1/servers', { token, body });
  expect(created.status, created.text).toBe(201);
  await until(() => sim.server(created.body.identifier)?.status === null, { what: 'install' });
  return { id: created.body.id, identifier: created.body.identifier };
}

describe('one panel, one registration', () => {
  it("the stack's instance claims its panel's node uuids", async () => {
    const mine = (await instances()).find((i) => i.id === instanceId)!;
    const nodeUuids = [...sim.state.nodes.values()].map((n) => n.uuid.toLowerCase()).sort();
    expect(nodeUuids.length).toBeGreaterThan(0);
    expect(mine).toMatchObject({ panelNodeUuids: nodeUuids, duplicateOf: null });
    for (const uuid of nodeUuids) expect(await getRaw(keys.panelNodeClaim(uuid))).toMatchObject({ instanceId });
  });

  it('the same URL twice: 409 panel_already_registered naming the instance, nothing stored', async () => {
    const before = await instances();
    const res = await register(sim.url);
    expectEnvelope(res, 409, 'panel_already_registered');
    expect(res.body.error.details).toEqual({ instanceId });
    expect(res.body.error.message).toContain(instanceId);
    expect(await instances()).toHaveLength(before.length);
  });

  it('the same panel under another spelling (localhost for 127.0.0.1): 409, found by its nodes', async () => {
    const before = await instances();
    const res = await register(sim.url.replace('127.0.0.1', 'localhost'));
    expectEnvelope(res, 409, 'panel_already_registered');
    expect(res.body.error.details).toEqual({ instanceId });
    expect(await instances()).toHaveLength(before.length);
  });

  it('another panel registers; once deleted, its claims go with it and it can be registered again', async () => {
    const other = await startPanelSim({});
    try {
      const first = await register(other.url, other);
      expect(first.status, first.text).toBe(201);
      expect(first.body.panelNodeUuids).toHaveLength(other.state.nodes.size);
      expectEnvelope(await register(other.url.replace('127.0.0.1', 'localhost'), other), 409, 'panel_already_registered');
      expect((await api.call('DELETE', `/v1/admin/instances/${first.body.id}`)).status).toBe(200);
      for (const uuid of first.body.panelNodeUuids) expect(await getRaw(keys.panelNodeClaim(uuid))).toBeUndefined();
      const again = await register(other.url.replace('127.0.0.1', 'localhost'), other);
      expect(again.status, again.text).toBe(201);
      expect((await api.call('DELETE', `/v1/admin/instances/${again.body.id}`)).status).toBe(200);
    } finally {
      await other.close();
    }
  });
});

describe('the reconciler with the same panel registered twice (before registrations were refused)', () => {
  it('deletes nothing a record on either instance claims, even with orphans not held; the duplicate is marked and counted', async () => {
    const { token, id: accountId } = await customer(api, 'claimed@example.com', FUNDED);
    const server = await installedServer(token);
    const onDuplicate = await installedServer(token);
    // A duplicate as one was made before: written directly, under another spelling, with no node claims.
    const duplicateId = randomUUID();
    await secretStore().put(duplicateId, { appApiKey: sim.appKey, clientApiKey: sim.clientKey });
    const now = new Date().toISOString();
    await setAttributes(keys.instance(duplicateId), {
      kind: 'instance',
      instanceId: duplicateId,
      name: 'Same panel, registered again',
      baseUrl: sim.url.replace('127.0.0.1', 'localhost'),
      priority: 500,
      enabled: false,
      hasClientKey: true,
      serverCount: 0,
      createdAt: now,
      updatedAt: now,
    });
    // Each instance claims a server: the second server's record says it was deployed through the duplicate.
    await setAttributes(keys.server(accountId, onDuplicate.id), { instanceId: duplicateId });
    forgetProcessState();
    // The worst case: orphans removed without an admin (as before this setting existed).
    await setHold(false);
    try {
      ageAllPanelServers();
      const panelBefore = sim.state.servers.size;
      capture = captureMetrics();
      const report = await reconcileAll();
      capture.stop();
      expect(report).toMatchObject({ orphansRemoved: 0, orphansHeld: 0, recordsClosed: 0, errors: 0 });
      // Each instance's pass meets the other's server: two, at least, left alone.
      expect(report.claimedElsewhere).toBeGreaterThanOrEqual(2);
      expect(sim.state.servers.size).toBe(panelBefore);
      for (const s of [server, onDuplicate]) {
        expect(sim.server(s.identifier)).toBeDefined();
        expect(await getRaw(keys.server(accountId, s.id))).toMatchObject({ status: 'active' });
      }
      expect(capture.named('ReconcilerRepairs')).toEqual([]);
      // The backfill claimed nothing for the duplicate: the first instance holds every node.
      expect((await instances()).find((i) => i.id === duplicateId)).toMatchObject({ duplicateOf: instanceId, panelNodeUuids: null });
      expect(capture.named('PanelRegisteredTwice').map((l) => [l.value, l.fields.Instance])).toEqual([[1, duplicateId]]);
    } finally {
      await setHold(true);
      await setAttributes(keys.server(accountId, onDuplicate.id), { instanceId });
      expect((await api.call('DELETE', `/v1/admin/instances/${duplicateId}`)).status).toBe(200);
    }
  });
});

describe('orphans are held for an admin to confirm (the default)', () => {
  let orphan: { id: string; identifier: string };
  let accountId: string;

  it('an orphan is held, not deleted, listed for the admin, and counted once', async () => {
    const owner = await customer(api, 'orphan-owner@example.com', FUNDED);
    accountId = owner.id;
    orphan = await installedServer(owner.token);
    // A record that is no longer live (a compensation that failed): the panel server is an orphan.
    await setAttributes(keys.server(accountId, orphan.id), { status: 'deleted' });
    ageAllPanelServers();
    capture = captureMetrics();
    const report = await reconcileAll();
    const again = await reconcileAll();
    capture.stop();
    expect(report).toMatchObject({ orphansRemoved: 0, orphansHeld: 1, errors: 0 });
    expect(again).toMatchObject({ orphansRemoved: 0, orphansHeld: 1 });
    expect(sim.server(orphan.identifier)).toBeDefined();
    expect(capture.named('ReconcilerOrphans').map((l) => l.value)).toEqual([1, 1]);
    expect(capture.named('ReconcilerOrphansHeld').map((l) => l.value)).toEqual([1]);
    expect(capture.named('ReconcilerRepairs')).toEqual([]);

    const list = await api.call('GET', '/v1/admin/orphans');
    expect(list.status, list.text).toBe(200);
    expect(list.body.data).toEqual([
      expect.objectContaining({ id: orphan.id, instanceId, panelServerId: sim.server(orphan.identifier)!.id, name: body.name }),
    ]);
  });

  it('a held server that a record holds again is no orphan: confirm answers 409, drops the hold, deletes nothing', async () => {
    await setAttributes(keys.server(accountId, orphan.id), { status: 'active' });
    expectEnvelope(await api.call('POST', `/v1/admin/orphans/${orphan.id}/confirm`), 409, 'conflict');
    expect(sim.server(orphan.identifier)).toBeDefined();
    expect((await api.call('GET', '/v1/admin/orphans')).body.data).toEqual([]);
    await setAttributes(keys.server(accountId, orphan.id), { status: 'deleted' });
    expect(await reconcileAll()).toMatchObject({ orphansHeld: 1 });
  });

  it('confirmed by an admin: deleted from the panel, counted as a repair, the hold gone; a second confirm is 404', async () => {
    capture = captureMetrics();
    const res = await api.call('POST', `/v1/admin/orphans/${orphan.id}/confirm`);
    capture.stop();
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ id: orphan.id, removed: true });
    expect(sim.server(orphan.identifier)).toBeUndefined();
    expect(capture.named('ReconcilerRepairs').map((l) => [l.value, l.fields.Kind])).toEqual([[1, 'orphan']]);
    expect((await api.call('GET', '/v1/admin/orphans')).body.data).toEqual([]);
    expectEnvelope(await api.call('POST', `/v1/admin/orphans/${orphan.id}/confirm`), 404, 'not_found');
  });
});
