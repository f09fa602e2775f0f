// Server schedules (Client API `/api/client/servers/{server}/schedules`, pterodactyl/panel:routes/api-client.php)
// and the queue worker that runs them:
// - ScheduleController + StoreScheduleRequest (also for update): `name` required|string|max:191, `is_active`
//   filled|boolean, minute/hour/day_of_month/day_of_week required|string. `month` and `only_when_online`
//   have no rule: a missing month reaches Utilities::getScheduleNextRunDate(string ...) as null, a
//   TypeError (a 500); `only_when_online` is PHP's (bool). The five fields are one cron expression
//   (dragonmantank/cron-expression); one that does not parse or never runs is 400 DisplayException
//   "The cron data provided does not evaluate to a valid expression.". next_run_at: the first matching
//   minute after now (UTC). Update resets is_processing when is_active changes.
// - ScheduleTaskController + StoreTaskRequest: action required|in:command,power,backup, payload
//   required_unless:action,backup|string|nullable, time_offset required|numeric|min:0|max:900,
//   sequence_id sometimes|required|numeric|min:1, continue_on_failure sometimes|required|boolean. At
//   `per_schedule_task_limit` (10) tasks: 400 ServiceLimitExceededException; a backup task on a server
//   whose backup_limit is 0: 403 HttpForbiddenException. A sequence_id below the next free one shifts the
//   later tasks up; update moves the tasks between; delete shifts the later ones down.
// - execute (run now): 202 `[]`; ProcessScheduleService: no tasks → 400 DisplayException.
// - ProcessRunnableCommand (every minute): active, not processing, next_run_at <= now, the server's status
//   null, at least one task. ProcessScheduleService sets is_processing and the next run, skips everything
//   (marks complete) when only_when_online and Wings says offline/stopping; RunTaskJob runs the tasks by
//   sequence, each after its time_offset (seconds): command → Wings' console, power → the signal, backup →
//   InitiateBackupService (limit and throttle applied), a failure stops the rest unless
//   continue_on_failure (and the failure is Wings'); the last task clears is_processing and sets last_run_at.
// Time: the simulator's clock is the wall clock; a test makes "a minute pass" with runDue(at) (the control
// `POST /__sim/schedules/run-due {"at": ISO}`), which runs every schedule due at `at`, as the panel's cron
// would at that minute. `offsetScale` (default 1) scales the time offsets (0: no waits).
import { PanelError, ValidationError, atom, displayError, item, list, notFound } from './http.ts';
import type { Ctx, RouteDef, SimContext } from './http.ts';
import { validate } from './rules.ts';
import type { Server } from './state.ts';
import { WingsError } from './wings.ts';
import type { PowerSignal, Wings } from './wings.ts';
import { initiateBackup } from './backups.ts';

