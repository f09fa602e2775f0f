import { useState } from 'preact/hooks';
import { api, fieldIssues, ok, type Schema } from '../../api.ts';
import { cents, mb, millicents } from '../../format.ts';
import { Field } from '../../form.tsx';
import { Button, ErrorNotice, Loading, Notice, Page, useAction, useLoad } from '../../ui.tsx';
import { getPath, SETTING_GROUPS, type SettingField, setPath } from './settings-fields.ts';

type Settings = Schema<'Settings'>;

/**
 * Platform settings (GET/PUT /v1/admin/settings): every setting with what it means, grouped. Only
 * the settings changed are sent (PUT takes any subset); the API's field errors (`details.issues`)
 * are shown under their fields; a 409 means another admin saved meanwhile: reload and redo.
 */
export default function SettingsPage() {
  const settings = useLoad(() => ok(api().GET('/v1/admin/settings')));
  const health = useLoad(() => ok(api().GET('/v1/admin/health')));
  return (
    <Page title="Settings">
      <SellerWarning issuer={health.data?.invoiceIssuer} />
      <Loading state={settings} label="Loading the settings…">
        {(s) => <SettingsForm settings={s} onSaved={() => void health.reload()} />}
      </Loading>
    </Page>
  );
}

/** Until the seller on invoices is set (GET /v1/admin/health), top-ups are refused: say so above the form. */
function SellerWarning(props: { issuer: Schema<'InvoiceIssuerHealth'> | undefined }) {
  const issuer = props.issuer;
  if (!issuer || issuer.status === 'ok') return null;
  return (
    <Notice kind="warning">
      {issuer.status === 'example'
        ? 'Invoices name the fictional seller the local stack ships. Set your legal name and address under "Invoice issuer" before charging anyone.'
        : `Top-ups are refused until the seller printed on invoices is set: ${issuer.missingFields.join(', ')} (under "Invoice issuer").`}
    </Notice>
  );
}
/** A setting's value as the form's text: a shaped one (the tax treatment) as its JSON. */
const textOf = (f: SettingField, s: Settings): string => {
  const value = getPath(s, f.path);
  return f.unit === 'json' ? JSON.stringify(value, null, 2) : String(value ?? '');
};

const initial = (s: Settings): Record<string, string> => {
  const values: Record<string, string> = {};
  for (const group of SETTING_GROUPS) for (const f of group.fields) values[f.path] = textOf(f, s);
  return values;
};

/** The form over the settings last read or saved (`base`): what differs from them is what is sent. */
function SettingsForm(props: { settings: Settings; onSaved: () => void }) {
  const [base, setBase] = useState(props.settings);
  const [values, setValues] = useState(() => initial(props.settings));
  const [saved, setSaved] = useState<string>('');
  const changed = SETTING_GROUPS.flatMap((g) => g.fields).filter((f) => values[f.path] !== textOf(f, base));
  const save = useAction(async () => {
    const body: Record<string, unknown> = {};
    for (const f of changed) setPath(body, f.path, parse(f, values[f.path] ?? ''));
    const result = await ok(api().PUT('/v1/admin/settings', { body: body as Schema<'SettingsUpdate'> }));
    setBase(result);
    setValues(initial(result));
    setSaved(`Saved ${changed.length} setting${changed.length === 1 ? '' : 's'}: ${changed.map((f) => f.label).join(', ')}.`);
    props.onSaved();
  });
  const issues = fieldIssues(save.error);
  return (
    <form
      id="settings-form"
      aria-label="Platform settings"
      onSubmit={(e) => {
        e.preventDefault();
        setSaved('');
        void save.run();
      }}
    >
      {saved ? <Notice kind="success">{saved}</Notice> : null}
      <p class="muted">
        Currency: <strong>{base.currency.toUpperCase()}</strong> (chosen at set-up; fixed once customers exist). Every change is
        audit-logged with its before and after.
      </p>
      {SETTING_GROUPS.map((group) => (
        <fieldset key={group.legend} class="card form-grid">
          <legend>{group.legend}</legend>
          {group.fields.map((f) => (
            <SettingInput
              key={f.path}
              field={f}
              value={values[f.path] ?? ''}
              issue={issues[f.path]}
              onInput={(v) => setValues({ ...values, [f.path]: v })}
            />
          ))}
        </fieldset>
      ))}
      <ErrorNotice error={save.error} />
      <div class="actions sticky-actions">
        <Button type="submit" kind="primary" busy={save.busy} disabled={changed.length === 0}>
          Save settings
        </Button>
        <Button onClick={() => setValues(initial(base))} disabled={changed.length === 0 || save.busy}>
          Undo changes
        </Button>
        <span class="muted" role="status">
          {changed.length === 0 ? 'No changes.' : `${changed.length} changed: ${changed.map((f) => f.label).join(', ')}.`}
        </span>
      </div>
    </form>
  );
}

function SettingInput(props: { field: SettingField; value: string; issue?: string; onInput: (value: string) => void }) {
  const f = props.field;
  const id = `setting-${f.path.replace(/\./g, '-')}`;
  const numeric = f.unit !== 'text' && f.unit !== 'country' && f.unit !== 'json';
  return (
    <Field
      id={id}
      label={f.label}
      hint={
        <>
          {f.description} {numeric ? <span class="shown-as">{shownAs(f, props.value)}</span> : null}
        </>
      }
      error={props.issue ? `${props.issue.length > 160 ? `${props.issue.slice(0, 160)}…` : props.issue}.` : undefined}
    >
      {(control) =>
        f.unit === 'json' ? (
          <textarea
            {...control}
            name={f.path}
            rows={6}
            spellcheck={false}
            value={props.value}
            onInput={(e) => props.onInput(e.currentTarget.value)}
          />
        ) : numeric ? (
          <input
            {...control}
            name={f.path}
            type="number"
            min={f.min}
            max={f.max}
            step={1}
            required={!f.nullable}
            value={props.value}
            onInput={(e) => props.onInput(e.currentTarget.value)}
          />
        ) : (
          <input
            {...control}
            name={f.path}
            type="text"
            maxLength={f.unit === 'country' ? 2 : 1000}
            pattern={f.unit === 'country' ? '[A-Za-z]{2}' : undefined}
            value={props.value}
            onInput={(e) => props.onInput(e.currentTarget.value)}
          />
        )
      }
    </Field>
  );
}

/** The typed value as a person reads it ("= $0.004"), or what empty means. */
function shownAs(f: SettingField, value: string): string {
  if (value.trim() === '') return f.nullable ? '(empty: not set)' : '';
  const n = Number(value);
  if (!Number.isInteger(n)) return '';
  switch (f.unit) {
    case 'millicents':
      return `= ${millicents(n)}`;
    case 'cents':
      return `= ${cents(n)}`;
    case 'mb':
      return `= ${mb(n)}`;
    case 'cpu':
      return `= ${n / 100} cores`;
    default:
      return '';
  }
}

/** The form's text as the API's value: integers for numbers, null for an empty optional field. */
function parse(f: SettingField, value: string): unknown {
  const v = value.trim();
  if (v === '') return f.nullable ? null : v;
  if (f.unit === 'text') return v;
  if (f.unit === 'country') return v.toUpperCase();
  if (f.unit === 'json') {
    try {
      return JSON.parse(v);
    } catch {
      // Sent as typed: the API names the field it cannot read.
      return v;
    }
  }
  return Number(v);
}
