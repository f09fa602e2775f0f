import type { z } from 'zod';
import type { CreateSchedule, Schedule, ScheduleList, ScheduleTaskInput, UpdateSchedule } from '../api/schemas/schedules.ts';
import { keys } from '../db/keys.ts';
import type { ServerItem } from '../db/items.ts';
import { writeIfFirst } from '../db/write.ts';
import { ApiError } from '../errors.ts';
import { errorFields, logger } from '../observability/logger.ts';
import type { PanelClient } from '../panel/client.ts';
import { PanelRequestError } from '../panel/errors.ts';
import type { Envelope, ListEnvelope } from '../panel/types.ts';
import { getSettings } from '../settings/index.ts';
import { controllable } from './control.ts';
import type { RouteContext } from './files.ts';
import { assertCustomerMayHold, withServerLease } from './lease.ts';
import { getOwnedServer } from './read.ts';

/**
 * Server schedules, through the panel's Client API on the instance's client key (its
 * ScheduleController and ScheduleTaskController): list, create (the schedule, then its tasks: the
 * panel has no bulk route), view, update, delete and run now. The panel runs them at their minute.
 *
 * Panel calls: list, view, delete and run now 1 each; create 1 + n for n tasks (a schedule with
 * one task: 2); update 1 read + 1 write of the schedule when its own fields change, plus 1 per task
 * changed, added or removed when `tasks` is given. Changes run under the server's lease.
 *
 * The limit per server is the platform setting `schedulesPerServer` (the panel has none): the ids
 * of a server's schedules are kept on its record (`scheduleIds`), read and written under the lease,
 * so two creates at once cannot pass it and checking it costs no panel call. A list that finds
 * the panel's set different puts the record right (one conditional write).
 *
 * The panel's refusals become ours: its task limit (400 ServiceLimitExceededException) and a
 * backup task on a server without backups (403) are 422 `limit_exceeded`, a cron it cannot
 * evaluate is 400 `validation_failed` on `cron`, run-now of a schedule without tasks is 409
 * `conflict`, an unknown schedule 404. A create whose task is refused deletes the schedule it made.
 */

type ScheduleRoute<Body = unknown> = RouteContext<Body> & { params: { id: string; scheduleId?: string } };
type ScheduleOut = z.infer<typeof Schedule>;
type TaskIn = z.infer<typeof ScheduleTaskInput>;

const iso = (panelTime: string | null): string | null => (panelTime === null ? null : new Date(panelTime).toISOString());

export function toSchedule(s: PanelSchedule): ScheduleOut {
  const tasks = (s.relationships?.tasks?.data ?? []).map((t) => t.attributes).sort((a, b) => a.sequence_id - b.sequence_id);
  return {
    id: String(s.id),
    name: s.name,
    cron: { minute: s.cron.minute, hour: s.cron.hour, dayOfMonth: s.cron.day_of_month, month: s.cron.month, dayOfWeek: s.cron.day_of_week },
    active: s.is_active,
    onlyWhenOnline: s.only_when_online,
    processing: s.is_processing,
    nextRunAt: iso(s.next_run_at),
    lastRunAt: iso(s.last_run_at),
    createdAt: new Date(s.created_at).toISOString(),
    tasks: tasks.map((t) => ({
      id: String(t.id),
      sequence: t.sequence_id,
      action: t.action,
      payload: t.payload ?? '',
      timeOffsetSeconds: t.time_offset,
      continueOnFailure: t.continue_on_failure,
      queued: t.is_queued,
    })),
  };
}

/** The panel's schedule refusals in our terms; anything else passes through. */
async function onSchedules<T>(call: () => Promise<T>, field = 'tasks'): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (!(err instanceof PanelRequestError)) throw err;
    const entry = err.panelErrors[0];
    const detail = entry?.detail ?? '';
    if (err.panelStatus === 404) throw new ApiError('not_found', 'No such schedule on this server');
    if (err.panelStatus === 400 && entry?.code === 'ServiceLimitExceededException') {
      throw new ApiError('limit_exceeded', 'A schedule holds at most 10 tasks', { limit: 10 });
    }
    if (err.panelStatus === 403 && /backup limit/.test(detail)) {
      throw new ApiError('limit_exceeded', 'This server has no backups (its backup limit is 0), so a schedule cannot make one', {
        limit: 0,
      });
    }
    if (err.panelStatus === 400 && /cron data/.test(detail)) {
      throw new ApiError('validation_failed', 'cron: the panel cannot evaluate these cron fields', {
        issues: [{ field: 'cron', message: 'the panel cannot evaluate these cron fields' }],
      });
    }
    if (err.panelStatus === 400 && /no tasks/.test(detail)) throw new ApiError('conflict', 'The schedule has no tasks to run');
    if (err.panelStatus === 422) {
      const message = detail || 'the panel refused a field';
      throw new ApiError('validation_failed', `${field}: ${message}`, { issues: [{ field, message }] });
    }
    throw err;
  }
}