export interface SimTask {
  id: number;
  scheduleId: number;
  sequenceId: number;
  action: 'command' | 'power' | 'backup';
  payload: string;
  timeOffset: number;
  isQueued: boolean;
  continueOnFailure: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export interface SimSchedule {
  id: number;
  serverId: number;
  name: string;
  cron: { minute: string; hour: string; day_of_month: string; month: string; day_of_week: string };
  isActive: boolean;
  isProcessing: boolean;
  onlyWhenOnline: boolean;
  lastRunAt: Date | null;
  nextRunAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface ScheduleOptions {
  /** config pterodactyl.client_features.schedules.per_schedule_task_limit */
  perScheduleTaskLimit: number;
  /** multiplies each task's time_offset (seconds → ms × 1000 × scale); 0 runs the next task at once */
  offsetScale: number;
  /** run due schedules every minute on the wall clock (the panel's `schedule:run` cron); off in tests */
  tick: boolean;
}

/** The schedules of one simulator (kept beside its Wings). */
export class SimSchedules {
  options: ScheduleOptions = { perScheduleTaskLimit: 10, offsetScale: 1, tick: false };
  schedules: SimSchedule[] = [];
  tasks: SimTask[] = [];
  /** Runs (scheduled or manual) with what each task did, newest last: for tests. */
  runs: Array<{ scheduleId: number; at: Date; manual: boolean; done: Array<{ taskId: number; action: string; ok: boolean }> }> = [];
  private nextScheduleId = 1;
  private nextTaskId = 1;
  sim: SimContext | null = null;
  private ticker: NodeJS.Timeout | null = null;

  of(server: Server): SimSchedule[] {
    return this.schedules.filter((s) => s.serverId === server.id);
  }

  tasksOf(schedule: SimSchedule): SimTask[] {
    return this.tasks.filter((t) => t.scheduleId === schedule.id).sort((a, b) => a.sequenceId - b.sequenceId);
  }

  newScheduleId(): number {
    return this.nextScheduleId++;
  }

  newTaskId(): number {
    return this.nextTaskId++;
  }

  /**
   * ProcessRunnableCommand at `at`: every active, idle schedule whose next run is due, on a server
   * whose status is null, with tasks. Answers the ids of the schedules it started; their tasks run
   * after (each after its offset), so await `settled()` to see them done.
   */
  runDue(at: Date = new Date()): number[] {
    const sim = this.sim;
    if (!sim) return [];
    const started: number[] = [];
    for (const schedule of [...this.schedules]) {
      const server = sim.state.servers.get(schedule.serverId);
      if (!server || server.status !== null) continue;
      if (!schedule.isActive || schedule.isProcessing) continue;
      if (!schedule.nextRunAt || schedule.nextRunAt.getTime() > at.getTime()) continue;
      if (this.tasksOf(schedule).length === 0) continue;
      try {
        this.process(schedule, false, at);
        started.push(schedule.id);
      } catch {
        // processSchedule logs and goes on with the next schedule.
      }
    }
    return started;
  }

  private inFlight = new Set<Promise<void>>();

  /** Resolves when every run started so far has finished its tasks. */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  /** ProcessScheduleService::handle. Throws the panel's error for a schedule without tasks. */
  process(schedule: SimSchedule, now: boolean, at: Date = new Date()): void {
    const sim = this.sim;
    if (!sim) throw new Error('schedules not registered');
    const tasks = this.tasksOf(schedule);
    const first = tasks[0];
    if (!first) throw displayError('Cannot process schedule for task execution: no tasks are registered.');
    schedule.isProcessing = true;
    schedule.nextRunAt = nextRunDate(schedule.cron, at);
    first.isQueued = true;
    const run = { scheduleId: schedule.id, at, manual: now, done: [] as Array<{ taskId: number; action: string; ok: boolean }> };
    this.runs.push(run);
    const server = sim.state.servers.get(schedule.serverId);
    const complete = () => {
      for (const t of this.tasksOf(schedule)) t.isQueued = false;
      schedule.isProcessing = false;
      schedule.lastRunAt = new Date();
    };
    if (schedule.onlyWhenOnline && server) {
      const power = sim.wings.runtime(server).power;
      if (power === 'offline' || power === 'stopping') {
        complete();
        return;
      }
    }
    const wait = (seconds: number) =>
      new Promise<void>((r) => {
        const ms = seconds * 1000 * this.options.offsetScale;
        if (ms <= 0) setImmediate(r);
        else setTimeout(r, ms).unref();
      });
    const job = (async () => {
      let task: SimTask | undefined = first;
      while (task) {
        await wait(task.timeOffset);
        // RunTaskJob: an inactive schedule (not run by hand) or a deleted one ends here.
        if (!this.schedules.includes(schedule) || (!schedule.isActive && !now)) break;
        const current = sim.state.servers.get(schedule.serverId);
        if (!current || current.status !== null) break;
        const ok = this.runTask(sim, current, task);
        run.done.push({ taskId: task.id, action: task.action, ok: ok === 'ok' });
        // A failure stops the run, unless it is Wings' (DaemonConnectionException) on a task that may fail.
        if (ok === 'refused' || (ok === 'daemon' && !task.continueOnFailure)) break;
        task.isQueued = false;
        const sequence: number = task.sequenceId;
        task = this.tasksOf(schedule).find((t) => t.sequenceId > sequence);
        if (task) task.isQueued = true;
      }
      complete();
    })();
    this.inFlight.add(job);
    void job.finally(() => this.inFlight.delete(job));
  }

  /** One task against Wings: 'daemon' when Wings refused, 'refused' when the panel did (a backup limit). */
  private runTask(sim: SimContext, server: Server, task: SimTask): 'ok' | 'daemon' | 'refused' {
    try {
      if (task.action === 'command') sim.wings.command(server, task.payload);
      else if (task.action === 'power') sim.wings.power(server, task.payload as PowerSignal);
      else initiateBackup(sim, server, { name: null, ignored: task.payload.split('\n').filter((l) => l.length > 0), locked: false }, true);
      return 'ok';
    } catch (e) {
      if (e instanceof WingsError) return 'daemon';
      if (e instanceof PanelError) return 'refused';
      throw e;
    }
  }

  startTicker(): void {
    if (this.ticker) return;
    // At the start of each wall-clock minute, like the panel's `* * * * * php artisan schedule:run`.
    const arm = () => {
      const ms = 60_000 - (Date.now() % 60_000) + 50;
      this.ticker = setTimeout(() => {
        this.runDue(new Date());
        arm();
      }, ms);
      this.ticker.unref();
    };
    arm();
  }

  stopTicker(): void {
    if (this.ticker) clearTimeout(this.ticker);
    this.ticker = null;
  }
}

const stores = new WeakMap<Wings, SimSchedules>();

/** The schedules of the simulator this Wings belongs to. */
export function schedulesOf(wings: Wings): SimSchedules {
  let store = stores.get(wings);
  if (!store) {
    store = new SimSchedules();
    stores.set(wings, store);
  }
  return store;
}

// ------------------------------------------------------------------ cron (dragonmantank/cron-expression)

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const FIELDS = [
  { min: 0, max: 59 },
  { min: 0, max: 23 },
  { min: 1, max: 31 },
  { min: 1, max: 12, names: MONTHS, offset: 1 },
  { min: 0, max: 7, names: DAYS, offset: 0 },
] as const;

class CronError extends Error {}

/** The values one field allows, or a CronError (what the library's validate() refuses). */
function expand(raw: string, position: number): Set<number> {
  const f = FIELDS[position]!;
  const names = 'names' in f ? f.names : undefined;
  const offset = 'offset' in f ? f.offset : 0;
  const value = (s: string): number => {
    const upper = s.toUpperCase();
    const named = names?.indexOf(upper as never) ?? -1;
    if (named >= 0) return named + offset;
    if (!/^\d+$/.test(s)) throw new CronError(`Invalid CRON field value ${raw} at position ${position}`);
    const n = Number(s);
    if (n < f.min || n > f.max) throw new CronError(`Invalid CRON field value ${raw} at position ${position}`);
    return n;
  };
  const out = new Set<number>();
  if ((position === 2 || position === 4) && raw === '?') {
    for (let i = f.min; i <= f.max; i++) out.add(i);
    return out;
  }
  for (const part of raw.split(',')) {
    if (part === '') throw new CronError(`Invalid CRON field value ${raw} at position ${position}`);
    const [range = '', stepText, extra] = part.split('/');
    if (extra !== undefined) throw new CronError(`Invalid CRON field value ${raw} at position ${position}`);
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText) || Number(stepText) < 1 || Number(stepText) > f.max)
        throw new CronError(`Invalid CRON field value ${raw} at position ${position}`);
      step = Number(stepText);
    }
    let from: number;
    let to: number;
    if (range === '*') [from, to] = [f.min, f.max];
    else if (range.includes('-')) {
      const [a = '', b = '', more] = range.split('-');
      if (more !== undefined) throw new CronError(`Invalid CRON field value ${raw} at position ${position}`);
      [from, to] = [value(a), value(b)];
      if (from > to) throw new CronError(`Invalid CRON field value ${raw} at position ${position}`);
    } else {
      from = value(range);
      to = stepText !== undefined ? f.max : from;
    }
    for (let i = from; i <= to; i += step) out.add(position === 4 && i === 7 ? 0 : i);
  }
  return out;
}

