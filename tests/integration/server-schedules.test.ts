import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { schedulesOf } from '../../dev/panel-sim/schedules.ts';
import { customer } from '../helpers/customer.ts';
import { panelCalls as panelCallsOf, panelRequests, totalRequests } from '../helpers/panel-requests.ts';
import { expectEnvelope, startTestApi, type TestApi } from '../helpers/stack.ts';
import { until } from '../helpers/until.ts';

/**
 * Server schedules (shared/servers/schedules.ts) against the simulator's ScheduleController,
 * ScheduleTaskController and its queue worker (dev/panel-sim/schedules.ts): the panel's validation
 * mirrored in our schemas (400 naming the field, no panel call, nothing changed), the
 * `schedulesPerServer` limit under concurrent creates, the panel calls each operation costs, run
 * now, and a schedule running on the simulator at its minute (the simulator's control makes that
 * minute come; task offsets are scaled to 0 so no test waits).
 */
let api: TestApi;
let sim: PanelSim;
let token: string;
let server: { id: string; identifier: string };

const panelCalls = <T>(fn: () => Promise<T>) => panelCallsOf(sim, fn);
const path = (p = '') => `/v1/servers/${server.id}/schedules${p}`;
const simSchedules = () =>
  schedulesOf(sim.wings).schedules.filter((s) => s.serverId === sim.state.serverByIdentifier(server.identifier)!.id);
const runDue = async (at: string) =>
  (await (await fetch(`${sim.url}/__sim/schedules/run-due`, { method: 'POST', body: JSON.stringify({ at }) })).json()) as {
    started: number[];
  };
const daily = { minute: '0', hour: '4', dayOfMonth: '*', month: '*', dayOfWeek: '*' };
const activity = async (action: string) => {
  const res = await api.call('GET', '/v1/account/logs?limit=100', { token });
  return (res.body.data as Array<{ action: string; target: string; result: string; details?: Record<string, unknown> }>).filter(
    (e) => e.action === action,
  );
};
const deleteAll = async () => {
  for (const s of (await api.call('GET', path(), { token })).body.data) await api.call('DELETE', path(`/${s.id}`), { token });
};