async function underLease<T>(accountId: string, serverId: string, fn: () => Promise<T>): Promise<T> {
  await assertCustomerMayHold(await getOwnedServer(accountId, serverId));
  return withServerLease(serverId, 'schedules', fn);
}

/** The record's schedule ids become `next`, unless someone changed them since `had` was read. */
async function recordScheduleIds(item: ServerItem, had: number[] | undefined, next: number[]): Promise<boolean> {
  return writeIfFirst({
    Update: {
      Key: keys.server(item.accountId, item.serverId),
      UpdateExpression: 'SET scheduleIds = :next',
      ConditionExpression: had === undefined ? 'attribute_not_exists(scheduleIds)' : 'scheduleIds = :had',
      ExpressionAttributeValues: { ':next': next, ...(had === undefined ? {} : { ':had': had }) },
    },
  });
}

const taskBody = (task: TaskIn, sequence: number) => ({
  action: task.action,
  payload: task.action === 'backup' ? task.payload || null : task.payload,
  time_offset: task.timeOffsetSeconds ?? 0,
  sequence_id: sequence,
  continue_on_failure: task.continueOnFailure ?? false,
});

const scheduleBody = (s: { name: string; cron: ScheduleOut['cron']; active: boolean; onlyWhenOnline: boolean }) => ({
  name: s.name,
  minute: s.cron.minute,
  hour: s.cron.hour,
  day_of_month: s.cron.dayOfMonth,
  month: s.cron.month,
  day_of_week: s.cron.dayOfWeek,
  is_active: s.active,
  only_when_online: s.onlyWhenOnline,
});

/** What an activity entry says of tasks: actions only (a command may hold anything). */
const taskSummary = (tasks: { action: string }[] | undefined) => tasks?.map((t) => t.action);

/**
 * The panel's schedule ids are numbers; the route takes any id-like string so that an id of another
 * form is answered as an unknown schedule (404, after the server's own check), with no panel call.
 */
function assertPanelScheduleId(scheduleId: string): void {
  if (!/^[1-9]\d{0,9}$/.test(scheduleId)) throw new ApiError('not_found', 'No such schedule on this server');
}

async function viewOn(client: PanelClient, identifier: string, scheduleId: string): Promise<PanelSchedule> {
  assertPanelScheduleId(scheduleId);
  const got = await onSchedules(() =>
    client.serverCall<Envelope<PanelSchedule>>(identifier, 'GET', `/schedules/${scheduleId}`, { idempotent: true, expect: 'json' }),
  );
  return got.attributes;
}

/** GET schedules: one panel call (tasks come with each schedule). */
export async function listSchedules({ principal, params }: ScheduleRoute): Promise<z.infer<typeof ScheduleList>> {
  const item = await getOwnedServer(principal.accountId, params.id);
  const { server, client } = await controllable(principal.accountId, params.id);
  const list = await onSchedules(() =>
    client.serverCall<ListEnvelope<PanelSchedule>>(server.identifier, 'GET', '/schedules', { idempotent: true, expect: 'json' }),
  );
  const schedules = list.data.map((d) => d.attributes);
  const onPanel = schedules.map((s) => s.id).sort((a, b) => a - b);
  const recorded = [...(item.scheduleIds ?? [])].sort((a, b) => a - b);
  if (onPanel.join() !== recorded.join()) {
    // Conditional on what was read before the call: a create meanwhile wins, and the next list corrects again.
    await recordScheduleIds(item, item.scheduleIds, onPanel).catch((err: unknown) =>
      logger.warn('schedules.record_failed', { serverId: params.id, ...errorFields(err) }),
    );
  }
  const { schedulesPerServer } = await getSettings();
  return { data: schedules.map(toSchedule), limit: schedulesPerServer };
}

