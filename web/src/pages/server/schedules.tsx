import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../../api.ts';
import { dateTime } from '../../format.ts';
import { Field } from '../../form.tsx';
import { Dialog } from '../../dialog.tsx';
import { DataTable } from '../../table.tsx';
import { Badge, Button, ErrorNotice, Loading, Notice, useAction, useLoad } from '../../ui.tsx';
import type { TabProps } from './tab.ts';

type Schedule = Schema<'Schedule'>;
type Cron = Schedule['cron'];
type TaskDraft = { action: 'command' | 'power' | 'backup'; payload: string; timeOffsetSeconds: number };

/** Presets for the cron fields (UTC, as the panel runs them); "Custom" leaves the fields as typed. */
const PRESETS: { id: string; label: string; cron: Cron }[] = [
  { id: 'daily-0400', label: 'Daily at 04:00', cron: { minute: '0', hour: '4', dayOfMonth: '*', month: '*', dayOfWeek: '*' } },
  { id: 'hourly', label: 'Every hour', cron: { minute: '0', hour: '*', dayOfMonth: '*', month: '*', dayOfWeek: '*' } },
  { id: 'quarter', label: 'Every 15 minutes', cron: { minute: '*/15', hour: '*', dayOfMonth: '*', month: '*', dayOfWeek: '*' } },
  { id: 'weekly', label: 'Sundays at 04:00', cron: { minute: '0', hour: '4', dayOfMonth: '*', month: '*', dayOfWeek: '0' } },
];
const FIELDS: { key: keyof Cron; label: string; hint: string }[] = [
  { key: 'minute', label: 'Minute', hint: '0-59' },
  { key: 'hour', label: 'Hour (UTC)', hint: '0-23' },
  { key: 'dayOfMonth', label: 'Day of month', hint: '1-31' },
  { key: 'month', label: 'Month', hint: '1-12' },
  { key: 'dayOfWeek', label: 'Day of week', hint: '0-6, 0 = Sunday' },
];
const MAX_TASKS = 10;
const newTask = (): TaskDraft => ({ action: 'command', payload: '', timeOffsetSeconds: 0 });
const cronText = (c: Cron) => `${c.minute} ${c.hour} ${c.dayOfMonth} ${c.month} ${c.dayOfWeek}`;
const presetOf = (c: Cron) => PRESETS.find((p) => cronText(p.cron) === cronText(c));
const taskText = (t: Schedule['tasks'][number]) =>
  `${t.action === 'backup' ? 'backup' : `${t.action}: ${t.payload}`}${t.timeOffsetSeconds ? ` (after ${t.timeOffsetSeconds} s)` : ''}`;

/**
 * The server's schedules: list (when, next and last run, tasks), create with cron fields (or a
 * preset) and up to 10 tasks, run now, delete. The panel runs them at their minute (UTC).
 */
