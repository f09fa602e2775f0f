import * as z from 'zod';
import { checkCron } from '../cron.ts';
import { SafeText, Timestamp, Uuid, int32, text } from './common.ts';

/**
 * Server schedules through the panel (shared/servers/schedules.ts). The panel's rules are checked
 * here so bad input is our 400 naming the field, never a panel refusal: the cron fields as the panel
 * parses them (shared/api/cron.ts), at most 10 tasks (the panel's per_schedule_task_limit), each
 * an action power|command|backup with a payload unless backup, and a time offset of 0 to 900 s.
 * A schedule's id is the panel's (digits).
 */

export const ScheduleParams = z
  .object({
    id: Uuid,
    scheduleId: z
      .string()
      .max(32)
      // The panel's ids are numbers; other id-like strings pass, to be answered 404 like any unknown id.
      .regex(/^[A-Za-z0-9_-]+$/, 'must be a schedule id')
      .meta({ description: "The schedule's id (the panel's, a number)." }),
  })
  .strict();

const CronField = z.string().trim().min(1).max(64);
export const Cron = z
  .object({
    minute: CronField.meta({ description: '0-59, e.g. `0`, `*/15`, `0,30`.' }),
    hour: CronField.meta({ description: '0-23.' }),
    dayOfMonth: CronField.meta({ description: '1-31 (`*` any).' }),
    month: CronField.meta({ description: '1-12 or JAN-DEC.' }),
    dayOfWeek: CronField.meta({ description: '0-7 (0 and 7: Sunday) or SUN-SAT.' }),
  })
  .strict()
  .superRefine((cron, ctx) => {
    const checked = checkCron(cron);
    if ('field' in checked) ctx.addIssue({ code: 'custom', path: [checked.field], message: checked.message });
  })
  .meta({ id: 'Cron', description: 'Five cron fields, UTC.' });

export const TaskAction = z.enum(['power', 'command', 'backup']);
const POWER_SIGNALS = ['start', 'stop', 'restart', 'kill'];
/** One console line (as POST /command takes it). */
const OneLine = /^[^\u0000-\u001f\u007f-\u009f\u2028\u2029]*$/;

export const ScheduleTaskInput = z
  .object({
    action: TaskAction,
    payload: z
      .string()
      .trim()
      .max(1024)
      .optional()
      .meta({ description: 'command: the console line; power: start|stop|restart|kill; backup: paths left out, one per line (optional).' }),
    timeOffsetSeconds: int32(0, 900).optional().meta({ description: 'Wait after the task before (0-900 s, default 0).' }),
    continueOnFailure: z.boolean().optional().meta({ description: 'Go on with the next task when this one fails (default false).' }),
  })
  .strict()
  .superRefine((task, ctx) => {
    const payload = task.payload ?? '';
    if (task.action !== 'backup' && payload === '') {
      ctx.addIssue({ code: 'custom', path: ['payload'], message: `is required for a ${task.action} task` });
    } else if (task.action === 'power' && !POWER_SIGNALS.includes(payload)) {
      ctx.addIssue({ code: 'custom', path: ['payload'], message: `must be one of ${POWER_SIGNALS.join(', ')} for a power task` });
    } else if (task.action === 'command' && !OneLine.test(payload)) {
      ctx.addIssue({ code: 'custom', path: ['payload'], message: 'must be a single line without control characters' });
    }
  })
  .meta({ id: 'ScheduleTaskInput' });

/** The panel's per_schedule_task_limit (config pterodactyl.client_features.schedules, default 10). */
export const MAX_TASKS = 10;

export const CreateSchedule = z
  .object({
    name: SafeText.trim().min(1).max(191),
    cron: Cron,
    active: z.boolean().optional().meta({ description: 'Default true.' }),
    onlyWhenOnline: z.boolean().optional().meta({ description: 'Run only while the server is starting or running (default false).' }),
    tasks: z.array(ScheduleTaskInput).max(MAX_TASKS).optional().meta({ description: 'In order, at most 10.' }),
  })
  .strict()
  .meta({ id: 'CreateSchedule' });

export const UpdateSchedule = z
  .object({
    name: SafeText.trim().min(1).max(191).optional(),
    cron: Cron.optional(),
    active: z.boolean().optional(),
    onlyWhenOnline: z.boolean().optional(),
    tasks: z.array(ScheduleTaskInput).max(MAX_TASKS).optional().meta({ description: 'Replaces the task list when given.' }),
  })
  .strict()
  .refine((v) => Object.keys(v).length > 0, 'nothing to change')
  .meta({ id: 'UpdateSchedule' });

export const ScheduleTask = z
  .object({
    id: z.string().max(10),
    sequence: int32(1, 1000),
    action: TaskAction,
    payload: text(1024),
    timeOffsetSeconds: int32(0, 900),
    continueOnFailure: z.boolean(),
    queued: z.boolean(),
  })
  .meta({ id: 'ScheduleTask' });

export const Schedule = z
  .object({
    id: z.string().max(10),
    name: text(191),
    cron: z
      .object({ minute: text(64), hour: text(64), dayOfMonth: text(64), month: text(64), dayOfWeek: text(64) })
      .meta({ id: 'CronFields' }),
    active: z.boolean(),
    onlyWhenOnline: z.boolean(),
    processing: z.boolean(),
    nextRunAt: Timestamp.nullable(),
    lastRunAt: Timestamp.nullable(),
    createdAt: Timestamp,
    tasks: z.array(ScheduleTask).max(MAX_TASKS),
  })
  .meta({ id: 'Schedule' });

export const ScheduleList = z
  .object({
    data: z.array(Schedule).max(100),
    limit: int32(0, 100).meta({ description: 'Schedules this server may hold (the setting `schedulesPerServer`).' }),
  })
  .meta({ id: 'ScheduleList' });

export const ScheduleRun = z.object({ id: z.string().max(10), started: z.literal(true) }).meta({ id: 'ScheduleRun' });
export const DeletedSchedule = z.object({ id: z.string().max(10), deleted: z.literal(true) }).meta({ id: 'DeletedSchedule' });
