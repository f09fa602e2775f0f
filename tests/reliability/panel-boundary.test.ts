process.env.PANEL_TIMEOUT_MS = '1500';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import * as accessPatterns from '../../shared/db/access-patterns.ts';
import { keys } from '../../shared/db/keys.ts';
import { sharesOf } from '../../shared/instances/call-budget-window.ts';
import { dynamoCallBudget, forgetProcessState, liftPause, panelBudgetId } from '../../shared/instances/call-budget.ts';
import { PLATFORM_CALLER, runAsCaller } from '../../shared/instances/caller.ts';
import { hourlyPriceCents } from '../../shared/pricing/index.ts';
import { getSettings } from '../../shared/settings/index.ts';
import { getRaw, setAttributes } from '../helpers/db.ts';
import { type ApiResponse, startTestApi, type TestApi } from '../helpers/stack.ts';
import { customer } from '../helpers/customer.ts';

/**
 * The panel as a scarce, shared resource, against DynamoDB Local and the simulator over HTTP with
 * the panel's real limits (240 Application / 720 Client requests a minute): one operation per
 * server at a time, compensation from the committed record, lost build answers settled by reading
 * the panel back, and the call budget every process shares.
 */
let api: TestApi;
let sim: PanelSim;
let instanceId: string;
beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 50, transitionMs: 20, resourcesCacheMs: 0 } });
  sim = api.panel!.sim;
  instanceId = api.panel!.instanceId;
});
afterAll(async () => api?.stop());
beforeEach(async () => {
  sim.faults.clear();
  await liftPause(instanceId);
});

const FUNDED = { grantCents: 1_000_000 };
const DEFAULT_LIMITS = { applicationPerMinute: 240, clientPerMinute: 720 };

async function deploy(token: string, name = 'boundary'): Promise<string> {
  const res = await api.call('POST', '/v1/servers', { token, body: { name, eggId: 1, ramMb: 256, cpuPercent: 25, diskMb: 512 } });
  if (res.status !== 201) throw new Error(`deploy failed: ${res.text}`);
  return res.body.id as string;
}

const onPanel = (serverId: string) => [...sim.state.servers.values()].find((s) => s.external_id === serverId);

/** Panel build, record and price agree: the invariant every race below must end in. */
async function expectAgreement(accountId: string, serverId: string): Promise<void> {
  const record = (await getRaw(keys.server(accountId, serverId))) as {
    status: string;
    resources: { ramMb: number; cpuPercent: number; diskMb: number };
    priceCentsPerHour: number;
  };
  const panel = onPanel(serverId);
  if (record.status === 'deleted') {
    expect(panel, 'a deleted record leaves no server on the panel').toBeUndefined();
    return;
  }
  expect(panel, 'a live record has its server on the panel').toBeDefined();
  expect({ ramMb: panel!.memory, cpuPercent: panel!.cpu, diskMb: panel!.disk }).toEqual(record.resources);
  expect(record.priceCentsPerHour).toBe(hourlyPriceCents(record.resources, (await getSettings()).prices));
}

function expectOkOrBusy(res: ApiResponse): void {
  if (res.status >= 200 && res.status < 300) return;
  if (res.status === 409 && res.body.error.code !== 'operation_in_progress') console.log(res.text);
  expect(res.status, res.text).toBe(409);
  expect(res.body.error.code, res.text).toBe('operation_in_progress');
  expect(Number(res.headers.get('retry-after')), JSON.stringify([...res.headers]) + res.text).toBeGreaterThan(0);
}

const sizes = [256, 512, 768, 1024, 1536, 2048, 3072, 4096];