/**
 * Utilities::getScheduleNextRunDate: the first minute after `from` (seconds dropped) the five fields
 * match, in UTC; a CronError when they do not parse or never match (the library gives up too).
 */
export function nextRunDate(cron: SimSchedule['cron'], from: Date = new Date()): Date {
  const fields = [cron.minute, cron.hour, cron.day_of_month, cron.month, cron.day_of_week].map((f) => String(f ?? ''));
  // sprintf('%s %s %s %s %s') then split on whitespace: a field with spaces shifts the others.
  const parts = fields
    .join(' ')
    .split(/\s+/)
    .filter((p) => p.length > 0);
  if (parts.length !== 5) throw new CronError('not a valid CRON expression');
  const [minutes, hours, doms, months, dows] = parts.map((p, i) => expand(p, i)) as [
    Set<number>,
    Set<number>,
    Set<number>,
    Set<number>,
    Set<number>,
  ];
  const domAny = parts[2] === '*' || parts[2] === '?';
  const dowAny = parts[4] === '*' || parts[4] === '?';
  const start = new Date(Math.floor(from.getTime() / 60_000) * 60_000 + 60_000);
  const day = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate()));
  for (let d = 0; d < 366 * 8; d++, day.setUTCDate(day.getUTCDate() + 1)) {
    if (!months.has(day.getUTCMonth() + 1)) continue;
    const domOk = doms.has(day.getUTCDate());
    const dowOk = dows.has(day.getUTCDay());
    const dayOk = domAny && dowAny ? true : domAny ? dowOk : dowAny ? domOk : domOk || dowOk;
    if (!dayOk) continue;
    for (const h of [...hours].sort((a, b) => a - b)) {
      for (const m of [...minutes].sort((a, b) => a - b)) {
        const at = new Date(day.getTime() + h * 3_600_000 + m * 60_000);
        if (at.getTime() >= start.getTime()) return at;
      }
    }
  }
  throw new CronError('Impossible CRON expression');
}