beforeAll(async () => {
  api = await startTestApi({ panel: { installMs: 200, transitionMs: 20, resourcesCacheMs: 0, scheduleOffsetScale: 0 } });
  sim = api.panel!.sim;
  ({ token } = await customer(api, 'server-schedules@example.com', { grantCents: 10_000 }));
  const created = await api.call('POST', '/v1/servers', {
    token,
    body: { name: 'sched', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
  });
  expect(created.status, created.text).toBe(201);
  server = { id: created.body.id, identifier: created.body.identifier };
  await until(async () => (await api.call('GET', `/v1/servers/${server.id}`, { token })).body.live?.installStatus === 'installed');
});
afterAll(async () => {
  await api?.call('PUT', '/v1/admin/settings', { body: { schedulesPerServer: 10 } });
  await api?.stop();
});

describe('create, list, view, update, delete', () => {
  let scheduleId: string;

  it('a schedule with one task costs 2 panel calls and answers the schedule with its next run', async () => {
    const { result: res, calls } = await panelCalls(() =>
      api.call('POST', path(), {
        token,
        body: { name: 'nightly restart', cron: daily, tasks: [{ action: 'power', payload: 'restart' }] },
      }),
    );
    expect(res.status, res.text).toBe(201);
    expect(totalRequests(calls)).toBe(2);
    expect(Object.keys(calls).sort()).toEqual(
      [`POST /api/client/servers/${server.identifier}/schedules`, expect.stringMatching(/\/schedules\/\d+\/tasks$/)].sort(),
    );
    expect(res.body).toMatchObject({
      name: 'nightly restart',
      cron: daily,
      active: true,
      onlyWhenOnline: false,
      processing: false,
      lastRunAt: null,
      tasks: [{ sequence: 1, action: 'power', payload: 'restart', timeOffsetSeconds: 0, continueOnFailure: false }],
    });
    const next = new Date(res.body.nextRunAt);
    expect([next.getUTCHours(), next.getUTCMinutes()]).toEqual([4, 0]);
    scheduleId = res.body.id;
    expect((await activity('servers.schedules.create'))[0]).toMatchObject({
      target: `server:${server.id}`,
      result: 'success',
      details: { scheduleId, name: 'nightly restart', tasks: ['power'] },
    });
  });

  it('n tasks cost 1 + n calls, in order', async () => {
    const tasks = [
      { action: 'command', payload: 'say restarting in 60 s' },
      { action: 'power', payload: 'restart', timeOffsetSeconds: 60 },
      { action: 'backup', timeOffsetSeconds: 120, continueOnFailure: true },
    ];
    const { result: res, calls } = await panelCalls(() => api.call('POST', path(), { token, body: { name: 'three', cron: daily, tasks } }));
    expect(res.status, res.text).toBe(201);
    expect(totalRequests(calls)).toBe(4);
    expect(res.body.tasks.map((t: { sequence: number; action: string }) => [t.sequence, t.action])).toEqual([
      [1, 'command'],
      [2, 'power'],
      [3, 'backup'],
    ]);
    await api.call('DELETE', path(`/${res.body.id}`), { token });
  });

  it('list and view cost one call each; the list names the limit', async () => {
    const { result: list, calls } = await panelCalls(() => api.call('GET', path(), { token }));
    expect(list.status, list.text).toBe(200);
    expect(calls).toEqual({ [`GET /api/client/servers/${server.identifier}/schedules`]: 1 });
    expect(list.body).toMatchObject({ limit: 10, data: [{ id: scheduleId, tasks: [{ action: 'power' }] }] });
    const { result: one, calls: viewCalls } = await panelCalls(() => api.call('GET', path(`/${scheduleId}`), { token }));
    expect(one.body.id).toBe(scheduleId);
    expect(totalRequests(viewCalls)).toBe(1);
  });

  it('update: a read and a write (2 calls); tasks replace the list position by position', async () => {
    const { result: res, calls } = await panelCalls(() =>
      api.call('PATCH', path(`/${scheduleId}`), { token, body: { cron: { ...daily, hour: '5' }, onlyWhenOnline: true } }),
    );
    expect(res.status, res.text).toBe(200);
    expect(totalRequests(calls)).toBe(2);
    expect(res.body).toMatchObject({ cron: { hour: '5' }, onlyWhenOnline: true, tasks: [{ action: 'power' }] });
    expect(new Date(res.body.nextRunAt).getUTCHours()).toBe(5);
    const tasks = await api.call('PATCH', path(`/${scheduleId}`), {
      token,
      body: {
        tasks: [
          { action: 'command', payload: 'say bye' },
          { action: 'power', payload: 'stop', timeOffsetSeconds: 30 },
        ],
      },
    });
    expect(tasks.status, tasks.text).toBe(200);
    expect(tasks.body.tasks.map((t: { action: string; payload: string }) => [t.action, t.payload])).toEqual([
      ['command', 'say bye'],
      ['power', 'stop'],
    ]);
  });

  it('delete costs one call; the schedule is gone and an unknown one is 404', async () => {
    const { result: res, calls } = await panelCalls(() => api.call('DELETE', path(`/${scheduleId}`), { token }));
    expect(res.status, res.text).toBe(200);
    expect(calls).toEqual({ [`DELETE /api/client/servers/${server.identifier}/schedules/${scheduleId}`]: 1 });
    expect(simSchedules()).toEqual([]);
    expectEnvelope(await api.call('GET', path(`/${scheduleId}`), { token }), 404, 'not_found');
    expectEnvelope(await api.call('DELETE', path(`/${scheduleId}`), { token }), 404, 'not_found');
  });
});

describe("validation: the panel's rules are our 400 naming the field, with no panel call", () => {
  const task = (t: Record<string, unknown>) => ({ name: 'bad', cron: daily, tasks: [t] });
  it.each([
    ['cron.minute', { name: 'x', cron: { ...daily, minute: '60' } }],
    ['cron.hour', { name: 'x', cron: { ...daily, hour: '24' } }],
    ['cron.dayOfMonth', { name: 'x', cron: { ...daily, dayOfMonth: '0' } }],
    ['cron.month', { name: 'x', cron: { ...daily, month: '13' } }],
    ['cron.dayOfWeek', { name: 'x', cron: { ...daily, dayOfWeek: '8' } }],
    ['cron.minute', { name: 'x', cron: { ...daily, minute: '*/0' } }],
    ['cron.minute', { name: 'x', cron: { ...daily, minute: '0 0' } }],
    ['cron.dayOfMonth', { name: 'x', cron: { ...daily, dayOfMonth: '30', month: '2' } }],
    ['cron.month', { name: 'x', cron: { minute: '0', hour: '4', dayOfMonth: '*', dayOfWeek: '*' } }],
    ['name', { name: '', cron: daily }],
    ['name', { name: 'x'.repeat(192), cron: daily }],
    ['tasks', { name: 'x', cron: daily, tasks: Array.from({ length: 11 }, () => ({ action: 'command', payload: 'say' })) }],
    ['tasks.0.action', task({ action: 'reboot', payload: 'x' })],
    ['tasks.0.payload', task({ action: 'command' })],
    ['tasks.0.payload', task({ action: 'power', payload: 'explode' })],
    ['tasks.0.payload', task({ action: 'command', payload: 'say a\nop me' })],
    ['tasks.0.timeOffsetSeconds', task({ action: 'command', payload: 'say', timeOffsetSeconds: 901 })],
    ['tasks.0.timeOffsetSeconds', task({ action: 'command', payload: 'say', timeOffsetSeconds: -1 })],
    ['tasks.0.continueOnFailure', task({ action: 'command', payload: 'say', continueOnFailure: 'yes' })],
  ])('%s', async (field, body) => {
    const before = totalRequests(await panelRequests(sim));
    const res = await api.call('POST', path(), { token, body });
    expectEnvelope(res, 400, 'validation_failed');
    expect(res.body.error.details.issues.map((i: { field: string }) => i.field)).toContain(`body.${field}`);
    expect(totalRequests(await panelRequests(sim))).toBe(before);
    expect(simSchedules()).toEqual([]);
  });

  it('a malformed schedule id is 400, an id of another form 404, another account 404; none calls the panel', async () => {
    const before = totalRequests(await panelRequests(sim));
    expectEnvelope(await api.call('GET', path('/a.b'), { token }), 400, 'validation_failed');
    // Id-like but not the panel's form (a number): an unknown schedule, as any other id would be.
    expectEnvelope(await api.call('GET', path('/abc'), { token }), 404, 'not_found');
    expectEnvelope(await api.call('POST', path('/abc/run'), { token }), 404, 'not_found');
    expectEnvelope(await api.call('PATCH', path('/1'), { token, body: {} }), 400, 'validation_failed');
    const other = await customer(api, 'server-schedules-other@example.com');
    expectEnvelope(await api.call('GET', path(), { token: other.token }), 404, 'not_found');
    expectEnvelope(await api.call('POST', path(), { token: other.token, body: { name: 'x', cron: daily } }), 404, 'not_found');
    expect(totalRequests(await panelRequests(sim))).toBe(before);
  });
});

describe("the panel's own refusals", () => {
  it('a backup task on a server without backups is 422 limit_exceeded and leaves no schedule behind', async () => {
    // The operator's feature limit (what PATCH /servers/{id}/build sets), here set on the simulator directly.
    const panelServer = sim.state.serverByIdentifier(server.identifier)!;
    const had = panelServer.backup_limit;
    panelServer.backup_limit = 0;
    try {
      const { result: res, calls } = await panelCalls(() =>
        api.call('POST', path(), { token, body: { name: 'backup', cron: daily, tasks: [{ action: 'backup' }] } }),
      );
      expectEnvelope(res, 422, 'limit_exceeded');
      // create, the refused task, and the delete that undoes the create
      expect(totalRequests(calls)).toBe(3);
      expect(simSchedules()).toEqual([]);
    } finally {
      panelServer.backup_limit = had;
    }
  });

  it('run now of a schedule without tasks is 409 conflict', async () => {
    const made = await api.call('POST', path(), { token, body: { name: 'empty', cron: daily } });
    expect(made.status, made.text).toBe(201);
    expectEnvelope(await api.call('POST', path(`/${made.body.id}/run`), { token }), 409, 'conflict');
    await deleteAll();
  });
});

describe('the limit per server (schedulesPerServer)', () => {
  it('concurrent creates never pass it', async () => {
    expect((await api.call('PUT', '/v1/admin/settings', { body: { schedulesPerServer: 3 } })).status).toBe(200);
    await api.call('POST', path(), { token, body: { name: 'one', cron: daily } });
    await api.call('POST', path(), { token, body: { name: 'two', cron: daily } });
    // Five at once; one that meets the lease (409 operation_in_progress) tries again until it gets an answer.
    const create = async (i: number) => {
      for (;;) {
        const res = await api.call('POST', path(), { token, body: { name: `racer ${i}`, cron: daily } });
        if (res.status !== 409) return res;
      }
    };
    const results = await Promise.all([1, 2, 3, 4, 5].map(create));
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 201)) expectEnvelope(r, 422, 'limit_exceeded');
    expect(simSchedules()).toHaveLength(3);
    await deleteAll();
    expect((await api.call('PUT', '/v1/admin/settings', { body: { schedulesPerServer: 10 } })).status).toBe(200);
  });

  it("counts from the server's record, which the next list puts right when the panel's set differs", async () => {
    expect((await api.call('PUT', '/v1/admin/settings', { body: { schedulesPerServer: 1 } })).status).toBe(200);
    const made = await api.call('POST', path(), { token, body: { name: 'only one', cron: daily } });
    expect(made.status, made.text).toBe(201);
    // Gone from the panel behind our back (an operator in the panel's admin area): the record still counts it.
    const store = schedulesOf(sim.wings);
    store.schedules = store.schedules.filter((s) => s.id !== Number(made.body.id));
    const { result: refused, calls } = await panelCalls(() => api.call('POST', path(), { token, body: { name: 'second', cron: daily } }));
    expectEnvelope(refused, 422, 'limit_exceeded');
    expect(calls).toEqual({});
    expect((await api.call('GET', path(), { token })).body.data).toEqual([]);
    expect((await api.call('POST', path(), { token, body: { name: 'second', cron: daily } })).status).toBe(201);
    await deleteAll();
    expect((await api.call('PUT', '/v1/admin/settings', { body: { schedulesPerServer: 10 } })).status).toBe(200);
  });
});

