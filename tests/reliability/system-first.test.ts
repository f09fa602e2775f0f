import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { getRaw, setAttributes } from '../helpers/db.ts';
import { expectLedgerInvariant } from '../helpers/money.ts';
import { keys } from '../../shared/db/keys.ts';
import { monthOf } from '../../shared/pricing/hours.ts';
import { runPassInProcess } from '../../shared/billing/pass.ts';
import { reconcileAll } from '../../shared/servers/reconcile.ts';
import { runRepairs } from '../../shared/servers/repairs.ts';
import { withServerLease } from '../../shared/servers/lease.ts';
import { until } from '../helpers/until.ts';

/**
 * An abusive tenant against the system's own work (ARCHITECTURE.md, "One operation per server"):
 * twelve loops sending power signals over real HTTP to the server the billing pass is suspending,
 * the budget is suspending, or the reconciler is repairing. Each must still happen — in that pass,
 * or through the pending-repair pass within two minutes (driven here with its clock two minutes
 * ahead) — ten runs out of ten. And a resize whose every panel answer is lost ends with panel and
 * record agreeing within two minutes, by the in-process repair loop.
 *
 * The API's own request limit is raised and the simulator allows far more calls than a real panel:
 * request ceilings and the panel's call budget are other defences, tested elsewhere; here the
 * loops must reach the lease.
 */
process.env.RATE_LIMIT_PER_MINUTE = '1000000';
process.env.PANEL_TIMEOUT_MS = '1000';

let api: TestApi;
let sim: PanelSim;
beforeAll(async () => {
  api = await startTestApi({
    panel: { installMs: 20, transitionMs: 5, resourcesCacheMs: 0, rateLimits: { application: 100_000, client: 100_000 } },
    // The loop runs often here, so the resize case shows it repairing within seconds.
    repairs: { intervalMs: 100 },
  });
  sim = api.panel!.sim;
});
afterAll(async () => api?.stop());
afterEach(async () => {
  sim.faults.clear();
  await expectLedgerInvariant();
});

const RUNS = 10;
const LOOPS = 12;
const TWO_MINUTES = 2 * 60_000;
const body = { name: 'spammed', eggId: 1, ramMb: 768, cpuPercent: 100, diskMb: 2048 };

/** A funded account with one installed server. */
async function customerWithServer(email: string) {
  const token = await api.session(email);
  const { id } = (await api.call('GET', '/v1/account', { token })).body;
  await api.call('POST', `/v1/admin/users/${id}/credits`, { body: { amountCents: 10_000, note: 'test funds' } });
  const created = await api.call('POST', '/v1/servers', { token, body });
  expect(created.status, created.text).toBe(201);
  const server = created.body as { id: string; identifier: string };
  await until(async () => (await api.call('GET', `/v1/servers/${server.id}`, { token })).body.live.installStatus === 'installed');
  return { token, accountId: id as string, server };
}

/** Twelve loops of POST /power {"signal":"start"} until stopped; the statuses they got. */
function spam(token: string, serverId: string) {
  let stopped = false;
  const statuses: Record<string, number> = {};
  const loops = Array.from({ length: LOOPS }, async () => {
    while (!stopped) {
      const res = await api.call('POST', `/v1/servers/${serverId}/power`, { token, body: { signal: 'start' } });
      const key = `${res.status} ${res.body?.error?.code ?? ''}`.trim();
      statuses[key] = (statuses[key] ?? 0) + 1;
    }
  });
  return {
    statuses,
    /** Lets the loops get going. */
    started: () => new Promise((r) => setTimeout(r, 150)),
    stop: async () => {
      stopped = true;
      await Promise.all(loops);
      // Only answers the contract names: success, a held lease, a suspended server, no credit, a busy panel.
      const named = [
        '200',
        '409 operation_in_progress',
        '409 conflict',
        '402 insufficient_credit',
        '504 panel_timeout',
        '503 panel_unavailable',
      ];
      for (const key of Object.keys(statuses)) expect(named).toContain(key);
      return statuses;
    },
  };
}