/** GET one schedule: one panel call. */
export async function getSchedule({ principal, params }: ScheduleRoute): Promise<ScheduleOut> {
  const { server, client } = await controllable(principal.accountId, params.id);
  return toSchedule(await viewOn(client, server.identifier, params.scheduleId ?? ''));
}

/**
 * POST schedules: the limit from the record, then 1 panel call for the schedule and 1 per task,
 * none retried (a second attempt would make a second one). A task the panel refuses deletes the
 * schedule again (one more call), so a refused create leaves nothing behind.
 */
export async function createSchedule({ principal, params, body, audit }: ScheduleRoute<z.infer<typeof CreateSchedule>>) {
  audit.target = `server:${params.id}`;
  audit.details = { name: body.name, tasks: taskSummary(body.tasks) };
  return underLease(principal.accountId, params.id, async () => {
    const item = await getOwnedServer(principal.accountId, params.id);
    const { schedulesPerServer } = await getSettings();
    const had = item.scheduleIds ?? [];
    if (had.length >= schedulesPerServer) {
      throw new ApiError('limit_exceeded', `This server holds its limit of ${schedulesPerServer} schedules; delete one first`, {
        limit: schedulesPerServer,
      });
    }
    const { server, client } = await controllable(principal.accountId, params.id);
    const created = await onSchedules(
      () =>
        client.serverCall<Envelope<PanelSchedule>>(server.identifier, 'POST', '/schedules', {
          json: scheduleBody({
            name: body.name,
            cron: body.cron,
            active: body.active ?? true,
            onlyWhenOnline: body.onlyWhenOnline ?? false,
          }),
          idempotent: false,
          expect: 'json',
        }),
      'cron',
    );
    const schedule = created.attributes;
    const tasks: PanelTask[] = [];
    try {
      for (const [i, task] of (body.tasks ?? []).entries()) {
        const made = await onSchedules(
          () =>
            client.serverCall<Envelope<PanelTask>>(server.identifier, 'POST', `/schedules/${schedule.id}/tasks`, {
              json: taskBody(task, i + 1),
              idempotent: false,
              expect: 'json',
            }),
          `tasks.${i}`,
        );
        tasks.push(made.attributes);
      }
    } catch (err) {
      await client
        .serverCall(server.identifier, 'DELETE', `/schedules/${schedule.id}`, { idempotent: true })
        .catch((cleanup: unknown) =>
          logger.error('schedules.cleanup_failed', { serverId: params.id, scheduleId: schedule.id, ...errorFields(cleanup) }),
        );
      throw err;
    }
    if (!(await recordScheduleIds(item, item.scheduleIds, [...had, schedule.id]))) {
      logger.warn('schedules.record_conflict', { serverId: params.id, scheduleId: schedule.id });
    }
    const out = toSchedule({
      ...schedule,
      relationships: { tasks: { object: 'list', data: tasks.map((t) => ({ object: 'schedule_task', attributes: t })) } },
    });
    audit.details = { scheduleId: out.id, name: out.name, tasks: taskSummary(out.tasks) };
    return out;
  });
}

/**
 * PATCH a schedule: the panel's update takes every field, so the schedule is read first (1 call)
 * and written when its own fields change (1 call); `tasks`, when given, replaces the list position
 * by position: 1 call per task changed, added or removed.
 */
