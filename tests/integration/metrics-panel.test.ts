import { createServer } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type PanelSim, startPanelSim } from '../../dev/panel-sim/index.ts';
import { keys } from '../../shared/db/keys.ts';
import { liftPause } from '../../shared/instances/call-budget.ts';
import { sharesOf } from '../../shared/instances/call-budget-window.ts';
import { getInstance, panelClientFor } from '../../shared/instances/index.ts';
import { METRICS } from '../../shared/observability/metrics.ts';
import { queueRepair } from '../../shared/servers/pending.ts';
import { RECENT_MS, reconcileAll } from '../../shared/servers/reconcile.ts';
import { runRepairs } from '../../shared/servers/repairs.ts';
import { customer } from '../helpers/customer.ts';
import { getRaw, setAttributes } from '../helpers/db.ts';
import { captureMetrics, type EmittedMetric } from '../helpers/metrics.ts';
import { panelRequests, totalRequests } from '../helpers/panel-requests.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * The metric lines of the panel boundary and the repair queue (issue 27, item 1), counted against
 * what really happened: the simulator's own request log over real HTTP, DynamoDB Local, the
 * reconciler and the repair pass run in this process. The repair loop and the webhook loop are
 * off, so every panel request in a test is one the test caused.
 */
let api: TestApi;
let sim: PanelSim;
let instanceId: string;
beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0 }, repairs: false, webhooks: false });
  sim = api.panel!.sim;
  instanceId = api.panel!.instanceId;
});
afterAll(async () => api?.stop());
let capture: ReturnType<typeof captureMetrics> | undefined;
afterEach(async () => {
  capture?.stop();
  capture = undefined;
  sim.faults.clear();
  await liftPause(instanceId);
});

const FUNDED = { grantCents: 100_000 };
const deploy = (token: string, name: string) =>
  api.call('POST', '/v1/servers', { token, body: { name, eggId: 1, ramMb: 256, cpuPercent: 25, diskMb: 512 } });

/** The requests the simulator received between two reads of its log, by `METHOD /path`. */
const since = (before: Record<string, number>, after: Record<string, number>): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (v !== (before[k] ?? 0)) out[k] = v - (before[k] ?? 0);
  return out;
};

/** The lines' count by the values of some of their fields: `{ 'application/read': 3, … }`. */
const countBy = (lines: EmittedMetric[], ...fields: string[]): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const l of lines) {
    const k = fields.map((f) => String(l.fields[f])).join('/');
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
};

/** A simulator log key's API and budget class: Client API calls are control, Application GETs reads, the rest writes. */
const classOfRequest = (key: string): string => {
  const [method, path] = key.split(' ') as [string, string];
  if (path.startsWith('/api/client')) return 'client/control';
  return method === 'GET' ? 'application/read' : 'application/write';
};

/** Each line is declared with the dimension sets and unit of its entry in METRICS. */
const expectDeclared = (lines: EmittedMetric[]) => {
  for (const l of lines) {
    expect(l.sets).toEqual(METRICS[l.name].sets);
    expect(l.unit).toBe(METRICS[l.name].unit);
  }
};

async function installedServer(token: string, name: string): Promise<{ id: string; identifier: string; panelId: number }> {
  const created = await deploy(token, name);
  expect(created.status, created.text).toBe(201);
  await until(() => sim.server(created.body.identifier)?.status === null, { what: 'install' });
  return { id: created.body.id, identifier: created.body.identifier, panelId: sim.server(created.body.identifier)!.id };
}

