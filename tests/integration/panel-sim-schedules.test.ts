import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SEED_IDS, startPanelSim } from '../../dev/panel-sim/index.ts';
import type { PanelSim } from '../../dev/panel-sim/index.ts';
import { schedulesOf } from '../../dev/panel-sim/schedules.ts';
import { waitFor } from '../helpers/until.ts';

/**
 * The simulator's schedule routes refuse what the panel refuses (pterodactyl/panel
 * ScheduleController, ScheduleTaskController, StoreScheduleRequest, StoreTaskRequest,
 * Utilities::getScheduleNextRunDate) and run schedules at their minute (ProcessRunnableCommand,
 * RunTaskJob) when a test makes that minute come with `POST /__sim/schedules/run-due`.
 */
let sim: PanelSim;
let server: { id: number; identifier: string };

async function call(key: string, method: string, path: string, body?: unknown) {
  const r = await fetch(`${sim.url}${path}`, {
    method,
    headers: { Accept: 'application/json', Authorization: `Bearer ${key}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, text, json: text ? JSON.parse(text) : null };
}
const client = (method: string, path: string, body?: unknown) =>
  call(sim.clientKey, method, `/api/client/servers/${server.identifier}${path}`, body);
const cron = { minute: '0', hour: '4', day_of_month: '*', month: '*', day_of_week: '*' };
const fields = (r: { json: { errors: Array<{ meta?: { source_field?: string } }> } }) => r.json.errors.map((e) => e.meta?.source_field);

beforeAll(async () => {
  sim = await startPanelSim({ installMs: 50, transitionMs: 10, scheduleOffsetScale: 0 });
  const alloc = await call(sim.appKey, 'GET', `/api/application/nodes/1/allocations?filter[server_id]=false&per_page=1`);
  const created = await call(sim.appKey, 'POST', '/api/application/servers', {
    name: 'sched',
    user: SEED_IDS.users.service,
    egg: SEED_IDS.eggs.paper,
    docker_image: 'ghcr.io/pterodactyl/yolks:java_21',
    startup: 'java -jar {{SERVER_JARFILE}}',
    environment: { MINECRAFT_VERSION: 'latest', SERVER_JARFILE: 'server.jar', BUILD_NUMBER: 'latest', DL_PATH: '' },
    limits: { memory: 1024, swap: 0, disk: 2048, io: 500, cpu: 100, threads: null },
    feature_limits: { databases: 0, allocations: 1, backups: 0 },
    allocation: { default: alloc.json.data[0].attributes.id },
  });
  expect(created.status, created.text).toBe(201);
  server = { id: created.json.attributes.id, identifier: created.json.attributes.identifier };
  await waitFor(
    () => sim.server(server.id)?.status,
    (s) => s === null,
  );
});
afterAll(async () => sim?.close());

describe('schedule validation (StoreScheduleRequest, getNextRunAt)', () => {
  it('422 names each field the request rules refuse', async () => {
    const r = await client('POST', '/schedules', { is_active: 'maybe', month: '*' });
    expect(r.status).toBe(422);
    expect(fields(r).sort()).toEqual(['day_of_month', 'day_of_week', 'hour', 'is_active', 'minute', 'name']);
    const long = await client('POST', '/schedules', { ...cron, name: 'x'.repeat(192) });
    expect(long.status).toBe(422);
    expect(fields(long)).toEqual(['name']);
  });

  it.each([
    ['minute 60', { minute: '60' }],
    ['hour 24', { hour: '24' }],
    ['day of month 0', { day_of_month: '0' }],
    ['month 13', { month: '13' }],
    ['day of week 8', { day_of_week: '8' }],
    ['a step of 0', { minute: '*/0' }],
    ['a backwards range', { hour: '5-2' }],
    ['a field with a space', { minute: '0 0' }],
    ['a date that never comes (30 February)', { day_of_month: '30', month: '2' }],
  ])('400 DisplayException for %s', async (_name, patch) => {
    const r = await client('POST', '/schedules', { name: 'bad', ...cron, ...patch });
    expect(r.status, r.text).toBe(400);
    expect(r.json.errors[0]).toMatchObject({
      code: 'DisplayException',
      detail: 'The cron data provided does not evaluate to a valid expression.',
    });
  });

  it('a missing month has no rule and reaches the cron helper as null: a 500', async () => {
    const { month: _month, ...noMonth } = cron;
    expect((await client('POST', '/schedules', { name: 'no month', ...noMonth })).status).toBe(500);
  });

  it('nothing was stored by the refusals', async () => {
    expect((await client('GET', '/schedules')).json.data).toEqual([]);
  });

  it('accepts names, steps, lists and ranges; next_run_at is the next matching minute (UTC)', async () => {
    const r = await client('POST', '/schedules', {
      name: 'weekday mornings',
      minute: '*/30',
      hour: '4-6',
      day_of_month: '?',
      month: 'JAN-DEC',
      day_of_week: 'MON-FRI',
      is_active: true,
    });
    expect(r.status, r.text).toBe(200);
    const next = new Date(r.json.attributes.next_run_at);
    expect(next.getTime()).toBeGreaterThan(Date.now());
    expect([0, 30]).toContain(next.getUTCMinutes());
    expect([4, 5, 6]).toContain(next.getUTCHours());
    expect([1, 2, 3, 4, 5]).toContain(next.getUTCDay());
    expect(r.json.attributes).toMatchObject({
      is_active: true,
      is_processing: false,
      only_when_online: false,
      last_run_at: null,
      relationships: { tasks: { object: 'list', data: [] } },
    });
    await client('DELETE', `/schedules/${r.json.attributes.id}`);
  });
});

describe('tasks (StoreTaskRequest, ScheduleTaskController)', () => {
  let scheduleId: number;
  beforeAll(async () => {
    scheduleId = (await client('POST', '/schedules', { name: 'tasks', ...cron, is_active: true })).json.attributes.id;
  });

  it('422 for a bad action, a missing payload (unless backup), an offset outside 0..900, a sequence below 1', async () => {
    const bad = await client('POST', `/schedules/${scheduleId}/tasks`, {
      action: 'reboot',
      time_offset: 901,
      sequence_id: 0,
      continue_on_failure: 'x',
    });
    expect(bad.status).toBe(422);
    expect(fields(bad).sort()).toEqual(['action', 'continue_on_failure', 'payload', 'sequence_id', 'time_offset']);
    const noPayload = await client('POST', `/schedules/${scheduleId}/tasks`, { action: 'command', time_offset: 0 });
    expect(noPayload.status).toBe(422);
    expect(fields(noPayload)).toEqual(['payload']);
    const negative = await client('POST', `/schedules/${scheduleId}/tasks`, { action: 'command', payload: 'say hi', time_offset: -1 });
    expect(fields(negative)).toEqual(['time_offset']);
  });

  it('a backup task needs no payload, but a server whose backup limit is 0 refuses it (403)', async () => {
    const r = await client('POST', `/schedules/${scheduleId}/tasks`, { action: 'backup', time_offset: 0 });
    expect(r.status).toBe(403);
    expect(r.json.errors[0].detail).toBe("A backup task cannot be created when the server's backup limit is set to 0.");
  });

  it('a sequence_id below the next free one shifts the later tasks up', async () => {
    const a = await client('POST', `/schedules/${scheduleId}/tasks`, { action: 'command', payload: 'say a', time_offset: 0 });
    const b = await client('POST', `/schedules/${scheduleId}/tasks`, {
      action: 'command',
      payload: 'say b',
      time_offset: 5,
      sequence_id: 99,
    });
    const c = await client('POST', `/schedules/${scheduleId}/tasks`, {
      action: 'power',
      payload: 'restart',
      time_offset: 0,
      sequence_id: 1,
    });
    expect([a.json.attributes.sequence_id, b.json.attributes.sequence_id, c.json.attributes.sequence_id]).toEqual([1, 2, 1]);
    const tasks = (await client('GET', `/schedules/${scheduleId}`)).json.attributes.relationships.tasks.data.map(
      (t: { attributes: { payload: string; sequence_id: number } }) => [t.attributes.sequence_id, t.attributes.payload],
    );
    expect(tasks).toEqual([
      [1, 'restart'],
      [2, 'say a'],
      [3, 'say b'],
    ]);
  });

  it('at the per-schedule limit (10) the next task is 400 ServiceLimitExceededException', async () => {
    for (let i = 3; i < 10; i++) {
      expect(
        (await client('POST', `/schedules/${scheduleId}/tasks`, { action: 'command', payload: `say ${i}`, time_offset: 0 })).status,
      ).toBe(200);
    }
    const r = await client('POST', `/schedules/${scheduleId}/tasks`, { action: 'command', payload: 'say 11', time_offset: 0 });
    expect(r.status).toBe(400);
    expect(r.json.errors[0].code).toBe('ServiceLimitExceededException');
  });

  it("another server's schedule and an unknown one are 404; execute without tasks is 400", async () => {
    expect((await client('GET', '/schedules/9999')).status).toBe(404);
    const empty = (await client('POST', '/schedules', { name: 'empty', ...cron })).json.attributes.id;
    const r = await client('POST', `/schedules/${empty}/execute`);
    expect(r.status).toBe(400);
    expect(r.json.errors[0].detail).toBe('Cannot process schedule for task execution: no tasks are registered.');
  });
});

describe('running at the minute (ProcessRunnableCommand, RunTaskJob)', () => {
  const runDue = async (at: string) =>
    (await (await fetch(`${sim.url}/__sim/schedules/run-due`, { method: 'POST', body: JSON.stringify({ at }) })).json()) as {
      started: number[];
    };

  it('runs a due schedule at its minute, not before; a command reaches the console; the next run moves on', async () => {
    sim.wings.power(sim.state.servers.get(server.id)!, 'start');
    await waitFor(
      () => sim.powerState(server.id),
      (p) => p === 'running',
    );
    const made = await client('POST', '/schedules', { name: 'announce', ...cron, minute: '15', hour: '*', is_active: true });
    const id = made.json.attributes.id;
    await client('POST', `/schedules/${id}/tasks`, { action: 'command', payload: 'say scheduled hello', time_offset: 0 });
    const next = made.json.attributes.next_run_at as string;
    const before = new Date(new Date(next).getTime() - 60_000).toISOString();
    expect((await runDue(before)).started).not.toContain(id);
    expect(sim.commands(server.id)).not.toContain('say scheduled hello');
    expect((await runDue(next)).started).toContain(id);
    expect(sim.commands(server.id)).toContain('say scheduled hello');
    expect(sim.console(server.id)).toContain('> say scheduled hello');
    const after = (await client('GET', `/schedules/${id}`)).json.attributes;
    expect(after.is_processing).toBe(false);
    expect(after.last_run_at).not.toBeNull();
    expect(new Date(after.next_run_at).getTime()).toBe(new Date(next).getTime() + 3_600_000);
  });

  it('an inactive schedule does not run; only_when_online skips an offline server', async () => {
    const commands = () => sim.commands(server.id).filter((c) => c === 'say skipped').length;
    const inactive = (await client('POST', '/schedules', { name: 'off', ...cron, minute: '20', hour: '*', is_active: false })).json
      .attributes;
    await client('POST', `/schedules/${inactive.id}/tasks`, { action: 'command', payload: 'say skipped', time_offset: 0 });
    expect((await runDue(inactive.next_run_at)).started).not.toContain(inactive.id);
    sim.wings.kill(sim.state.servers.get(server.id)!);
    const online = (
      await client('POST', '/schedules', { name: 'online', ...cron, minute: '25', hour: '*', is_active: true, only_when_online: true })
    ).json.attributes;
    await client('POST', `/schedules/${online.id}/tasks`, { action: 'command', payload: 'say skipped', time_offset: 0 });
    expect((await runDue(online.next_run_at)).started).toContain(online.id);
    expect(commands()).toBe(0);
    expect(schedulesOf(sim.wings).runs.at(-1)).toMatchObject({ scheduleId: online.id, done: [] });
  });

  it('execute runs now, active or not (202 [])', async () => {
    sim.wings.power(sim.state.servers.get(server.id)!, 'start');
    await waitFor(
      () => sim.powerState(server.id),
      (p) => p === 'running',
    );
    const s = (await client('POST', '/schedules', { name: 'by hand', ...cron, is_active: false })).json.attributes;
    await client('POST', `/schedules/${s.id}/tasks`, { action: 'command', payload: 'say by hand', time_offset: 0 });
    const r = await client('POST', `/schedules/${s.id}/execute`);
    expect(r.status).toBe(202);
    expect(r.json).toEqual([]);
    await schedulesOf(sim.wings).settled();
    expect(sim.commands(server.id)).toContain('say by hand');
  });
});