// ------------------------------------------------------------------ routes

function transformTask(t: SimTask) {
  return item('schedule_task', {
    id: t.id,
    sequence_id: t.sequenceId,
    action: t.action,
    payload: t.payload,
    time_offset: t.timeOffset,
    is_queued: t.isQueued,
    continue_on_failure: t.continueOnFailure,
    created_at: atom(t.createdAt),
    updated_at: atom(t.updatedAt),
  });
}

const bool = (v: unknown): boolean => v === true || v === 1 || v === '1' || v === 'true' || v === 'on' || v === 'yes';
/** PHP's (bool) cast of a request value. */
const phpBool = (v: unknown): boolean =>
  !(v === null || v === undefined || v === false || v === 0 || v === '0' || v === '' || (Array.isArray(v) && v.length === 0));
/** $request->integer(key, default): intval of a present value. */
const phpInt = (v: unknown, fallback: number): number => {
  if (v === undefined || v === null) return fallback;
  const n = Number.parseInt(String(v), 10);
  return Number.isNaN(n) ? 0 : n;
};

export function scheduleRoutes(sim: SimContext, bind: (ctx: Ctx) => Server): RouteDef[] {
  const store = schedulesOf(sim.wings);
  store.sim = sim;
  const P = '/api/client/servers/{server}/schedules';

  const check = (ctx: Ctx, rules: Record<string, string>) => {
    const failures = validate(ctx.input, rules);
    if (failures.length > 0) throw new ValidationError(failures);
  };
  const transform = (s: SimSchedule) =>
    item('server_schedule', {
      id: s.id,
      name: s.name,
      cron: {
        day_of_week: s.cron.day_of_week,
        day_of_month: s.cron.day_of_month,
        month: s.cron.month,
        hour: s.cron.hour,
        minute: s.cron.minute,
      },
      is_active: s.isActive,
      is_processing: s.isProcessing,
      only_when_online: s.onlyWhenOnline,
      last_run_at: s.lastRunAt ? atom(s.lastRunAt) : null,
      next_run_at: s.nextRunAt ? atom(s.nextRunAt) : null,
      created_at: atom(s.createdAt),
      updated_at: atom(s.updatedAt),
      // tasks is a default include
      relationships: { tasks: list(store.tasksOf(s).map(transformTask)) },
    });
  /** Route model binding (by id), then the controllers' server check: 404 either way. */
  const scheduleOf = (ctx: Ctx, server: Server): SimSchedule => {
    const id = ctx.params.schedule ?? '';
    const s = /^\d+$/.test(id) ? store.schedules.find((x) => x.id === Number(id)) : undefined;
    if (!s || s.serverId !== server.id) throw notFound();
    return s;
  };
  const taskOf = (ctx: Ctx, schedule: SimSchedule): SimTask => {
    const id = ctx.params.task ?? '';
    const t = /^\d+$/.test(id) ? store.tasks.find((x) => x.id === Number(id)) : undefined;
    if (!t || t.scheduleId !== schedule.id) throw notFound();
    return t;
  };
  const scheduleRules = {
    name: 'required|string|max:191',
    is_active: 'filled|boolean',
    minute: 'required|string',
    hour: 'required|string',
    day_of_month: 'required|string',
    day_of_week: 'required|string',
  };
  /** getNextRunAt: a TypeError for a missing (null) or non-string month (a 500), else the cron's next run or 400. */
  const cronOf = (ctx: Ctx): SimSchedule['cron'] => {
    const month = ctx.input.month;
    if (typeof month !== 'string')
      throw new Error('TypeError: Utilities::getScheduleNextRunDate(): Argument #4 ($month) must be of type string');
    const cron = {
      minute: String(ctx.input.minute),
      hour: String(ctx.input.hour),
      day_of_month: String(ctx.input.day_of_month),
      month,
      day_of_week: String(ctx.input.day_of_week),
    };
    try {
      nextRunDate(cron);
    } catch (e) {
      if (e instanceof CronError) throw displayError('The cron data provided does not evaluate to a valid expression.');
      throw e;
    }
    return cron;
  };
  const taskRules = {
    action: 'required|in:command,power,backup',
    payload: 'required_unless:action,backup|string|nullable',
    time_offset: 'required|numeric|min:0|max:900',
    sequence_id: 'sometimes|required|numeric|min:1',
    continue_on_failure: 'sometimes|required|boolean',
  };
  const noBackups = (server: Server, ctx: Ctx) => {
    if (server.backup_limit === 0 && ctx.input.action === 'backup') {
      throw new PanelError(403, 'HttpForbiddenException', "A backup task cannot be created when the server's backup limit is set to 0.");
    }
  };

  return [
    {
      method: 'GET',
      path: P,
      name: 'api:client:server.schedules',
      handler: (ctx) => ({ status: 200, body: list(store.of(bind(ctx)).map(transform)) }),
    },
    {
      method: 'POST',
      path: P,
      name: 'api:client:server.schedules.store',
      handler: (ctx) => {
        const server = bind(ctx);
        check(ctx, scheduleRules);
        const cron = cronOf(ctx);
        const now = new Date();
        const s: SimSchedule = {
          id: store.newScheduleId(),
          serverId: server.id,
          name: String(ctx.input.name),
          cron,
          isActive: phpBool(ctx.input.is_active),
          isProcessing: false,
          onlyWhenOnline: phpBool(ctx.input.only_when_online),
          lastRunAt: null,
          nextRunAt: nextRunDate(cron, now),
          createdAt: now,
          updatedAt: now,
        };
        store.schedules.push(s);
        return { status: 200, body: transform(s) };
      },
    },
    {
      method: 'GET',
      path: `${P}/{schedule}`,
      name: 'api:client:server.schedules.view',
      handler: (ctx) => ({ status: 200, body: transform(scheduleOf(ctx, bind(ctx))) }),
    },
    {
      method: 'POST',
      path: `${P}/{schedule}`,
      name: 'api:client:server.schedules.update',
      handler: (ctx) => {
        const server = bind(ctx);
        const s = scheduleOf(ctx, server);
        check(ctx, scheduleRules);
        const cron = cronOf(ctx);
        const active = phpBool(ctx.input.is_active);
        if (s.isActive !== active) s.isProcessing = false;
        Object.assign(s, {
          name: String(ctx.input.name),
          cron,
          isActive: active,
          onlyWhenOnline: phpBool(ctx.input.only_when_online),
          nextRunAt: nextRunDate(cron),
          updatedAt: new Date(),
        });
        return { status: 200, body: transform(s) };
      },
    },
    {
      method: 'POST',
      path: `${P}/{schedule}/execute`,
      name: 'api:client:server.schedules.execute',
      handler: (ctx) => {
        const s = scheduleOf(ctx, bind(ctx));
        store.process(s, true);
        return { status: 202, body: [] };
      },
    },
    {
      method: 'DELETE',
      path: `${P}/{schedule}`,
      name: 'api:client:server.schedules.delete',
      handler: (ctx) => {
        const s = scheduleOf(ctx, bind(ctx));
        store.schedules = store.schedules.filter((x) => x !== s);
        store.tasks = store.tasks.filter((t) => t.scheduleId !== s.id);
        return { status: 204 };
      },
    },
    {
      method: 'POST',
      path: `${P}/{schedule}/tasks`,
      name: 'api:client:server.schedules.tasks.store',
      handler: (ctx) => {
        const server = bind(ctx);
        const s = scheduleOf(ctx, server);
        check(ctx, taskRules);
        const limit = store.options.perScheduleTaskLimit;
        const tasks = store.tasksOf(s);
        if (tasks.length >= limit) {
          throw displayError(
            `Schedules may not have more than ${limit} tasks associated with them. Creating this task would put this schedule over the limit.`,
            'ServiceLimitExceededException',
          );
        }
        noBackups(server, ctx);
        let sequenceId = (tasks[tasks.length - 1]?.sequenceId ?? 0) + 1;
        let requested = phpInt(ctx.input.sequence_id, sequenceId);
        if (requested < 1) requested = 1;
        if (requested < sequenceId) {
          for (const t of tasks) if (t.sequenceId >= requested) t.sequenceId++;
          sequenceId = requested;
        }
        const now = new Date();
        const t: SimTask = {
          id: store.newTaskId(),
          scheduleId: s.id,
          sequenceId,
          action: ctx.input.action as SimTask['action'],
          payload: typeof ctx.input.payload === 'string' ? ctx.input.payload : '',
          timeOffset: Math.trunc(Number(ctx.input.time_offset)),
          isQueued: false,
          continueOnFailure: bool(ctx.input.continue_on_failure),
          createdAt: now,
          updatedAt: now,
        };
        store.tasks.push(t);
        s.updatedAt = now;
        return { status: 200, body: transformTask(t) };
      },
    },
    {
      method: 'POST',
      path: `${P}/{schedule}/tasks/{task}`,
      name: 'api:client:server.schedules.tasks.update',
      handler: (ctx) => {
        const server = bind(ctx);
        const s = scheduleOf(ctx, server);
        const task = taskOf(ctx, s);
        check(ctx, taskRules);
        noBackups(server, ctx);
        let sequenceId = phpInt(ctx.input.sequence_id, task.sequenceId);
        if (sequenceId < 1) sequenceId = 1;
        for (const t of store.tasksOf(s)) {
          if (t === task) continue;
          if (sequenceId < task.sequenceId && t.sequenceId >= sequenceId && t.sequenceId < task.sequenceId) t.sequenceId++;
          else if (sequenceId > task.sequenceId && t.sequenceId > task.sequenceId && t.sequenceId <= sequenceId) t.sequenceId--;
        }
        Object.assign(task, {
          sequenceId,
          action: ctx.input.action,
          payload: typeof ctx.input.payload === 'string' ? ctx.input.payload : '',
          timeOffset: Math.trunc(Number(ctx.input.time_offset)),
          continueOnFailure: bool(ctx.input.continue_on_failure),
          updatedAt: new Date(),
        });
        s.updatedAt = new Date();
        return { status: 200, body: transformTask(task) };
      },
    },
    {
      method: 'DELETE',
      path: `${P}/{schedule}/tasks/{task}`,
      name: 'api:client:server.schedules.tasks.delete',
      handler: (ctx) => {
        const s = scheduleOf(ctx, bind(ctx));
        const task = taskOf(ctx, s);
        for (const t of store.tasksOf(s)) if (t.sequenceId > task.sequenceId) t.sequenceId--;
        store.tasks = store.tasks.filter((t) => t !== task);
        return { status: 204 };
      },
    },
  ];
}
