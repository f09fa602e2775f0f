import { useEffect, useState } from 'preact/hooks';
import { api, ok, type Schema } from '../api.ts';
import { cents, currency, millicents } from '../format.ts';
import { DollarsField, Field } from '../form.tsx';
import { Badge, Button, ErrorNotice, Loading, Notice, useAction, useLoad, Section } from '../ui.tsx';
import { toCents, toDollars } from './common.tsx';

/** Dollars typed into an optional amount field: '' is null (no value), else cents or an error. */
function optionalCents(text: string): { ok: true; value: number | null } | { ok: false } {
  if (text.trim() === '') return { ok: true, value: null };
  const value = toCents(text);
  return value === null ? { ok: false } : { ok: true, value };
}

/** The monthly budget: what this month cost and will cost, and the cap with what happens at it. */
export function Budget() {
  const state = useLoad(() => ok(api().GET('/v1/account/budget')));
  return (
    <Section id="budget" class="billing-section" title="Monthly budget">
      <Loading state={state} label="Loading the budget…">
        {(budget) => <BudgetBody budget={budget} onSaved={state.reload} />}
      </Loading>
    </Section>
  );
}

function BudgetBody(props: { budget: Schema<'Budget'>; onSaved: () => Promise<void> }) {
  const { budget } = props;
  const [cap, setCap] = useState(budget.monthlyCapCents === null ? '' : toDollars(budget.monthlyCapCents));
  const [action, setAction] = useState<Schema<'Budget'>['action']>(budget.action);
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    setCap(budget.monthlyCapCents === null ? '' : toDollars(budget.monthlyCapCents));
    setAction(budget.action);
  }, [budget]);
  const parsed = optionalCents(cap);
  const save = useAction(async () => {
    if (!parsed.ok) return;
    await ok(api().PUT('/v1/account/budget', { body: { monthlyCapCents: parsed.value, action } }));
    await props.onSaved();
    setSaved(true);
  });
  return (
    <>
      <dl class="props">
        <dt>Month (UTC)</dt>
        <dd>{budget.month}</dd>
        <dt>Spent so far</dt>
        <dd data-testid="budget-spent">{cents(budget.spentCents)}</dd>
        <dt>Current burn</dt>
        <dd>{millicents(budget.burnMillicentsPerHour)} an hour</dd>
        <dt>Projected month-end</dt>
        <dd>{cents(budget.projectedCents)}</dd>
        <dt>Cap</dt>
        <dd data-testid="budget-cap">
          {budget.monthlyCapCents === null ? 'No cap' : cents(budget.monthlyCapCents)}{' '}
          {budget.capReached ? <Badge tone="bad">cap reached</Badge> : null}
        </dd>
        {budget.remainingCents !== null ? (
          <>
            <dt>Remaining</dt>
            <dd>{cents(budget.remainingCents)}</dd>
          </>
        ) : null}
      </dl>
      <form
        id="budget-form"
        class="billing-form"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          setSaved(false);
          void save.run();
        }}
      >
        <DollarsField
          id="budget-cap-input"
          label={`Monthly cap in ${currency()}`}
          hint="Leave empty for no cap."
          error={parsed.ok ? undefined : 'Enter an amount like 20 or 20.50, or leave it empty.'}
          value={cap}
          onInput={setCap}
        />
        <Field id="budget-action" label="At the cap">
          {(control) => (
            <select {...control} value={action} onChange={(e) => setAction(e.currentTarget.value as Schema<'Budget'>['action'])}>
              <option value="refuse">Refuse new deploys and upsizes</option>
              <option value="suspend">Also suspend running servers until the month ends</option>
            </select>
          )}
        </Field>
        <Button type="submit" kind="primary" busy={save.busy} disabled={!parsed.ok}>
          Save budget
        </Button>
      </form>
      {saved ? <Notice kind="success">Budget saved.</Notice> : null}
      <ErrorNotice error={save.error} onDismiss={save.clearError} />
    </>
  );
}

/** The low-balance warning: the threshold in force (this account's or the platform's) and its state. */
export function Alerts() {
  const state = useLoad(() => ok(api().GET('/v1/account/alerts')));
  return (
    <Section id="alerts" class="billing-section" title="Low-balance warning">
      <Loading state={state} label="Loading the warning…">
        {(alerts) => <AlertsBody alerts={alerts} onSaved={state.reload} />}
      </Loading>
    </Section>
  );
}

function AlertsBody(props: { alerts: Schema<'BalanceAlerts'>; onSaved: () => Promise<void> }) {
  const { alerts } = props;
  const [text, setText] = useState(alerts.override === null ? '' : toDollars(alerts.override));
  const [saved, setSaved] = useState(false);
  useEffect(() => setText(alerts.override === null ? '' : toDollars(alerts.override)), [alerts]);
  const parsed = optionalCents(text);
  const save = useAction(async () => {
    if (!parsed.ok) return;
    await ok(api().PUT('/v1/account/alerts', { body: { lowBalanceThresholdCents: parsed.value } }));
    await props.onSaved();
    setSaved(true);
  });
  return (
    <>
      <p>
        A <code>balance.low</code> warning (activity log and webhooks) fires when a charge takes your balance below{' '}
        <strong data-testid="alert-threshold">{cents(alerts.lowBalanceThresholdCents)}</strong>
        {alerts.override === null ? ' (the platform default)' : ' (your own threshold)'}.{' '}
        {alerts.armed ? 'It is armed.' : 'It has fired and re-arms once your balance is back at or above the threshold.'}
      </p>
      <form
        id="alerts-form"
        class="billing-form"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          setSaved(false);
          void save.run();
        }}
      >
        <DollarsField
          id="alerts-threshold"
          label={`Warn below, in ${currency()}`}
          hint={`Leave empty for the platform default (${cents(alerts.platformThresholdCents)}).`}
          error={parsed.ok ? undefined : 'Enter an amount like 5 or 5.50, or leave it empty.'}
          value={text}
          onInput={setText}
        />
        <Button type="submit" kind="primary" busy={save.busy} disabled={!parsed.ok}>
          Save warning
        </Button>
      </form>
      {saved ? <Notice kind="success">Warning threshold saved.</Notice> : null}
      <ErrorNotice error={save.error} onDismiss={save.clearError} />
    </>
  );
}