describe('panel calls', () => {
  it('a deploy through the API: one PanelCalls line per request the simulator received, each with its instance, API and class', async () => {
    const { token } = await customer(api, 'metrics-deploy@example.com', FUNDED);
    const before = await panelRequests(sim);
    capture = captureMetrics();
    const created = await deploy(token, 'metrics-deploy');
    expect(created.status, created.text).toBe(201);
    capture.stop();
    const received = since(before, await panelRequests(sim));

    const calls = capture.named('PanelCalls');
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.length).toBe(totalRequests(received));
    expect(calls.every((l) => l.value === 1 && l.fields.Instance === instanceId)).toBe(true);
    const byClass: Record<string, number> = {};
    for (const [key, n] of Object.entries(received)) byClass[classOfRequest(key)] = (byClass[classOfRequest(key)] ?? 0) + n;
    expect(countBy(calls, 'Api', 'CallClass')).toEqual(byClass);
    // The deploy writes (the create) as well as reads.
    expect(byClass['application/write']).toBeGreaterThanOrEqual(1);

    // Every spend reports the window's use: one line per call, and each the window's total after
    // that spend, so the totals of one API are consecutive (each spend counts one more).
    const used = capture.named('PanelBudgetUsed');
    expect(countBy(used, 'Instance', 'Api')).toEqual(countBy(calls, 'Instance', 'Api'));
    const budget = sharesOf(240, 'application').budgetPerMinute;
    const totals = used
      .filter((l) => l.fields.Api === 'application')
      .map((l) => Math.round((l.value * budget) / 100))
      .sort((a, b) => a - b);
    expect(totals).toEqual(totals.map((_, i) => totals[0]! + i));
    expect(used.every((l) => l.value > 0 && l.value <= 100)).toBe(true);

    expect(capture.named('PanelUnreachable')).toEqual([]);
    expect(capture.named('PanelRateLimited')).toEqual([]);
    expect(capture.named('PanelPaused')).toEqual([]);
    expectDeclared(capture.metrics);
  });

  it('a panel 429: one PanelRateLimited line, then PanelPaused for each call refused while paused, none of them sent', async () => {
    const { token } = await customer(api, 'metrics-429@example.com', FUNDED);
    // The panel's request-rate limiter answers the next Application call 429 with a long Retry-After.
    sim.faults.add({ path: '/api/application', count: 1, effect: { kind: 'rate_limit', retryAfter: 30 } });
    const before = await panelRequests(sim);
    capture = captureMetrics();
    const first = await deploy(token, 'metrics-429');
    expectEnvelope(first, 503, 'panel_unavailable');
    const afterFirst = await panelRequests(sim);
    const pausedBefore = capture.named('PanelPaused').length;
    const second = await deploy(token, 'metrics-429-again');
    expectEnvelope(second, 503, 'panel_unavailable');
    capture.stop();
    const afterSecond = await panelRequests(sim);

    expect(capture.named('PanelRateLimited').map((l) => [l.value, l.fields.Instance])).toEqual([[1, instanceId]]);
    // The second deploy sent nothing: its calls were refused here, each one a PanelPaused line.
    expect(since(afterFirst, afterSecond)).toEqual({});
    const paused = capture.named('PanelPaused');
    expect(paused.length - pausedBefore).toBeGreaterThanOrEqual(1);
    expect(paused.every((l) => l.value === 1 && l.fields.Instance === instanceId)).toBe(true);
    // Every request sent (the 429'd one included) is one PanelCalls line; refused ones are not.
    expect(capture.named('PanelCalls').length).toBe(totalRequests(since(before, afterSecond)));
    expect(capture.named('PanelUnreachable')).toEqual([]);
    expectDeclared(capture.metrics);
  });

  it('an instance whose URL is a closed port: every attempt is a PanelUnreachable line of that instance', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const registered = await api.call('POST', '/v1/admin/instances', {
      body: { name: 'Closed port', baseUrl: `http://127.0.0.1:${port}`, appApiKey: sim.appKey, clientApiKey: sim.clientKey },
    });
    expect(registered.status, registered.text).toBe(201);
    const dead = registered.body.id as string;
    try {
      capture = captureMetrics();
      const report = await api.call('POST', `/v1/admin/instances/${dead}/test`);
      expect(report.status, report.text).toBe(200);
      capture.stop();
      const calls = capture.named('PanelCalls');
      const unreachable = capture.named('PanelUnreachable');
      expect(calls.length).toBeGreaterThan(0);
      expect(calls.every((l) => l.fields.Instance === dead)).toBe(true);
      expect(unreachable.length).toBe(calls.length);
      expect(unreachable.every((l) => l.value === 1 && l.fields.Instance === dead)).toBe(true);
      expectDeclared(capture.metrics);
    } finally {
      expect((await api.call('DELETE', `/v1/admin/instances/${dead}`)).status).toBe(200);
    }
  });

  it("a proxy's 502 and 504 are unreachable; the panel's 504 about Wings and its backup throttle's 429 are answers", async () => {
    const client = await panelClientFor(await getInstance(instanceId));
    capture = captureMetrics();
    sim.faults.add({ method: 'GET', path: '/api/application/nodes/1', count: 1, effect: { kind: 'status', status: 502 } });
    expect((await client.getNode(1)).id).toBe(1); // retried after the 502
    sim.faults.add({
      method: 'GET',
      path: '/api/application/nodes/1',
      count: 1,
      effect: { kind: 'status', status: 504, code: 'HttpException' },
    });
    expect((await client.getNode(1)).id).toBe(1);
    expect(capture.named('PanelUnreachable').length).toBe(2);
    sim.faults.add({ method: 'GET', path: '/api/application/nodes/1', count: 1, effect: { kind: 'status', status: 504 } });
    await expect(client.getNode(1)).rejects.toMatchObject({ code: 'panel_timeout', panelStatus: 504 });
    // The panel's own logic refusing (TooManyRequestsHttpException), not its request-rate limiter: that
    // call fails alone (429 rate_limited), no pause, no PanelRateLimited.
    sim.faults.add({
      method: 'GET',
      path: '/api/application/nodes/1',
      count: 1,
      effect: { kind: 'status', status: 429, code: 'TooManyRequestsHttpException', detail: 'Too many backups.' },
    });
    await expect(client.getNode(1)).rejects.toMatchObject({ code: 'rate_limited', statusCode: 429, panelStatus: 429 });
    capture.stop();
    expect(capture.named('PanelUnreachable').length).toBe(2);
    expect(capture.named('PanelRateLimited')).toEqual([]);
    expect(capture.named('PanelCalls').length).toBe(6);
  });
});