describe('one operation per server at a time', () => {
  for (const n of [8, 14, 20]) {
    it(`${n} concurrent resizes of one server, three rounds: panel build == record == price every time`, async () => {
      const { token, id } = await customer(api, `resize-race-${n}@example.com`, FUNDED);
      const serverId = await deploy(token);
      for (let round = 0; round < 3; round++) {
        const results = await Promise.all(
          Array.from({ length: n }, (_, i) =>
            api.call('PATCH', `/v1/servers/${serverId}`, {
              token,
              body: { ramMb: sizes[(i + round) % sizes.length], cpuPercent: 25 + 25 * (i % 4), diskMb: 512 * (1 + (i % 3)) },
            }),
          ),
        );
        for (const res of results) expectOkOrBusy(res);
        expect(results.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(1);
        await expectAgreement(id, serverId);
      }
    });
  }

  it('resize, power and delete racing on one server: each is done or refused whole, and panel and record agree', async () => {
    const { token, id } = await customer(api, 'mixed-race@example.com', FUNDED);
    for (let round = 0; round < 3; round++) {
      const serverId = await deploy(token, `mixed-${round}`);
      const results = await Promise.all([
        api.call('PATCH', `/v1/servers/${serverId}`, { token, body: { ramMb: 2048, cpuPercent: 100, diskMb: 1024 } }),
        api.call('POST', `/v1/servers/${serverId}/power`, { token, body: { signal: 'start' } }),
        api.call('DELETE', `/v1/servers/${serverId}`, { token }),
        api.call('PATCH', `/v1/servers/${serverId}`, { token, body: { ramMb: 512, cpuPercent: 50, diskMb: 1024 } }),
      ]);
      for (const res of results) {
        // A resize that lost to a completed delete sees the server deleted: a plain conflict.
        if (res.status === 409 && res.body.error.code === 'conflict') continue;
        expectOkOrBusy(res);
      }
      await expectAgreement(id, serverId);
    }
  });

  it('a resize whose build answer is lost is settled by reading the panel back: 200, and panel == record', async () => {
    const { token, id } = await customer(api, 'lost-build@example.com', FUNDED);
    const serverId = await deploy(token);
    const panelId = onPanel(serverId)!.id;
    sim.faults.add({ method: 'PATCH', path: `/api/application/servers/${panelId}/build`, count: 1, effect: { kind: 'lost_response' } });
    const res = await api.call('PATCH', `/v1/servers/${serverId}`, { token, body: { ramMb: 1024, cpuPercent: 50, diskMb: 1024 } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.resources).toEqual({ ramMb: 1024, cpuPercent: 50, diskMb: 1024 });
    await expectAgreement(id, serverId);
  });

  it("a resize that grows a server counts the growth in the shared topology copy at once (deploys see the node's room shrink)", async () => {
    const { token, id } = await customer(api, 'growth@example.com', FUNDED);
    const serverId = await deploy(token);
    const record = (await getRaw(keys.server(id, serverId))) as { nodeId: number };
    const before = (await accessPatterns.panelTopology(instanceId, true))!.addedMemoryMb[String(record.nodeId)] ?? 0;
    const res = await api.call('PATCH', `/v1/servers/${serverId}`, { token, body: { ramMb: 2304, cpuPercent: 25, diskMb: 512 } });
    expect(res.status, res.text).toBe(200);
    const after = (await accessPatterns.panelTopology(instanceId, true))!.addedMemoryMb[String(record.nodeId)] ?? 0;
    expect(after - before).toBe(2048);
  });

  it('a resize keeps the swap and io an admin set on the panel', async () => {
    const { token } = await customer(api, 'keep-limits@example.com', FUNDED);
    const serverId = await deploy(token);
    const panelServer = onPanel(serverId)!;
    panelServer.swap = 512;
    panelServer.io = 800;
    const res = await api.call('PATCH', `/v1/servers/${serverId}`, { token, body: { ramMb: 1024, cpuPercent: 50, diskMb: 1024 } });
    expect(res.status, res.text).toBe(200);
    expect(onPanel(serverId)).toMatchObject({ memory: 1024, cpu: 50, disk: 1024, swap: 512, io: 800 });
  });
});

describe('the shared call budget', () => {
  it('the panel answering 429 with Retry-After: 60 during a deploy: 503 panel_unavailable with Retry-After, nothing recorded or charged, and every later call waits without reaching the panel', async () => {
    const { token, id } = await customer(api, 'throttled-deploy@example.com', FUNDED);
    const before = (await getRaw(keys.account(id)))!.balanceCents;
    sim.faults.add({ method: '*', path: '/api/', effect: { kind: 'rate_limit', retryAfter: 60 } });
    const res = await api.call('POST', '/v1/servers', {
      token,
      body: { name: 'throttled', eggId: 1, ramMb: 256, cpuPercent: 25, diskMb: 512 },
    });
    expect(res.status, res.text).toBe(503);
    expect(res.body.error.code).toBe('panel_unavailable');
    expect(Number(res.headers.get('retry-after')), JSON.stringify([...res.headers]) + res.text).toBeGreaterThan(0);

    // The pause holds in every process: a fresh process state still finds it in the table.
    forgetProcessState();
    const hits = sim.faults.list()[0]!.hits;
    const again = await api.call('POST', '/v1/servers', {
      token,
      body: { name: 'throttled again', eggId: 1, ramMb: 256, cpuPercent: 25, diskMb: 512 },
    });
    expect(again.status, again.text).toBe(503);
    expect(again.body.error.code).toBe('panel_unavailable');
    expect(sim.faults.list()[0]!.hits, 'no request reached the panel while paused').toBe(hits);

    expect((await api.call('GET', '/v1/servers', { token })).body.data).toEqual([]);
    expect(await getRaw(keys.account(id))).toMatchObject({ balanceCents: before, serverCount: 0 });
    sim.faults.clear();
  });

  it('a panel that is down during a deploy: 503 panel_unavailable with Retry-After, nothing recorded or charged', async () => {
    const { token, id } = await customer(api, 'down-deploy@example.com', FUNDED);
    const before = (await getRaw(keys.account(id)))!.balanceCents;
    const serversBefore = sim.state.servers.size;
    sim.faults.add({ method: '*', path: '/api/', effect: { kind: 'status', status: 503 } });
    const res = await api.call('POST', '/v1/servers', {
      token,
      body: { name: 'throttled', eggId: 1, ramMb: 256, cpuPercent: 25, diskMb: 512 },
    });
    expect(res.status, res.text).toBe(503);
    expect(res.body.error.code).toBe('panel_unavailable');
    expect(Number(res.headers.get('retry-after')), JSON.stringify([...res.headers]) + res.text).toBeGreaterThan(0);
    expect(await getRaw(keys.account(id))).toMatchObject({ balanceCents: before, serverCount: 0 });
    expect(sim.state.servers.size).toBe(serversBefore);
  });

  it('customers stop short of the system reserve; one account cannot take more than its share; the platform fills the budget', async () => {
    // A budget of its own (an id no other test uses), on the real table.
    const budget = dynamoCallBudget('budget-probe', { applicationPerMinute: 40, clientPerMinute: 80 });
    const shares = sharesOf(40, 'application');
    expect(shares).toMatchObject({ budgetPerMinute: 39, systemReserve: 6, readsPerAccountPerMinute: 6 });
    // One minute holds every account's count: the stack's clock holds a fresh one.
    await api.clock.inFreshMinute(async () => {
      const spend = async (caller: string, kind: 'read' | 'write') =>
        runAsCaller(caller, () => budget.spend('application', kind)).then(
          () => 'ok',
          (err: { code?: string }) => err.code,
        );
      const first = await Promise.all(Array.from({ length: 10 }, () => spend('account-a', 'read')));
      expect(first.filter((r) => r === 'ok').length, 'one account: its share, no more').toBe(6);
      expect(first.filter((r) => r === 'panel_unavailable').length).toBe(4);

      // Five more accounts, each within its share: together they stop at the system reserve.
      const others = await Promise.all(
        ['b', 'c', 'd', 'e', 'f'].flatMap((a) => Array.from({ length: 6 }, () => spend(`account-${a}`, 'read'))),
      );
      expect(others.filter((r) => r === 'ok').length, 'customers stop short of the reserve').toBe(39 - 6 - 6);

      const platform = await Promise.all(Array.from({ length: 10 }, () => spend(PLATFORM_CALLER, 'write')));
      expect(platform.filter((r) => r === 'ok').length, "the reserve is the platform's").toBe(6);
      expect(await spend(PLATFORM_CALLER, 'write')).toBe('panel_unavailable');
    });
  });

  it('admins see the budget: its shape and what this minute has spent', async () => {
    const { token } = await customer(api, 'budget-view@example.com', FUNDED);
    await deploy(token, 'budget-view');
    const res = await api.call('GET', '/v1/admin/instances');
    const instance = res.body.data.find((i: { id: string }) => i.id === instanceId);
    expect(instance.panelRateLimits).toEqual({ applicationPerMinute: 240, clientPerMinute: 720 });
    expect(instance.callBudget.application).toMatchObject({ limitPerMinute: 240, budgetPerMinute: 235, systemReserve: 36 });
    expect(instance.callBudget.application.usedThisMinute).toBeGreaterThan(0);
    expect(instance.callBudget.application.pausedUntil).toBeNull();
  });
});

describe('the newcomer slice at a client limit of 40 a minute', () => {
  it("five accounts calling at their share in this and the previous minute: a sixth account's first resources, power, console and files calls are served", async () => {
    const limits = { applicationPerMinute: 240, clientPerMinute: 40 };
    const established = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((a) => customer(api, `steady-${a}@example.com`, FUNDED)));
    const newcomer = await customer(api, 'newcomer@example.com', FUNDED);
    const servers = await Promise.all([...established, newcomer].map((c, i) => deploy(c.token, `slice-${i}`)));
    const patched = await api.call('PATCH', `/v1/admin/instances/${instanceId}`, { body: { panelRateLimits: limits } });
    expect(patched.status, patched.text).toBe(200);
    try {
      const { baseUrl } = (await accessPatterns.instanceById(instanceId))!;
      const budgetId = panelBudgetId(baseUrl);
      const shares = sharesOf(40, 'client');
      // A client window of this test's own: the earlier tests' calls leave it (an old bucket empties it at the next spend).
      await setAttributes(keys.panelCallBudget(budgetId, 'client'), { cur: 0, total: 0 });
      forgetProcessState();
      // The five called at their share in the previous minute (and, should this test cross into the next minute, this one).
      const minute = Math.floor(api.clock.now() / 60_000) * 60_000;
      for (const { id } of established)
        for (const [start, used] of [
          [minute - 60_000, shares.readsPerAccountPerMinute],
          [minute, 0],
        ] as const)
          await setAttributes(keys.panelCallBudgetAccount(budgetId, 'client', id, 'control', start), {
            used,
            expiresAt: minute / 1000 + 600,
          });

      // Each of the five lists its files (one panel call each, never cached) past its share, all at once.
      const steady = await Promise.all(
        established.map(async ({ token }, i) => {
          const answers: number[] = [];
          for (let n = 0; n < shares.readsPerAccountPerMinute + 2; n++)
            answers.push((await api.call('GET', `/v1/servers/${servers[i]}/files`, { token })).status);
          return answers;
        }),
      );
      expect(steady.flat().filter((s) => s === 503).length, 'the five reached their share').toBeGreaterThan(0);

      const id = servers[5]!;
      const { token } = newcomer;
      const firsts = [
        await api.call('GET', `/v1/servers/${id}/resources`, { token }),
        await api.call('POST', `/v1/servers/${id}/power`, { token, body: { signal: 'start' } }),
        await api.call('GET', `/v1/servers/${id}/console`, { token }),
        await api.call('GET', `/v1/servers/${id}/files`, { token }),
      ];
      for (const res of firsts) expect(res.status, res.text).toBeLessThan(300);
    } finally {
      await api.call('PATCH', `/v1/admin/instances/${instanceId}`, { body: { panelRateLimits: DEFAULT_LIMITS } });
    }
  }, 90_000);
});