export default function SchedulesTab({ server }: TabProps) {
  const id = server.id;
  const list = useLoad(() => ok(api().GET('/v1/servers/{id}/schedules', { params: { path: { id } } })), [id]);
  const [name, setName] = useState('');
  const [preset, setPreset] = useState(PRESETS[0]!.id);
  const [cron, setCron] = useState<Cron>(PRESETS[0]!.cron);
  const [onlyWhenOnline, setOnlyWhenOnline] = useState(false);
  const [tasks, setTasks] = useState<TaskDraft[]>([newTask()]);
  const [notice, setNotice] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<Schedule | null>(null);

  const setTask = (i: number, patch: Partial<TaskDraft>) => setTasks(tasks.map((t, j) => (j === i ? { ...t, ...patch } : t)));

  const create = useAction(async () => {
    const made = await ok(
      api().POST('/v1/servers/{id}/schedules', {
        params: { path: { id } },
        body: {
          name: name.trim(),
          cron,
          onlyWhenOnline,
          tasks: tasks.map((t) => ({
            action: t.action,
            ...(t.action === 'backup' && !t.payload.trim() ? {} : { payload: t.payload.trim() }),
            timeOffsetSeconds: t.timeOffsetSeconds,
          })),
        },
      }),
    );
    setName('');
    setTasks([newTask()]);
    setNotice(`Schedule ${made.name} created; next run ${dateTime(made.nextRunAt)}.`);
    await list.reload();
  });
  const run = useAction(async (s: Schedule) => {
    await ok(api().POST('/v1/servers/{id}/schedules/{scheduleId}/run', { params: { path: { id, scheduleId: s.id } } }));
    setNotice(`Schedule ${s.name} started.`);
    await list.reload();
  });
  const remove = useAction(async (s: Schedule) => {
    await ok(api().DELETE('/v1/servers/{id}/schedules/{scheduleId}', { params: { path: { id, scheduleId: s.id } } }));
    setNotice(`Schedule ${s.name} deleted.`);
    setDeleting(null);
    await list.reload();
  });

  return (
    <section aria-labelledby="schedules-title">
      <h2 id="schedules-title">Schedules</h2>
      <p class="muted">
        Restarts, console commands and backups the panel runs at set times (UTC).{' '}
        {list.data ? (
          <span data-testid="schedule-count">
            {list.data.data.length} of {list.data.limit} schedules.
          </span>
        ) : null}
      </p>
      <ErrorNotice error={run.error} onDismiss={run.clearError} />
      {notice ? <Notice kind="success">{notice}</Notice> : null}
      <Loading state={list} label="Reading the schedules…">
        {(page) => (
          <DataTable
            label="Schedules list"
            caption={`Schedules of ${server.name}`}
            class="tab-table"
            rows={page.data}
            rowKey={(s) => s.id}
            rowProps={() => ({ 'data-testid': 'schedule-row' })}
            emptyRow="No schedules yet."
            columns={[
              { header: 'Name', rowHeader: true, cell: (s) => s.name },
              {
                header: 'When (UTC)',
                cell: (s) => (
                  <>
                    {presetOf(s.cron)?.label ?? 'Custom'} <code>{cronText(s.cron)}</code>
                  </>
                ),
              },
              { header: 'Tasks', cell: (s) => (s.tasks.length ? s.tasks.map(taskText).join('; ') : <span class="muted">none</span>) },
              { header: 'Next run', class: 'when', cell: (s) => (s.active ? dateTime(s.nextRunAt) : '—') },
              { header: 'Last run', class: 'when', cell: (s) => dateTime(s.lastRunAt) },
              {
                header: 'State',
                cell: (s) =>
                  s.processing ? <Badge tone="warn">Running</Badge> : s.active ? <Badge tone="ok">Active</Badge> : <Badge>Paused</Badge>,
              },
              {
                header: 'Actions',
                cell: (s) => (
                  <div class="actions">
                    <Button
                      busy={run.busy}
                      disabled={s.tasks.length === 0}
                      onClick={() => void run.run(s)}
                      aria-label={`Run now: ${s.name}`}
                    >
                      Run now
                    </Button>
                    <Button
                      kind="danger"
                      onClick={() => {
                        remove.clearError();
                        setDeleting(s);
                      }}
                      aria-label={`Delete ${s.name}`}
                    >
                      Delete
                    </Button>
                  </div>
                ),
              },
            ]}
          />
        )}
      </Loading>

      <h3 id="schedule-new">New schedule</h3>
      <form
        aria-labelledby="schedule-new"
        onSubmit={(event) => {
          event.preventDefault();
          setNotice(null);
          void create.run();
        }}
      >
        <Field id="schedule-name" label="Name">
          {(control) => <input {...control} required maxLength={191} value={name} onInput={(e) => setName(e.currentTarget.value)} />}
        </Field>
        <Field id="schedule-preset" label="When">
          {(control) => (
            <select
              {...control}
              value={preset}
              onChange={(e) => {
                const chosen = PRESETS.find((p) => p.id === e.currentTarget.value);
                setPreset(e.currentTarget.value);
                if (chosen) setCron(chosen.cron);
              }}
            >
              {PRESETS.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.label}
                </option>
              ))}
              <option value="custom">Custom</option>
            </select>
          )}
        </Field>
        <fieldset class="inline-form">
          <legend>Cron fields (UTC)</legend>
          {FIELDS.map((f) => (
            <Field key={f.key} id={`schedule-cron-${f.key}`} label={f.label} hint={f.hint}>
              {(control) => (
                <input
                  {...control}
                  required
                  maxLength={64}
                  size={6}
                  value={cron[f.key]}
                  onInput={(e) => {
                    setCron({ ...cron, [f.key]: e.currentTarget.value });
                    setPreset('custom');
                  }}
                />
              )}
            </Field>
          ))}
        </fieldset>
        <label class="check">
          <input type="checkbox" checked={onlyWhenOnline} onChange={(e) => setOnlyWhenOnline(e.currentTarget.checked)} /> Only while the
          server is running
        </label>
        <fieldset>
          <legend>Tasks, in order</legend>
          {tasks.map((t, i) => (
            <div class="inline-form" key={i} data-testid="schedule-task">
              <Field id={`task-${i}-action`} label={`Task ${i + 1}`}>
                {(control) => (
                  <select
                    {...control}
                    value={t.action}
                    onChange={(e) => {
                      const action = e.currentTarget.value as TaskDraft['action'];
                      setTask(i, { action, payload: action === 'power' ? 'restart' : '' });
                    }}
                  >
                    <option value="command">Console command</option>
                    <option value="power">Power action</option>
                    <option value="backup">Backup</option>
                  </select>
                )}
              </Field>
              {t.action === 'power' ? (
                <Field id={`task-${i}-payload`} label="Action">
                  {(control) => (
                    <select {...control} value={t.payload} onChange={(e) => setTask(i, { payload: e.currentTarget.value })}>
                      <option value="start">Start</option>
                      <option value="stop">Stop</option>
                      <option value="restart">Restart</option>
                      <option value="kill">Kill</option>
                    </select>
                  )}
                </Field>
              ) : (
                <Field id={`task-${i}-payload`} label={t.action === 'command' ? 'Command' : 'Paths left out (optional)'}>
                  {(control) => (
                    <input
                      {...control}
                      required={t.action === 'command'}
                      maxLength={1024}
                      value={t.payload}
                      onInput={(e) => setTask(i, { payload: e.currentTarget.value })}
                    />
                  )}
                </Field>
              )}
              <Field id={`task-${i}-offset`} label="Wait before (s)" hint="0-900">
                {(control) => (
                  <input
                    {...control}
                    type="number"
                    min={0}
                    max={900}
                    value={t.timeOffsetSeconds}
                    onInput={(e) => setTask(i, { timeOffsetSeconds: Number(e.currentTarget.value) || 0 })}
                  />
                )}
              </Field>
              {tasks.length > 1 ? (
                <Button onClick={() => setTasks(tasks.filter((_, j) => j !== i))} aria-label={`Remove task ${i + 1}`}>
                  Remove
                </Button>
              ) : null}
            </div>
          ))}
          <Button disabled={tasks.length >= MAX_TASKS} onClick={() => setTasks([...tasks, newTask()])}>
            Add task
          </Button>
        </fieldset>
        <Button type="submit" kind="primary" busy={create.busy}>
          Create schedule
        </Button>
      </form>
      <ErrorNotice error={create.error} onDismiss={create.clearError} />

      <Dialog
        id="schedules-dialog"
        open={deleting !== null}
        title={`Delete ${deleting?.name ?? ''}?`}
        confirmLabel="Delete schedule"
        danger
        busy={remove.busy}
        error={remove.error}
        onConfirm={() => deleting && void remove.run(deleting)}
        onCancel={() => setDeleting(null)}
      >
        <p>The schedule and its tasks are deleted; it no longer runs.</p>
      </Dialog>
    </section>
  );
}