describe('the call budget', () => {
  it('PanelBudgetUsed climbs with each spend to 100 %; the next call is one PanelBudgetExhausted line of its class, not sent', async () => {
    // Another panel (a second simulator: the same one twice is refused) whose limit of 10 a minute
    // is a budget of 9 (98 %); its registration asked its kind (Pelican's eggs: 404, then nests) and
    // read its nodes (three calls), the rest is spent here.
    const other = await startPanelSim({});
    const registered = await api.call('POST', '/v1/admin/instances', {
      body: {
        name: 'Small budget',
        baseUrl: other.url,
        appApiKey: other.appKey,
        clientApiKey: other.clientKey,
        panelRateLimits: { applicationPerMinute: 10, clientPerMinute: 10 },
      },
    });
    expect(registered.status, registered.text).toBe(201);
    const small = registered.body.id as string;
    try {
      const client = await panelClientFor(await getInstance(small));
      const before = await panelRequests(other);
      capture = captureMetrics();
      for (let i = 0; i < 6; i++) await client.getNode(1);
      await expect(client.getNode(1)).rejects.toMatchObject({ code: 'panel_unavailable', sent: false });
      capture.stop();
      expect(totalRequests(since(before, await panelRequests(other)))).toBe(6);
      const used = capture.named('PanelBudgetUsed');
      expect(used.map((l) => l.value)).toEqual([44.4, 55.6, 66.7, 77.8, 88.9, 100]);
      expect(used.every((l) => l.fields.Instance === small && l.fields.Api === 'application')).toBe(true);
      expect(capture.named('PanelBudgetExhausted').map((l) => [l.value, l.fields.Instance, l.fields.CallClass])).toEqual([
        [1, small, 'read'],
      ]);
      expect(capture.named('PanelCalls').length).toBe(6);
      expectDeclared(capture.metrics);
    } finally {
      expect((await api.call('DELETE', `/v1/admin/instances/${small}`)).status).toBe(200);
      await other.close();
    }
  });
});