describe('running', () => {
  beforeAll(async () => {
    expect((await api.call('POST', `/v1/servers/${server.id}/power`, { token, body: { signal: 'start' } })).status).toBeLessThan(300);
    await until(() => sim.powerState(server.identifier) === 'running');
  });

  it('run now: one panel call, the command reaches the console', async () => {
    const made = await api.call('POST', path(), {
      token,
      body: { name: 'by hand', cron: daily, active: false, tasks: [{ action: 'command', payload: 'say run now' }] },
    });
    const { result: res, calls } = await panelCalls(() => api.call('POST', path(`/${made.body.id}/run`), { token }));
    expect(res.status, res.text).toBe(202);
    expect(calls).toEqual({ [`POST /api/client/servers/${server.identifier}/schedules/${made.body.id}/execute`]: 1 });
    await schedulesOf(sim.wings).settled();
    expect(sim.commands(server.identifier)).toContain('say run now');
    expect((await activity('servers.schedules.run'))[0]?.details).toEqual({ scheduleId: made.body.id });
  });

  it('a schedule runs on the simulator at its minute, not before, and its command appears in the console', async () => {
    const made = await api.call('POST', path(), {
      token,
      body: { name: 'announce', cron: { ...daily, minute: '30', hour: '*' }, tasks: [{ action: 'command', payload: 'say half past' }] },
    });
    const at = made.body.nextRunAt as string;
    expect(new Date(at).getUTCMinutes()).toBe(30);
    await runDue(new Date(Date.parse(at) - 60_000).toISOString());
    expect(sim.commands(server.identifier)).not.toContain('say half past');
    expect((await runDue(at)).started).toHaveLength(1);
    expect(sim.console(server.identifier)).toContain('> say half past');
    const after = await api.call('GET', path(`/${made.body.id}`), { token });
    expect(after.body.lastRunAt).not.toBeNull();
    expect(Date.parse(after.body.nextRunAt)).toBe(Date.parse(at) + 3_600_000);
  });

  it('an inactive schedule and an only-when-online one on a stopped server do not run their tasks', async () => {
    await deleteAll();
    const inactive = await api.call('POST', path(), {
      token,
      body: {
        name: 'off',
        cron: { ...daily, minute: '45', hour: '*' },
        active: false,
        tasks: [{ action: 'command', payload: 'say never' }],
      },
    });
    expect((await runDue(inactive.body.nextRunAt)).started).toEqual([]);
    await api.call('POST', `/v1/servers/${server.id}/power`, { token, body: { signal: 'kill' } });
    await until(() => sim.powerState(server.identifier) === 'offline');
    const online = await api.call('POST', path(), {
      token,
      body: { name: 'online only', cron: { ...daily, minute: '50', hour: '*' }, onlyWhenOnline: true, tasks: [{ action: 'backup' }] },
    });
    const backups = sim.state.serverByIdentifier(server.identifier)!;
    expect((await runDue(online.body.nextRunAt)).started).toHaveLength(1);
    expect(schedulesOf(sim.wings).runs.at(-1)).toMatchObject({ done: [] });
    expect(sim.commands(server.identifier)).not.toContain('say never');
    expect(backups).toBeDefined();
  });
});