/** The runs' customers, set up four at a time before the attacks (the attacks themselves run one after another). */
async function customers(prefix: string) {
  const out: Awaited<ReturnType<typeof customerWithServer>>[] = [];
  for (let i = 0; i < RUNS; i += 4) {
    out.push(
      ...(await Promise.all(Array.from({ length: Math.min(4, RUNS - i) }, (_, j) => customerWithServer(`${prefix}-${i + j}@example.com`)))),
    );
  }
  return out;
}

const recordOf = (accountId: string, serverId: string) => getRaw(keys.server(accountId, serverId)) as Promise<Record<string, any>>;

/** The pending-repair pass as it would run two minutes from now (every item queued now is due by then). */
const repairsWithinTwoMinutes = () => runRepairs(new Date(Date.now() + TWO_MINUTES));

describe('suspension cannot be dodged by power-signal spam', () => {
  it(`the billing pass suspends an account at −100 ¢, ${RUNS} of ${RUNS} runs`, async () => {
    const inPass: boolean[] = [];
    const runs = await customers('spam-pass');
    for (let run = 0; run < RUNS; run++) {
      const { token, accountId, server } = runs[run]!;
      const balance = (await api.call('GET', '/v1/account', { token })).body.balanceCents as number;
      await api.call('POST', `/v1/admin/users/${accountId}/credits`, { body: { amountCents: -(balance + 100), note: 'overdrawn' } });
      expect((await api.call('GET', '/v1/account', { token })).body.balanceCents).toBe(-100);

      const attack = spam(token, server.id);
      await attack.started();
      await runPassInProcess(new Date());
      inPass.push((await recordOf(accountId, server.id)).status === 'suspended');
      await repairsWithinTwoMinutes();
      const statuses = await attack.stop();

      expect((await recordOf(accountId, server.id)).status, `run ${run}: ${JSON.stringify(statuses)}`).toBe('suspended');
      expect(sim.server(server.identifier)!.status, `run ${run}`).toBe('suspended');
      // At or below zero, a signal is refused before the lease: 402, never the lease.
      expect(statuses['402 insufficient_credit'], `run ${run}: ${JSON.stringify(statuses)}`).toBeGreaterThan(0);
    }
    expect(inPass.filter(Boolean).length).toBe(RUNS);
  }, 240_000);

  it(`a budget at its cap with the suspend action suspends the server, ${RUNS} of ${RUNS} runs`, async () => {
    const runs = await customers('spam-budget');
    for (let run = 0; run < RUNS; run++) {
      const { token, accountId, server } = runs[run]!;
      const attack = spam(token, server.id);
      await attack.started();
      // The month's spend has reached the cap (a positive balance: the account-state check lets the signals through).
      await setAttributes(keys.account(accountId), { budgetCapCents: 100, budgetAction: 'suspend' });
      await setAttributes(keys.monthSpend(accountId, monthOf(Date.now())), { kind: 'month-spend', cents: 150 });
      await runPassInProcess(new Date());
      await repairsWithinTwoMinutes();
      const statuses = await attack.stop();

      const record = await recordOf(accountId, server.id);
      expect(record.status, `run ${run}: ${JSON.stringify(statuses)}`).toBe('suspended');
      expect(record.suspendedReason).toBe('budget');
      expect(sim.server(server.identifier)!.status, `run ${run}`).toBe('suspended');
    }
  }, 240_000);

  it(`the reconciler puts a changed panel build back to the record, ${RUNS} of ${RUNS} runs`, async () => {
    const runs = await customers('spam-repair');
    for (let run = 0; run < RUNS; run++) {
      const { token, accountId, server } = runs[run]!;
      // Someone changed the build on the panel: the record (what the customer pays for) wins.
      const panelServer = sim.state.servers.get(sim.server(server.identifier)!.id)!;
      panelServer.memory = 4096;
      const attack = spam(token, server.id);
      await attack.started();
      const report = await reconcileAll();
      await repairsWithinTwoMinutes();
      const statuses = await attack.stop();

      expect(sim.server(server.identifier)!.memory, `run ${run}: ${JSON.stringify({ report, statuses })}`).toBe(body.ramMb);
      expect((await recordOf(accountId, server.id)).resources.ramMb).toBe(body.ramMb);
    }
  }, 240_000);

  it('a system operation that meets a customer hold marks it: no customer takes it again until the system has had it', async () => {
    const { token, server } = await customerWithServer('mark@example.com');
    let releaseHold!: () => void;
    const held = new Promise<void>((r) => (releaseHold = r));
    // A customer operation in flight (as a slow resize would be) ...
    const customerHold = withServerLease(server.id, 'resize', () => held);
    await new Promise((r) => setTimeout(r, 50));
    // ... the system arrives and waits for it ...
    const order: string[] = [];
    const system = withServerLease(server.id, 'reconcile', async () => {
      order.push('system');
    });
    await new Promise((r) => setTimeout(r, 150));
    // ... and from now on a customer's signal is refused, even right after the hold ends.
    const during = await api.call('POST', `/v1/servers/${server.id}/power`, { token, body: { signal: 'start' } });
    expect(during.status, during.text).toBe(409);
    expect(during.body.error.code).toBe('operation_in_progress');
    releaseHold();
    await customerHold;
    const after = await api.call('POST', `/v1/servers/${server.id}/power`, { token, body: { signal: 'start' } });
    if (after.status === 200) order.push('customer');
    else expect(after.body.error.code).toBe('operation_in_progress');
    await system;
    // Refused, or let in only once the system had its turn.
    expect(order[0]).toBe('system');
  });
});