describe('the repair queue and the reconciler', () => {
  it('the repair pass reports the due items and their oldest age, 0 once drained, and each repair that changed something', async () => {
    capture = captureMetrics();
    await runRepairs(new Date());
    expect(capture.named('PendingWorkDepth').map((l) => l.value)).toEqual([0]);
    expect(capture.named('PendingWorkOldestAge').map((l) => l.value)).toEqual([0]);
    capture.stop();

    const { token, id: accountId } = await customer(api, 'metrics-repair@example.com', FUNDED);
    const server = await installedServer(token, 'metrics-repair');
    // A resize whose answer was lost: the panel has other limits than the record.
    sim.state.servers.get(server.panelId)!.memory = 4096;
    await queueRepair({ accountId, serverId: server.id }, 'panel');
    const queuedAt = Date.parse((await getRaw(keys.serverRepair(server.id)))!.queuedAt as string);
    const at = new Date(queuedAt + 7_500);

    capture = captureMetrics();
    const summary = await runRepairs(at);
    capture.stop();
    expect(summary).toEqual({ due: 1, repaired: 1, failed: 0 });
    expect(sim.server(server.identifier)!.memory).toBe(256);
    expect(capture.named('PendingWorkDepth').map((l) => l.value)).toEqual([1]);
    expect(capture.named('PendingWorkOldestAge').map((l) => l.value)).toEqual([7]);
    expect(capture.named('ReconcilerRepairs').map((l) => [l.value, l.fields.Kind])).toEqual([[1, 'limits']]);
    expectDeclared(capture.metrics);

    // Panel and record agree now: the queue is empty, the next run says so, and nothing is repaired.
    capture = captureMetrics();
    await runRepairs(new Date(at.getTime() + 60_000));
    capture.stop();
    expect(capture.named('PendingWorkDepth').map((l) => l.value)).toEqual([0]);
    expect(capture.named('PendingWorkOldestAge').map((l) => l.value)).toEqual([0]);
    expect(capture.named('ReconcilerRepairs')).toEqual([]);
  });

  it('a suspension the repair pass puts right is a ReconcilerRepairs line of Kind suspension', async () => {
    const { token, id: accountId } = await customer(api, 'metrics-suspend@example.com', FUNDED);
    const server = await installedServer(token, 'metrics-suspend');
    const balance = (await api.call('GET', '/v1/account', { token })).body.balanceCents as number;
    const debit = await api.call('POST', `/v1/admin/users/${accountId}/credits`, {
      body: { amountCents: -(balance + 100), note: 'overdrawn' },
    });
    expect(debit.status, debit.text).toBe(200);
    await queueRepair({ accountId, serverId: server.id }, 'suspension');

    capture = captureMetrics();
    expect(await runRepairs(new Date(Date.now() + 1000))).toEqual({ due: 1, repaired: 1, failed: 0 });
    capture.stop();
    expect(sim.server(server.identifier)!.status).toBe('suspended');
    expect(capture.named('ReconcilerRepairs').map((l) => [l.value, l.fields.Kind])).toEqual([[1, 'suspension']]);
  });

  it('a reconcile run: an orphan is a ReconcilerOrphans line and its removal a repair; a vanished server closes its record', async () => {
    const { token, id: accountId } = await customer(api, 'metrics-reconcile@example.com', FUNDED);
    // An orphan: a panel server of ours whose record is no longer live (a compensation that failed).
    const orphan = await installedServer(token, 'metrics-orphan');
    await setAttributes(keys.server(accountId, orphan.id), { status: 'deleted' });
    sim.state.servers.get(orphan.panelId)!.created_at = new Date(Date.now() - RECENT_MS - 1000);
    // A recent one is left alone (a deploy may still be recording it): not counted.
    const recent = await installedServer(token, 'metrics-recent');
    await setAttributes(keys.server(accountId, recent.id), { status: 'deleted' });
    // A live record whose panel server was deleted by hand on the panel.
    const vanished = await installedServer(token, 'metrics-vanished');
    sim.state.deleteServer(vanished.panelId);

    capture = captureMetrics();
    const report = await reconcileAll();
    capture.stop();
    // Held for an admin (the default), then removed when one confirms.
    expect(report).toMatchObject({ orphansRemoved: 0, orphansHeld: 1, recordsClosed: 1, limitsRestored: 0, errors: 0 });
    expect(sim.server(orphan.identifier)).toBeDefined();
    expect(sim.server(recent.identifier)).toBeDefined();
    expect(capture.named('ReconcilerOrphans').map((l) => l.value)).toEqual([1]);
    expect(capture.named('ReconcilerOrphansHeld').map((l) => l.value)).toEqual([1]);
    expect(countBy(capture.named('ReconcilerRepairs'), 'Kind')).toEqual({ closed: 1 });
    expectDeclared(capture.metrics);
    capture = captureMetrics();
    const confirmed = await api.call('POST', `/v1/admin/orphans/${orphan.id}/confirm`);
    capture.stop();
    expect(confirmed.status, confirmed.text).toBe(200);
    expect(sim.server(orphan.identifier)).toBeUndefined();
    expect(countBy(capture.named('ReconcilerRepairs'), 'Kind')).toEqual({ orphan: 1 });
  });
});