export async function updateSchedule({ principal, params, body, audit }: ScheduleRoute<z.infer<typeof UpdateSchedule>>) {
  const scheduleId = params.scheduleId ?? '';
  audit.target = `server:${params.id}`;
  audit.details = { scheduleId, fields: Object.keys(body), ...(body.tasks ? { tasks: taskSummary(body.tasks) } : {}) };
  return underLease(principal.accountId, params.id, async () => {
    const { server, client } = await controllable(principal.accountId, params.id);
    const current = toSchedule(await viewOn(client, server.identifier, scheduleId));
    const next = {
      name: body.name ?? current.name,
      cron: body.cron ?? current.cron,
      active: body.active ?? current.active,
      onlyWhenOnline: body.onlyWhenOnline ?? current.onlyWhenOnline,
    };
    const changed =
      next.name !== current.name ||
      JSON.stringify(next.cron) !== JSON.stringify(current.cron) ||
      next.active !== current.active ||
      next.onlyWhenOnline !== current.onlyWhenOnline;
    let updated: PanelSchedule | undefined;
    if (changed) {
      const answer = await onSchedules(
        () =>
          client.serverCall<Envelope<PanelSchedule>>(server.identifier, 'POST', `/schedules/${scheduleId}`, {
            json: scheduleBody(next),
            idempotent: true,
            expect: 'json',
          }),
        'cron',
      );
      updated = answer.attributes;
    }
    if (body.tasks) {
      const wanted = body.tasks;
      for (const [i, task] of wanted.entries()) {
        const had = current.tasks[i];
        const json = taskBody(task, i + 1);
        if (!had) {
          await onSchedules(
            () =>
              client.serverCall(server.identifier, 'POST', `/schedules/${scheduleId}/tasks`, { json, idempotent: false, expect: 'json' }),
            `tasks.${i}`,
          );
        } else if (
          had.action !== task.action ||
          had.payload !== (task.payload ?? '') ||
          had.timeOffsetSeconds !== (task.timeOffsetSeconds ?? 0) ||
          had.continueOnFailure !== (task.continueOnFailure ?? false) ||
          had.sequence !== i + 1
        ) {
          await onSchedules(
            () =>
              client.serverCall(server.identifier, 'POST', `/schedules/${scheduleId}/tasks/${had.id}`, {
                json,
                idempotent: true,
                expect: 'json',
              }),
            `tasks.${i}`,
          );
        }
      }
      // Surplus tasks, last first, so the sequence of those kept never shifts.
      for (const had of current.tasks.slice(wanted.length).reverse()) {
        await onSchedules(() =>
          client.serverCall(server.identifier, 'DELETE', `/schedules/${scheduleId}/tasks/${had.id}`, { idempotent: true }),
        );
      }
    }
    // The update's answer is the schedule (tasks included) unless tasks changed after it: then one read more.
    if (body.tasks) return toSchedule(await viewOn(client, server.identifier, scheduleId));
    return updated ? toSchedule(updated) : current;
  });
}

/** DELETE a schedule (its tasks go with it): one panel call; the record forgets it. */
export async function deleteSchedule({ principal, params, audit }: ScheduleRoute) {
  const scheduleId = params.scheduleId ?? '';
  audit.target = `server:${params.id}`;
  audit.details = { scheduleId };
  return underLease(principal.accountId, params.id, async () => {
    const item = await getOwnedServer(principal.accountId, params.id);
    const { server, client } = await controllable(principal.accountId, params.id);
    assertPanelScheduleId(scheduleId);
    const forget = async () => {
      const had = item.scheduleIds;
      if (had?.includes(Number(scheduleId)))
        await recordScheduleIds(
          item,
          had,
          had.filter((id) => id !== Number(scheduleId)),
        );
    };
    try {
      await onSchedules(() => client.serverCall(server.identifier, 'DELETE', `/schedules/${scheduleId}`, { idempotent: true }));
    } catch (err) {
      if (err instanceof ApiError && err.code === 'not_found') await forget();
      throw err;
    }
    await forget();
    return { id: scheduleId, deleted: true as const };
  });
}

/** POST run: the panel's execute (its tasks start now, active or not): one panel call. */
export async function runSchedule({ principal, params, audit }: ScheduleRoute) {
  const scheduleId = params.scheduleId ?? '';
  audit.target = `server:${params.id}`;
  audit.details = { scheduleId };
  return underLease(principal.accountId, params.id, async () => {
    const { server, client } = await controllable(principal.accountId, params.id);
    assertPanelScheduleId(scheduleId);
    await onSchedules(() => client.serverCall(server.identifier, 'POST', `/schedules/${scheduleId}/execute`, { idempotent: false }));
    return { id: scheduleId, started: true as const };
  });
}

/** A task as the Client API shows it (pterodactyl/panel:app/Transformers/Api/Client/TaskTransformer.php). */
export interface PanelTask {
  id: number;
  sequence_id: number;
  action: 'power' | 'command' | 'backup';
  payload: string | null;
  time_offset: number;
  is_queued: boolean;
  continue_on_failure: boolean;
}

/** A schedule as the Client API shows it (ScheduleTransformer, tasks included by default). */
export interface PanelSchedule {
  id: number;
  name: string;
  cron: { day_of_week: string; day_of_month: string; month: string; hour: string; minute: string };
  is_active: boolean;
  is_processing: boolean;
  only_when_online: boolean;
  last_run_at: string | null;
  next_run_at: string | null;
  created_at: string;
  relationships?: { tasks?: ListEnvelope<PanelTask> };
}