describe('panel and record agree when a resize ends', () => {
  it('every panel answer lost after the build is sent: 504, then the repair loop puts the record back on the panel', async () => {
    const { token, accountId, server } = await customerWithServer('resize-lost@example.com');
    const panelId = sim.server(server.identifier)!.id;
    // The build change lands on the panel, its answer (and every retry's) is lost ...
    sim.faults.add({ method: 'PATCH', path: /\/build$/, count: 3, effect: { kind: 'lost_response' } });
    const resizing = api.call('PATCH', `/v1/servers/${server.id}`, { token, body: { ramMb: 1024, cpuPercent: 100, diskMb: 2048 } });
    // ... and once it has landed, so is every read of the server (the read-back included).
    await until(async () => sim.server(panelId)!.memory === 1024);
    sim.faults.add({ method: 'GET', path: `/api/application/servers/${panelId}`, count: 3, effect: { kind: 'lost_response' } });
    const resized = await resizing;
    expect(resized.status, resized.text).toBe(504);
    expect(resized.body.error.code).toBe('panel_timeout');
    expect((await recordOf(accountId, server.id)).resources.ramMb).toBe(768);
    // The in-process loop (every 100 ms here, every minute under npm start and in AWS) repairs it.
    await until(async () => sim.server(panelId)!.memory === 768 && !(await getRaw(keys.serverRepair(server.id))), { ms: TWO_MINUTES });
  });

  it('the panel still silent when the repair runs: retried (backed off) until it answers', async () => {
    const { token, accountId, server } = await customerWithServer('resize-silent@example.com');
    const panelId = sim.server(server.identifier)!.id;
    sim.faults.add({ method: 'PATCH', path: /\/build$/, effect: { kind: 'lost_response' } });
    const resizing = api.call('PATCH', `/v1/servers/${server.id}`, { token, body: { ramMb: 1024, cpuPercent: 100, diskMb: 2048 } });
    await until(async () => sim.server(panelId)!.memory === 1024);
    sim.faults.add({ method: 'GET', path: '/api/application/servers', effect: { kind: 'lost_response' } });
    expect((await resizing).status).toBe(504);
    // Every answer still lost: the repair fails and is due again later, not dropped.
    await until(async () => Number((await getRaw(keys.serverRepair(server.id)))?.attempts ?? 0) >= 1);
    expect(sim.server(panelId)!.memory).toBe(1024);
    sim.faults.clear();
    await runRepairs(new Date(Date.now() + TWO_MINUTES));
    expect(sim.server(panelId)!.memory).toBe(768);
    expect((await recordOf(accountId, server.id)).resources.ramMb).toBe(768);
    expect(await getRaw(keys.serverRepair(server.id))).toBeUndefined();
  });
});
